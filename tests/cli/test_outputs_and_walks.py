"""Issue 20's hostile inputs beyond single documents: outputs that cannot be written, outputs
that name an input, directory trees that are deep, huge or change under the walk, and the
NodePool whose EC2NodeClass is not in the input. Each is one line (or one warning) and an exit
status a script can rely on, never exit 70.

In-process cases call the console script's `main`; the full-disk cases run `python -m gpucap`
with stdout on `/dev/full`, since only a real file descriptor fails the way a full disk does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpucap.apis import limits, reading
from gpucap.apis.references import missing_node_classes
from gpucap.apis.serde import load_paths
from gpucap.cli import main as cli_main
from tests.builders import edit, nodeclass, nodepool, pod, to_yaml
from tests.fuzz.driver import remove_tree

SRC = Path(__file__).resolve().parents[2] / "src"
STORIES = Path(__file__).resolve().parents[1] / "sim" / "stories"
SPOT_ICE = STORIES / "spot-ice.yaml"
STORY_FILES = (
    "spot-ice.yaml",
    "nodeclass.yaml",
    "nodepool.yaml",
    "device-plugin.yaml",
    "vllm.yaml",
)
DEV_FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")


def gpucap(args: list[str], capsys: Any, monkeypatch: Any) -> tuple[int, str, list[str]]:
    """The console script in-process: (exit status, stdout, stderr lines)."""
    monkeypatch.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    code = exit_info.value.code
    captured = capsys.readouterr()
    return (code if isinstance(code, int) else 0), captured.out, captured.err.splitlines()


def run_gpucap(
    args: list[str], *, stdout: Any = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "gpucap", *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def story_copy(tmp_path: Path) -> Path:
    """The spot-ice story and the manifests it names, copied where a run may write."""
    for name in STORY_FILES:
        shutil.copy(STORIES / name, tmp_path / name)
    return tmp_path / "spot-ice.yaml"


@pytest.fixture
def deep_tree(tmp_path: Path) -> Iterator[Callable[[Path, int], Path]]:
    """Make `root/d/d/.../d` `depth` levels down (a level at a time: `os.makedirs` recurses),
    and remove it afterwards without recursion: pytest's own clean-up of old temporary
    directories would otherwise meet it later and fail (Python 3.11's `shutil.rmtree`)."""
    made: list[Path] = []

    def make(root: Path, depth: int) -> Path:
        made.append(root)
        folder = root
        folder.mkdir()
        for _ in range(depth):
            folder /= "d"
            folder.mkdir()
        return folder

    yield make
    for root in made:
        remove_tree(root)


# ---- outputs that cannot be written --------------------------------------------------------------
@needs_dev_full
@pytest.mark.parametrize(
    "args",
    [
        ["validate", str(STORIES / "vllm.yaml")],
        ["plan", str(STORIES / "nodepool.yaml"), str(STORIES / "vllm.yaml"), "-o", "json"],
        ["simulate", str(SPOT_ICE), "-o", "json"],
    ],
    ids=["validate", "plan", "simulate"],
)
def test_stdout_on_a_full_disk_is_one_error_line_and_exit_2(args: list[str]) -> None:
    with DEV_FULL.open("w") as full:
        done = run_gpucap(args, stdout=full)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if not line.startswith("warning: ")]
    assert errors == ["error: cannot write the output: No space left on device"]


@needs_dev_full
def test_events_on_a_full_disk_is_one_error_line_naming_the_option(
    capsys: Any, monkeypatch: Any
) -> None:
    code, _, err = gpucap(
        ["simulate", str(SPOT_ICE), "--events", str(DEV_FULL)], capsys, monkeypatch
    )
    assert (code, err) == (
        2,
        [f"error: --events {DEV_FULL}: cannot write: No space left on device"],
    )


def test_a_closed_pipe_ends_the_run_quietly() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with subprocess.Popen(
        [sys.executable, "-m", "gpucap", "simulate", str(SPOT_ICE), "-o", "json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.close()  # the reader goes away before anything is read (`| head -c 0`)
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    assert b"internal error" not in err
    assert b"Traceback" not in err
    assert code in (0, 1)  # 1: click's status for a closed pipe, 0: all written before


# ---- outputs that name an input ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("option", "target"),
    [
        ("--events", "spot-ice.yaml"),
        ("--events", "vllm.yaml"),
        ("--report", "spot-ice.yaml"),
        ("--report", "nodepool.yaml"),
    ],
)
def test_an_output_naming_an_input_of_the_scenario_is_refused_before_any_work(
    option: str, target: str, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    scenario = story_copy(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in STORY_FILES}
    code, out, err = gpucap(
        ["simulate", str(scenario), option, str(tmp_path / target)], capsys, monkeypatch
    )
    assert (code, out) == (2, "")
    assert err == [
        f"error: {option} {tmp_path / target}: is one of the inputs ({tmp_path / target}); "
        "writing it would overwrite it: give another file name"
    ]
    assert {name: (tmp_path / name).read_bytes() for name in STORY_FILES} == before


def test_an_output_naming_an_input_through_a_link_is_refused_too(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    scenario = story_copy(tmp_path)
    link = tmp_path / "events.jsonl"
    link.symlink_to(scenario)
    code, _, err = gpucap(["simulate", str(scenario), "--events", str(link)], capsys, monkeypatch)
    assert code == 2
    assert err[0].startswith(f"error: --events {link}: is one of the inputs ({scenario})")
    assert scenario.read_bytes() == (STORIES / "spot-ice.yaml").read_bytes()


def test_events_and_report_naming_one_file_are_refused(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    out_file = str(tmp_path / "run.out")
    code, _, err = gpucap(
        ["simulate", str(SPOT_ICE), "--events", out_file, "--report", out_file], capsys, monkeypatch
    )
    assert (code, err) == (2, [f"error: --events {out_file}: --report names the same file"])


def test_plan_report_naming_an_input_file_or_a_manifest_in_an_input_directory_is_refused(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    story_copy(tmp_path)
    for args, target in (
        ([str(tmp_path / "nodepool.yaml"), str(tmp_path / "vllm.yaml")], tmp_path / "vllm.yaml"),
        ([str(tmp_path)], tmp_path / "nodepool.yaml"),
    ):
        code, _, err = gpucap(["plan", *args, "--report", str(target)], capsys, monkeypatch)
        assert code == 2
        assert err == [
            f"error: --report {target}: is one of the inputs ({args[-1]}); writing it would "
            "overwrite it: give another file name"
        ]
    assert (tmp_path / "vllm.yaml").read_bytes() == (STORIES / "vllm.yaml").read_bytes()


def test_an_output_that_is_not_an_input_is_written(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    scenario = story_copy(tmp_path)
    events = tmp_path / "events.jsonl"
    code, _, err = gpucap(["simulate", str(scenario), "--events", str(events)], capsys, monkeypatch)
    assert (code, err) == (0, [])
    assert events.read_text(encoding="utf-8").count("\n") > 10


# ---- directory walks -----------------------------------------------------------------------------
def test_a_directory_a_thousand_levels_deep_is_walked(
    tmp_path: Path, deep_tree: Callable[[Path, int], Path], capsys: Any, monkeypatch: Any
) -> None:
    bottom = deep_tree(tmp_path / "deep", 1000)
    (bottom / "pod.yaml").write_text(to_yaml(pod()), encoding="utf-8")
    code, out, err = gpucap(["validate", str(tmp_path / "deep")], capsys, monkeypatch)
    assert (code, err) == (0, [])
    assert out.splitlines()[-1] == "1 object valid, 0 warning(s)"


def test_a_scenario_naming_a_directory_a_thousand_levels_deep_loads_it(
    tmp_path: Path, deep_tree: Callable[[Path, int], Path], capsys: Any, monkeypatch: Any
) -> None:
    scenario = story_copy(tmp_path)
    bottom = deep_tree(tmp_path / "deep", 1000)
    for name in STORY_FILES[1:]:
        (tmp_path / name).rename(bottom / name)
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(
        text.replace("[nodeclass.yaml, nodepool.yaml, device-plugin.yaml, vllm.yaml]", "[deep]"),
        encoding="utf-8",
    )
    code, out, err = gpucap(["simulate", str(scenario)], capsys, monkeypatch)
    assert (code, err) == (0, [])
    assert "Pending at the end: none" in out


def test_walking_more_entries_than_the_limit_is_one_line(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(limits, "MAX_DIRECTORY_ENTRIES", 50)
    for i in range(60):
        (tmp_path / f"f{i}.txt").write_text("", encoding="utf-8")
    code, _, err = gpucap(["validate", str(tmp_path)], capsys, monkeypatch)
    assert code == 2
    assert err[0] == (
        f"error: {tmp_path}: more than 50 files and directories to look through in all "
        "(gpucap's limit for one run)"
    )


def test_a_scenario_naming_a_tree_past_the_limit_is_one_line(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(limits, "MAX_DIRECTORY_ENTRIES", 50)
    scenario = story_copy(tmp_path)
    (tmp_path / "many").mkdir()
    for i in range(60):
        (tmp_path / "many" / f"f{i}.txt").write_text("", encoding="utf-8")
    text = scenario.read_text(encoding="utf-8").replace("device-plugin.yaml, vllm.yaml", "many")
    scenario.write_text(text, encoding="utf-8")
    code, _, err = gpucap(["simulate", str(scenario)], capsys, monkeypatch)
    assert code == 2
    assert err == [
        f"error: {scenario}: manifests[2]: {tmp_path}/many: more than 50 files and directories "
        "to look through in all (gpucap's limit for one run)"
    ]


def test_a_directory_that_vanishes_during_the_walk_is_one_line(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "pod.yaml").write_text(to_yaml(pod()), encoding="utf-8")
    real = os.scandir

    def vanishing(path: Any) -> Any:
        if Path(path) == tmp_path / "a":
            monkeypatch.setattr(reading.os, "scandir", real)  # rmtree lists directories too
            shutil.rmtree(tmp_path / "a")
        return real(path)

    monkeypatch.setattr(reading.os, "scandir", vanishing)
    code, _, err = gpucap(["validate", str(tmp_path)], capsys, monkeypatch)
    assert code == 2
    assert err[0] == (
        f"error: {tmp_path}: cannot read the directory {tmp_path / 'a'}: No such file or directory"
    )


def test_a_walk_finds_what_rglob_found_symlinked_files_included_linked_folders_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.YAML").write_text("", encoding="utf-8")
    (tmp_path / "b.json").write_text("", encoding="utf-8")
    (tmp_path / "c.txt").write_text("", encoding="utf-8")
    (tmp_path / "link.yml").symlink_to(tmp_path / "b.json")
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / ".hidden.yaml").write_text("", encoding="utf-8")
    found = sorted(reading.manifest_files(str(tmp_path)))
    expected = sorted(
        f
        for f in tmp_path.rglob("*")
        if f.suffix.lower() in reading.MANIFEST_SUFFIXES and f.is_file()
    )
    assert found == expected
    assert [f.name for f in found] == [".hidden.yaml", "b.json", "link.yml", "a.YAML"]


# ---- a NodePool whose EC2NodeClass is not in the input ------------------------------------------
def misspelt_pool() -> dict[str, Any]:
    return edit(nodepool(), "spec.template.spec.nodeClassRef.name", "gpus")


def test_validate_warns_of_a_nodepool_naming_a_node_class_the_input_lacks(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    f = tmp_path / "pool.yaml"
    f.write_text(to_yaml(misspelt_pool(), nodeclass("gpu")), encoding="utf-8")
    code, out, err = gpucap(["validate", str(f)], capsys, monkeypatch)
    assert code == 0
    assert err == [
        f"warning: {f}[0] NodePool/gpu: spec.template.spec.nodeClassRef.name: EC2NodeClass "
        "'gpus' is not in the input, which has 'gpu'; did you mean 'gpu'? (Karpenter keeps a "
        "NodePool whose node class is not found NotReady)"
    ]
    assert out.splitlines()[-1] == "2 objects valid, 1 warning(s)"


def test_a_nodepool_alone_is_not_warned_of_its_node_class_may_be_in_the_cluster(
    tmp_path: Path,
) -> None:
    f = tmp_path / "pool.yaml"
    f.write_text(to_yaml(misspelt_pool()), encoding="utf-8")
    assert missing_node_classes(load_paths([str(f)]).objects.items) == []


def test_a_nodepool_naming_a_node_class_of_the_input_is_not_warned(tmp_path: Path) -> None:
    f = tmp_path / "pool.yaml"
    f.write_text(to_yaml(nodepool(), nodeclass("gpu")), encoding="utf-8")
    assert missing_node_classes(load_paths([str(f)]).objects.items) == []
