"""The fuzzer in CI: a fixed, seeded case list must keep the README's promise (issue 9).

`test_hostile_input_keeps_the_promise` runs `CI_CASES` cases of seed `CI_SEED` (about a minute on
a 2-core machine; the list is the same on every run) through every command and fails with each
distinct broken promise and its shrunk reproducer. The other tests check the fuzzer itself: that
its cases are deterministic, that its bounds catch a hang and a memory blow-up, that its judge
flags each broken promise, and that every oracle mutation has a seed to apply to.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.fuzz.driver import (
    Case,
    Command,
    Failure,
    Fuzzer,
    Materialized,
    Outcome,
    commands_for,
    judge,
    load_cli,
    make_case,
    reproducer_text,
    run_gpucap,
    write_reproducer,
)
from tests.fuzz.mutations import ORACLES, Raw, TreeStep, serialize
from tests.fuzz.seeds import all_seeds

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the driver forks")

CI_SEED = 9
CI_CASES = 60  # 48 s on main (2 cores shared; one case hangs its 10 s bound), about a minute
SHRINK_FINDINGS = 5  # shrink (and print) at most this many distinct failures


def test_hostile_input_keeps_the_promise(tmp_path: Path) -> None:
    fuzzer = Fuzzer(seed=CI_SEED)
    fuzzer.run(count=CI_CASES)
    report = []
    for n, finding in enumerate(
        sorted(fuzzer.findings.values(), key=lambda f: f.failure.signature)
    ):
        case = fuzzer.shrink(finding, max_runs=15) if n < SHRINK_FINDINGS else finding.case
        write_reproducer(finding, case, tmp_path)
        report.append(
            f"{finding.failure.signature} ({finding.count}x)\n{reproducer_text(case, finding.command, 300)}"
        )
    assert fuzzer.cases > CI_CASES * 0.9, (
        "most cases must run (oracle cases on invalid seeds are skipped)"
    )
    assert not fuzzer.findings, f"{len(report)} broken promise(s):\n\n" + "\n\n".join(report)


def test_the_same_seed_gives_the_same_cases() -> None:
    first = [make_case(3, i).describe() for i in range(30)]
    assert first == [make_case(3, i).describe() for i in range(30)]
    assert first != [make_case(4, i).describe() for i in range(30)]


def test_cases_cover_every_role_and_oracles() -> None:
    cases = [make_case(CI_SEED, i) for i in range(200)]
    assert {c.seed.role for c in cases} == {
        "manifests",
        "catalog",
        "prices",
        "lint-config",
        "scenario",
        "reservations",
        "sweep",
    }
    assert sum(c.oracle is not None for c in cases) == 50


def test_every_oracle_applies_to_some_seed() -> None:
    seeds = [s for s in all_seeds() if s.role in ("manifests", "scenario")]
    for oracle in ORACLES:
        assert any(
            oracle.steps(i, doc) for s in seeds for f in s.files for i, doc in enumerate(f.docs)
        ), oracle.name


def test_raw_values_are_written_verbatim() -> None:
    docs = [{"spec": {"replicas": Raw("9" * 5001), "nested": Raw("[" * 3 + "]" * 3)}}]
    text = serialize("yaml", docs).decode()
    assert "replicas: " + "9" * 5001 in text
    assert "nested: [[[]]]" in text
    assert '"replicas": ' + "9" * 5001 in serialize("json", docs).decode()


def test_tree_steps_skip_paths_that_are_gone() -> None:
    docs = [{"a": {"b": 1}}]
    assert TreeStep("key", "delete", (0, "x", "y")).apply(docs) == docs
    assert TreeStep("key", "rename", (0, "a"), "A").apply(docs) == [{"A": {"b": 1}}]
    copies = TreeStep("duplication", "copy-doc", (0,), 3).apply(docs)
    assert len(copies) == 4


def _outcome(
    code: int | None = 0, stdout: bytes = b"", stderr: bytes = b"", **kw: object
) -> Outcome:
    fields: dict[str, object] = {"signal": None, "hang": None, "where": None, "seconds": 0.1}
    fields.update(kw)
    return Outcome(code=code, stdout=stdout, stderr=stderr, **fields)  # type: ignore[arg-type]


VALIDATE = Command(("validate", "x.yaml"))


@pytest.mark.parametrize(
    ("outcome", "oracle", "kind"),
    [
        (_outcome(0, b"ok\n"), None, None),
        (_outcome(2, stderr=b"error: x.yaml[0] Pod/a: spec: bad\n"), "name-dots", None),
        (_outcome(70, stderr=b"gpucap: internal error: ValueError: x\n"), None, "internal-error"),
        (_outcome(3), None, "exit-code"),
        (_outcome(None, signal=9), None, "crash"),
        (_outcome(1, hang="gpucap/apis/quantity.py:1 in parse"), None, "hang"),
        (_outcome(70, stderr=b"gpucap: internal error: MemoryError: \n"), None, "memory"),
        (_outcome(2, stderr=b"error: Pod/\x1b[2J: bad\n"), None, "control-chars"),
        (_outcome(0, stdout="Pod/\u202eexe\n".encode()), None, "control-chars"),
        (_outcome(2, stderr=b"error: Pod/a\nb: bad\n"), None, "stray-stderr"),
        (
            _outcome(2, stderr=b"Usage: gpucap plan\n\nError: Missing option\n"),
            None,
            "stray-stderr",
        ),
        (_outcome(2, stderr=b""), None, "no-error-line"),
        (_outcome(0), "container-port-70000", "accepted-invalid"),
    ],
)
def test_the_judge_names_each_broken_promise(
    outcome: Outcome, oracle: str | None, kind: str | None
) -> None:
    failure = judge(outcome, VALIDATE, oracle)
    assert (failure.kind if failure else None) == kind


def test_render_may_print_the_users_bytes() -> None:
    # `render` is byte for byte (for kubectl apply -f -): only its stderr must be safe.
    out = _outcome(0, stdout="name: \u202eexe\n".encode())
    assert judge(out, Command(("render", "x.yaml")), None) is None


def _sleep() -> None:
    time.sleep(30)


def _allocate() -> None:
    b"x" * (8 << 30)  # more than the headroom


def test_a_hang_is_stopped_at_the_bound_and_located(tmp_path: Path) -> None:
    load_cli()  # as the fuzzer does before forking (the child only runs)
    start = time.monotonic()
    o = run_gpucap(_sleep, VALIDATE, tmp_path, bound=1)
    assert time.monotonic() - start < 10
    failure = judge(o, VALIDATE, None)
    assert failure is not None
    assert failure.kind == "hang"
    assert "_sleep" in failure.detail


def test_a_memory_blow_up_is_stopped_by_the_limit(tmp_path: Path) -> None:
    load_cli()
    o = run_gpucap(_allocate, VALIDATE, tmp_path, bound=10)
    assert judge(o, VALIDATE, None) == Failure(
        "memory",
        f"MemoryError at {Path(__file__).name}:{_allocate.__code__.co_firstlineno + 1} in _allocate",
    )


def test_the_workshop_keeps_the_promise_unmutated() -> None:
    fuzzer = Fuzzer(seed=0)
    results = fuzzer.execute(Case(0, all_seeds()[0], 0, ()))
    # validate, plan x3, lint x3, render, plan --optimal (no stdin: several files)
    assert len(results) == 9
    assert [f for *_, f in results] == [None] * 9
    by_name = {cmd.name: o for _, cmd, o, _ in results}
    assert by_name["validate"].code == 0
    assert by_name["lint"].code in (0, 1)
    assert yaml.safe_load(by_name["plan -o json"].stdout)["summary"]["nodeClaims"] == 1


def test_the_scenario_seed_is_simulated_and_keeps_the_promise_unmutated() -> None:
    fuzzer = Fuzzer(seed=0)
    scenario = next(s for s in all_seeds() if s.role == "scenario")
    results = fuzzer.execute(Case(0, scenario, 0, ()))
    assert [f for *_, f in results] == [None] * len(results)
    by_name = {cmd.name: o for _, cmd, o, _ in results}
    simulated = by_name["simulate --events"]
    assert simulated.code == 0
    # The seed's story: the ICE window in one zone, the fallback to another and the interruption.
    assert "spot g5.xlarge in us-east-1a unavailable → spot g5.xlarge in us-east-1b" in (
        simulated.stdout.decode()
    )
    assert "spot interruption warning for gpu-1" in simulated.stdout.decode()


def test_simulate_is_not_run_on_pod_counts_that_are_minutes_of_simulation() -> None:
    scenario = next(s for s in all_seeds() if s.role == "scenario")
    many = Case(0, scenario, 0, (TreeStep("workload-size", "set", (0, "spec", "seed"), 1),))
    m = Materialized(("scenario.yaml",), "scenario.yaml", "default/vllm-0")
    assert "simulate --events" not in [c.name for c in commands_for(many, m)]
    plain = Case(0, scenario, 0, (TreeStep("number-edge", "set", (0, "spec", "seed"), 1),))
    assert "simulate --events" in [c.name for c in commands_for(plain, m)]
