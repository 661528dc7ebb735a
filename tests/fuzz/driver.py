"""The fuzzer's driver and oracle: cases -> files -> every command -> the README's promise.

A `Case` is a seed, the file of it that is mutated, and the mutation steps (or an oracle
mutation). `make_case(seed, i)` derives case `i` from `random.Random(f"...:{seed}:{i}")` alone, so
a run is a deterministic case list however long it lasts. For each case the driver writes the
files into a scratch directory and runs each command the seed's role calls for (`validate`,
`validate -`, `plan`, `plan -o json`, `plan --explain POD`, `lint` text/json/sarif, `render`,
`plan --optimal`; `plan --catalog`/`--prices`; `lint --config`; `simulate --events` for a
Scenario; `sweep` table and JSON for a Sweep) through the
real entry point (`gpucap.cli.main:main`), in a forked child of this process (the modules and the bundled catalog
are loaded once, before the fork), with:

- a wall-time bound (`faulthandler.dump_traceback_later`, which also says where it hung, and
  `signal.alarm` as a backstop),
- a memory bound (`RLIMIT_AS`: the process's size at the fork plus `MEMORY_HEADROOM`),
- stdout and stderr captured as the terminal would get them (UTF-8, strict on stdout).

`judge` checks the promise of the README ("Errors") and the issue: exit 0, 1 or 2; never an
internal error (exit 70), a traceback, a hang or a MemoryError; each stderr line is one
`error:`/`warning:` line; no raw control character or bidi override on stdout or stderr; and an
oracle mutation exits 2 from `validate`. `shrink` then undoes steps, drops files, documents and
keys while the same failure remains, and `write_reproducer` leaves the result on disk.

Called by `tests/fuzz/test_fuzz.py` (a fixed case count in CI) and `bench/fuzz.py` (minutes).
POSIX only (fork, rlimits).
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import functools
import io
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.mutations import (
    ORACLES,
    FileStep,
    Step,
    TreeStep,
    apply_steps,
    draw_steps,
    get,
    pod_spec_path,
    serialize,
    walk,
)
from tests.fuzz.seeds import (
    SCENARIO_FILE,
    SWEEP_FILE,
    WORKSHOP,
    Seed,
    SeedFile,
    all_seeds,
    workshop_files,
)

__all__ = [
    "BOUND_SECONDS",
    "Case",
    "Failure",
    "Fuzzer",
    "Outcome",
    "commands_for",
    "judge",
    "load_cli",
    "make_case",
    "run_gpucap",
]

BOUND_SECONDS = 10  # a real command takes well under a second; ten is a hang
MEMORY_HEADROOM = 1536 << 20  # bytes a command may allocate beyond the process's size at fork
EXIT_INTERNAL = 70
FUZZER_ERROR = 98  # the child's status when the fuzzer itself failed (run_gpucap raises)
ORACLE_EVERY = 4  # one case in four is an oracle mutation
# Mutation classes after which `simulate`, `sweep` and `plan --optimal` are not run. workload-size makes 20,000 pods: `plan`
# solves them once (~4 s), a simulation several times as nodes come up, plus a cluster snapshot
# every 10 virtual seconds while they pend: honest work of a minute, which the bound would call
# a hang (the same reason WORKLOAD_SIZES leaves out 100,000).
SIMULATE_SKIPS = frozenset({"workload-size"})


@functools.cache
def load_cli() -> Callable[[], None]:
    """Import the CLI and warm it, in this (parent) process, once.

    The import happens with stdout/stderr that are not terminals: the CLI's rich consoles decide
    on colour when they are created, and colour codes would read as control characters here.
    The bundled catalog is resolved once and shared by every child (`_share_bundled_catalog`),
    which makes `plan` and `lint` about twice as fast without changing what they compute."""
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        os.environ.pop(var, None)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from gpucap.cli import catalogs  # noqa: PLC0415 - import under the redirection
        from gpucap.cli import main as cli  # noqa: PLC0415

        _share_bundled_catalog(catalogs)
        # `plan --optimal` imports scipy's HiGHS before the fork, as the catalog is loaded.
        warm = (
            ["plan", str(WORKSHOP)],
            ["lint", str(WORKSHOP)],
            ["plan", "--optimal", str(WORKSHOP)],
        )
        for argv in warm:
            sys.argv = ["gpucap", *argv]
            with contextlib.suppress(SystemExit):
                cli.main()
    return cli.main


def _share_bundled_catalog(cli: Any) -> None:
    """Memoize the CLI's `load_catalog` for the bundled data (no `--catalog`, no `--prices`).

    A `Catalog` is pure and caches what it resolves per node class; a child process works on
    its own copy of the parent's, so nothing one case does reaches another."""
    original = cli.load_catalog
    memo: dict[tuple[Any, ...], Any] = {}

    def load_catalog(region: str = "us-east-1", **kw: Any) -> Any:
        if kw.get("infos") is not None or kw.get("prices") is not None:
            return original(region, **kw)
        key = (region, tuple(kw["zones"]) if kw.get("zones") is not None else None)
        if key not in memo:
            memo[key] = original(region, **kw)
        return memo[key]

    cli.load_catalog = load_catalog


# -- cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Case:
    """One mutant: `seed.files[target]` after `steps`; `oracle` names the rejection it must get."""

    index: int
    seed: Seed
    target: int
    steps: tuple[Step, ...]
    oracle: str | None = None

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(sorted({s.cls for s in self.steps}))

    def describe(self) -> str:
        what = "; ".join(s.describe() for s in self.steps) or "(no mutation)"
        return (
            f"case {self.index}: {self.seed.name} file {self.seed.files[self.target].name}: {what}"
        )


def make_case(seed: int, index: int) -> Case:
    """Case `index` of the run seeded `seed` (nothing else decides it)."""
    rng = random.Random(f"gpucap-fuzz:{seed}:{index}")
    seeds = all_seeds()
    if index % ORACLE_EVERY == ORACLE_EVERY - 1:
        oracle_case = _oracle_case(
            rng, index, [s for s in seeds if s.role in ("manifests", "scenario")]
        )
        if oracle_case is not None:
            return oracle_case
    role = rng.choices(
        ("manifests", "catalog", "prices", "lint-config", "scenario", "reservations", "sweep"),
        (66, 7, 7, 6, 8, 6, 6),
    )[0]
    s = rng.choice([x for x in seeds if x.role == role])
    target = rng.randrange(len(s.files))
    steps = draw_steps(rng, s.files[target], rng.choice((1, 1, 1, 2, 3)))
    return Case(index, s, target, steps)


def _oracle_case(rng: random.Random, index: int, seeds: list[Seed]) -> Case | None:
    for _ in range(50):
        oracle = rng.choice(ORACLES)
        s = rng.choice(seeds)
        target = rng.randrange(len(s.files))
        docs = s.files[target].docs
        order = list(range(len(docs)))
        rng.shuffle(order)
        for i in order:
            steps = oracle.steps(i, docs[i])
            if steps:
                return Case(index, s, target, steps, oracle=oracle.name)
    return None


# -- files and commands ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Materialized:
    """A case written to disk: the manifest paths to give, the mutated file's path (for
    `--catalog`, `--prices`, `--config`, stdin) and a pod for `plan --explain`."""

    files: tuple[str, ...]
    target: str
    explain: str
    readable: bool = True  # the target can be stdin (a file, or /dev/zero; not a directory)


def _explain_pod(docs: list[Any]) -> str:
    for d in docs:
        if not isinstance(d, dict) or pod_spec_path(d) is None:
            continue
        meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
        name, ns = str(meta.get("name", "x")), str(meta.get("namespace") or "default")
        return f"{ns}/{name}" if d.get("kind") == "Pod" else f"{ns}/{name}-0"
    return "default/vllm-0"


# Roles whose seed files are written side by side (the others get the workshop in `w/`).
_SIDE_BY_SIDE = ("manifests", "scenario", "sweep")


def materialize(case: Case, where: Path) -> Materialized:
    """Write the case's files under `where` (which must exist and be empty)."""
    target_file = case.seed.files[case.target]
    docs, raw = apply_steps(target_file, case.steps)
    file_step = next((s for s in case.steps if isinstance(s, FileStep)), None)
    manifests: list[SeedFile] = list(case.seed.files)
    given: list[str] = []
    if case.seed.role not in _SIDE_BY_SIDE:
        (where / "w").mkdir()
        manifests = list(workshop_files())
        for f in manifests:
            (where / "w" / f.name).write_bytes(serialize(f.fmt, list(f.docs)))
            given.append(f"w/{f.name}")
        target_path = where / target_file.name
    else:
        target_path = where / target_file.name
        for i, f in enumerate(case.seed.files):
            if i != case.target:
                (where / f.name).write_bytes(serialize(f.fmt, list(f.docs)))
    written = file_step.write(target_path, raw) if file_step else target_path
    if not file_step:
        target_path.write_bytes(raw)
    target_rel = str(written.relative_to(where))
    if case.seed.role in _SIDE_BY_SIDE:
        given = sorted(f.name for i, f in enumerate(case.seed.files) if i != case.target)
        given = sorted([*given, target_rel])
    try:
        readable = written.exists() and not written.is_dir()
    except OSError:  # a name too long to stat
        readable = False
    return Materialized(tuple(given), target_rel, _explain_pod(docs), readable)


@dataclass(frozen=True, slots=True)
class Command:
    """One gpucap invocation of a case: its arguments and what stdin holds (a path or None)."""

    argv: tuple[str, ...]
    stdin: str | None = None

    @property
    def name(self) -> str:
        words = [self.argv[0]]
        for a, b in zip(self.argv, (*self.argv[1:], ""), strict=True):
            if a in ("-o", "--explain"):
                words.append(f"{a} {b if a == '-o' else 'POD'}")
            elif a.startswith("-"):
                words.append(a)
        return " ".join(words)

    def shell(self) -> str:
        args = " ".join(_quote(a) for a in self.argv)
        return f"gpucap {args}" + (f" < {_quote(self.stdin)}" if self.stdin else "")


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w./=:,@%+-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def commands_for(case: Case, m: Materialized) -> list[Command]:
    """Every command the case's role calls for; an oracle case is judged by `validate` alone."""
    files = m.files
    if case.oracle is not None:
        return [Command(("validate", *files))]
    role = case.seed.role
    if role in ("catalog", "prices", "reservations"):
        opt = f"--{role}"
        return [
            Command(("plan", opt, m.target, *files)),
            Command(("plan", "-o", "json", opt, m.target, *files)),
        ]
    if role == "sweep":
        # The sweep (wherever a file step moved it), every design and seed run inline: the
        # table and the JSON document, whose variant names quote the axes' values.
        if not SIMULATE_SKIPS.isdisjoint(case.classes):
            return []
        target_is_sweep = case.seed.files[case.target].name == SWEEP_FILE
        sweep = m.target if target_is_sweep else SWEEP_FILE
        return [
            Command(("sweep", "--workers", "1", sweep)),
            Command(("sweep", "--workers", "1", "-o", "json", sweep)),
        ]
    if role == "lint-config":
        return [
            Command(("lint", *files)),  # found from the working directory
            Command(("lint", "--config", m.target, "-o", "sarif", *files)),
        ]
    cmds = [
        Command(("validate", *files)),
        Command(("validate", "-"), stdin=m.target),
        Command(("plan", *files)),
        Command(("plan", "-o", "json", *files)),
        Command(("plan", "--explain", m.explain, *files)),
        Command(("lint", *files)),
        Command(("lint", "-o", "json", *files)),
        Command(("lint", "-o", "sarif", *files)),
        Command(("render", *files)),
    ]
    if SIMULATE_SKIPS.isdisjoint(case.classes):
        # The cheapest fleet and the cost floor (HiGHS) on whatever the plan placed; its "what
        # to change" re-plans the input once per candidate change, too slow for 20,000 pods.
        cmds.append(Command(("plan", "--optimal", "--optimal-time", "2s", *files)))
    if role == "scenario" and SIMULATE_SKIPS.isdisjoint(case.classes):
        # The scenario itself (wherever a file step moved it), run to its end: the table, whose
        # timeline quotes names from the files, and the events file as it streams.
        target_is_scenario = case.seed.files[case.target].name == SCENARIO_FILE
        scenario = m.target if target_is_scenario else SCENARIO_FILE
        cmds.append(Command(("simulate", "--events", "events.jsonl", scenario)))
    return cmds if len(files) == 1 and m.readable else [c for c in cmds if c.stdin is None]


# -- running --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one command did: exit status (or the signal that killed it), output, and where an
    internal error was raised or the command hung (`file:line in function`, innermost gpucap
    frame first)."""

    code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    hang: str | None
    where: str | None
    seconds: float
    bound_hit: bool = False


def _child(
    main: Callable[[], None], argv: tuple[str, ...], stdin: str | None, io_dir: Path, bound: int
) -> int:
    """In the forked child: bounds, streams, then the real entry point; the exit status."""
    pages = int(Path("/proc/self/statm").read_text().split()[0])
    limit = pages * resource.getpagesize() + MEMORY_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    hang_file = (io_dir / "hang").open("w")
    faulthandler.dump_traceback_later(bound, exit=True, file=hang_file)
    signal.alarm(bound + 5)  # default action: killed, should faulthandler itself be stuck
    fd = os.open(stdin or os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    for n, name in ((1, "stdout"), (2, "stderr")):
        fd = os.open(io_dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, n)
    # As Python sets them up on a UTF-8 terminal: strict stdout, backslashreplace stderr.
    sys.stdin = _text_stream(0, "rb")
    sys.stdout = _text_stream(1, "wb")
    sys.stderr = err = _RecordingStream(
        open(2, "wb", closefd=False),  # noqa: SIM115 - lives as long as the child
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    err.where = io_dir / "where"
    sys.argv = ["gpucap", *argv]
    try:
        main()
        code: Any = 0
    except SystemExit as e:
        code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
    except BaseException as e:
        (io_dir / "where").write_text(_location(e))
        code = 99
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    faulthandler.cancel_dump_traceback_later()
    return int(code) & 0xFF


def _text_stream(fd: int, mode: str, errors: str = "strict") -> io.TextIOWrapper:
    """A UTF-8 text stream over a file descriptor the child keeps open until it exits."""
    raw = open(fd, mode, closefd=False)  # noqa: SIM115 - lives as long as the child
    return io.TextIOWrapper(raw, encoding="utf-8", errors=errors, line_buffering=True)


def _location(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "/gpucap/" in f.filename]
    pick = (ours or frames or [None])[-1]
    at = f"{_rel(pick.filename)}:{pick.lineno} in {pick.name}" if pick else "?"
    return f"{type(e).__name__} at {at}"


def _rel(filename: str) -> str:
    i = filename.rfind("/gpucap/")
    return filename[i + 1 :] if i >= 0 else filename.rsplit("/", 1)[-1]


class _RecordingStream(io.TextIOWrapper):
    """The child's stderr: whenever it is written to while an exception is being handled, it
    notes where that exception was raised. main() writes its one-line "internal error" inside
    its handler, so the last note locates it, whatever the CLI prints with."""

    where: Path | None = None

    def write(self, s: str) -> int:
        exc = sys.exc_info()[1]
        if exc is not None and self.where is not None:
            self.where.write_text(_location(exc))
        return super().write(s)


def run_gpucap(
    main: Callable[[], None], command: Command, cwd: Path, bound: int = BOUND_SECONDS
) -> Outcome:
    """Run one command in a forked child, in `cwd`, within the bounds; never raises for what
    gpucap does."""
    io_dir = Path(tempfile.mkdtemp(prefix="io-", dir=cwd.parent))
    stdin = str(cwd / command.stdin) if command.stdin else None
    start = time.perf_counter()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child never returns into the caller
        code = FUZZER_ERROR
        try:
            os.chdir(cwd)
            code = _child(main, command.argv, stdin, io_dir, bound)
        except BaseException:  # the fuzzer's own setup failed: say so in the parent
            (io_dir / "fuzzer-error").write_text(traceback.format_exc())
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    broken = io_dir / "fuzzer-error"
    if broken.exists():
        text = broken.read_text()
        shutil.rmtree(io_dir, ignore_errors=True)
        raise RuntimeError(f"the fuzzer's child failed before running gpucap:\n{text}")

    def read(name: str) -> bytes:
        p = io_dir / name
        return p.read_bytes() if p.exists() else b""

    hang = read("hang").decode("utf-8", "replace")
    outcome = Outcome(
        code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        stdout=read("stdout"),
        stderr=read("stderr"),
        hang=_hang_location(hang) if hang.strip() else None,
        where=read("where").decode("utf-8", "replace") or None,
        seconds=seconds,
        bound_hit=seconds >= bound,
    )
    shutil.rmtree(io_dir, ignore_errors=True)
    return outcome


def _hang_location(dump: str) -> str:
    """The innermost gpucap frame of faulthandler's dump of the main thread."""
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', dump)
    ours = [f for f in frames if "/gpucap/" in f[0]]
    f = (ours or frames or [("?", "0", "?")])[0]
    return f"{_rel(f[0])}:{f[1]} in {f[2]}"


# -- the oracle -----------------------------------------------------------------------------------

# Raw C0 controls other than tab and newline, DEL, C1 controls, and the bidi overrides and
# isolates that reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What stderr may hold: one-line errors and warnings, and validate's count of errors.
_LINE = re.compile(r"^(error|warning|note|info): |^\d+ error\(s\); nothing was validated$")


@dataclass(frozen=True, slots=True)
class Failure:
    """A broken promise: `kind` (internal-error, hang, memory, crash, exit-code, control-chars,
    stray-stderr, no-error-line, accepted-invalid) and a `detail` that groups failures with one
    cause (where it was raised, which character, which oracle)."""

    kind: str
    detail: str

    @property
    def signature(self) -> str:
        return f"{self.kind}: {self.detail}"


def judge(o: Outcome, command: Command, oracle: str | None) -> Failure | None:
    """The first promise `o` breaks, or None."""
    err = o.stderr.decode("utf-8", "replace")
    if o.signal is not None:
        name = signal.Signals(o.signal).name
        # Killed at the bound is a hang, whatever the signal (faulthandler's dump of a busy
        # thread can itself crash).
        hung = o.signal == signal.SIGALRM or o.bound_hit
        return Failure("hang" if hung else "crash", f"killed by {name}")
    if o.hang is not None:
        return Failure("hang", o.hang)
    if "MemoryError" in err or (o.where or "").startswith("MemoryError"):
        return Failure("memory", o.where or "MemoryError")
    if o.code == EXIT_INTERNAL or "internal error" in err or "Traceback" in err:
        return Failure("internal-error", o.where or _normalize(err.strip().splitlines()[-1:]))
    if o.code not in (0, 1, 2):
        return Failure("exit-code", f"exit {o.code} ({o.where})")
    # `render` prints the user's file byte for byte (for `kubectl apply -f -`), like `cat`.
    streams = [("stderr", o.stderr)] + (
        [] if command.argv[0] == "render" else [("stdout", o.stdout)]
    )
    for stream, data in streams:
        text = data.decode("utf-8", "replace")
        if "\ufffd" in text and "\ufffd" not in data.decode("utf-8", "ignore"):
            return Failure("control-chars", f"{stream} is not UTF-8")
        bad = _UNSAFE.search(text)
        if bad:
            return Failure("control-chars", f"{stream} holds U+{ord(bad.group()):04X}")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    stray = next((ln for ln in lines if not _LINE.match(ln)), None)
    if stray is not None:
        return Failure("stray-stderr", f"{command.argv[0]}: {_normalize([stray])}")
    if o.code == 2 and not any(ln.startswith("error: ") for ln in lines):
        return Failure("no-error-line", command.name)
    if oracle is not None and o.code != 2:
        return Failure("accepted-invalid", oracle)
    return None


def _normalize(lines: list[str]) -> str:
    """A stderr line with the parts that vary between mutants (numbers, quoted values) blanked."""
    text = lines[0] if lines else ""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return re.sub(r"\d+", "N", text)[:80]


# -- the run --------------------------------------------------------------------------------------


@dataclass
class Finding:
    """All failures with one signature: how many, the first case and command, its shrunk form."""

    failure: Failure
    case: Case
    command: str  # its `Command.name`
    outcome: Outcome
    count: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    shrunk: Case | None = None
    reproducer: Path | None = None


@dataclass
class Fuzzer:
    """Runs cases and collects findings; `scratch` holds each case's files while it runs."""

    seed: int
    bound: int = BOUND_SECONDS
    main: Callable[[], None] = field(default_factory=load_cli)
    executions: int = 0
    cases: int = 0
    skipped: int = 0
    hang_skips: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    findings: dict[str, Finding] = field(default_factory=dict)
    _baseline: dict[str, bool] = field(default_factory=dict)

    @contextlib.contextmanager
    def _scratch(self) -> Iterator[Path]:
        root = Path(tempfile.mkdtemp(prefix="gpucap-fuzz-"))
        try:
            (root / "in").mkdir()
            yield root / "in"
        finally:
            remove_tree(root)

    def execute(
        self, case: Case, only: str | None = None
    ) -> list[tuple[int, Command, Outcome, Failure | None]]:
        """Run the case's commands (or only the one named `only`); each with outcome and failure.

        After a command hangs, the case's other commands are skipped (`hang_skips` counts
        them): they read the same input, and each would cost the whole bound again."""
        results = []
        with self._scratch() as where:
            m = materialize(case, where)
            cmds = commands_for(case, m)
            for i, cmd in enumerate(cmds):
                if only is not None and cmd.name != only:
                    continue
                o = run_gpucap(self.main, cmd, where, self.bound)
                self.executions += 1
                failure = judge(o, cmd, case.oracle)
                results.append((i, cmd, o, failure))
                if failure is not None and failure.kind == "hang":
                    self.hang_skips += len(cmds) - 1 - i
                    break
        return results

    def valid_seed(self, seed: Seed) -> bool:
        """Whether `validate` accepts the seed as it is (oracle cases need a valid start)."""
        if seed.name not in self._baseline:
            base = Case(-1, seed, 0, (), oracle="baseline")
            ((_, _, o, _),) = self.execute(base)
            self._baseline[seed.name] = o.code == 0
        return self._baseline[seed.name]

    def run_case(self, case: Case) -> None:
        """Execute one case and record what it broke."""
        if case.oracle is not None and not self.valid_seed(case.seed):
            self.skipped += 1
            return
        self.cases += 1
        self.classes.update(case.classes)
        for _, cmd, o, failure in self.execute(case):
            if failure is None:
                continue
            found = self.findings.get(failure.signature)
            if found is None:
                found = self.findings[failure.signature] = Finding(failure, case, cmd.name, o)
            found.count += 1
            found.classes.update(case.classes)

    def run(
        self,
        count: int | None = None,
        seconds: float | None = None,
        start: int = 0,
        progress: Callable[[Fuzzer], None] | None = None,
    ) -> None:
        """Cases `start`, `start + 1`, ... until `count` cases or `seconds` have passed."""
        began = time.monotonic()
        i = start
        while (count is None or i < start + count) and (
            seconds is None or time.monotonic() - began < seconds
        ):
            self.run_case(make_case(self.seed, i))
            i += 1
            if progress is not None:
                progress(self)

    # -- shrinking --------------------------------------------------------------------------------

    def fails_alike(self, case: Case, command: str, failure: Failure) -> bool:
        results = self.execute(case, only=command)
        return bool(results) and results[0][3] == failure

    def shrink(self, finding: Finding, max_runs: int = 80) -> Case:
        """A smaller case failing the same way: steps undone, other files and documents dropped,
        keys the steps do not touch deleted; at most `max_runs` runs (a tenth of them for a
        hang, which costs the whole bound each time it still hangs)."""
        runs = 0
        case, command, failure = finding.case, finding.command, finding.failure
        if failure.kind == "hang":
            max_runs = max(1, max_runs // 10)

        def attempt(candidate: Case) -> bool:
            nonlocal runs
            if runs >= max_runs:
                return False
            runs += 1
            try:
                return self.fails_alike(candidate, command, failure)
            except (OSError, ValueError, TypeError, KeyError, IndexError, RecursionError):
                return False  # a candidate the fuzzer itself cannot write

        for step in list(case.steps):  # 1. undo steps
            if len(case.steps) > 1:
                fewer = dataclasses.replace(
                    case, steps=tuple(s for s in case.steps if s is not step)
                )
                if attempt(fewer):
                    case = fewer
        files = case.seed.files  # 2. drop the other files (for manifests the command list is kept)
        if case.seed.role in ("manifests", "scenario") and len(files) > 1:
            for i in reversed(range(len(files))):
                if i == case.target or len(case.seed.files) == 1:
                    continue
                kept = case.seed.files[:i] + case.seed.files[i + 1 :]
                target = case.target - (1 if i < case.target else 0)
                fewer = dataclasses.replace(
                    case, seed=dataclasses.replace(case.seed, files=kept), target=target
                )
                if attempt(fewer):
                    case = fewer
        case = self._shrink_docs(case, attempt)  # 3. drop documents, then keys
        return self._shrink_keys(case, attempt)

    def _shrink_docs(self, case: Case, attempt: Callable[[Case], bool]) -> Case:
        target = case.seed.files[case.target]
        for j in reversed(range(len(target.docs))):
            used = {s.path[0] for s in case.steps if isinstance(s, TreeStep) and s.path}
            if len(target.docs) <= 1 or j in used:
                continue
            docs = target.docs[:j] + target.docs[j + 1 :]
            steps = tuple(_shift(s, j) for s in case.steps)
            fewer = _with_docs(case, docs, steps)
            if attempt(fewer):
                case, target = fewer, fewer.seed.files[fewer.target]
        return case

    def _shrink_keys(self, case: Case, attempt: Callable[[Case], bool]) -> Case:
        docs = list(case.seed.files[case.target].docs)
        touched = [s.path for s in case.steps if isinstance(s, TreeStep)]
        paths = sorted((p for p, _ in walk(docs)), key=len)
        for p in paths:
            if any(t[: len(p)] == p or p[: len(t)] == t for t in touched):
                continue  # on the way to a mutated node, or below it
            try:
                get(docs, p)
            except (KeyError, IndexError, TypeError):
                continue  # gone with its parent
            trial = TreeStep("shrink", "delete", p).apply(docs)
            if isinstance(p[-1], int):
                continue  # deleting list items shifts the steps' indices
            fewer = _with_docs(case, tuple(trial), case.steps)
            if attempt(fewer):
                case, docs = fewer, trial
        return case


def _shift(step: Step, removed: int) -> Step:
    if isinstance(step, TreeStep) and step.path and step.path[0] > removed:
        return dataclasses.replace(step, path=(step.path[0] - 1, *step.path[1:]))
    return step


def _with_docs(case: Case, docs: tuple[Any, ...], steps: tuple[Step, ...]) -> Case:
    files = list(case.seed.files)
    files[case.target] = dataclasses.replace(files[case.target], docs=docs)
    return dataclasses.replace(
        case, seed=dataclasses.replace(case.seed, files=tuple(files)), steps=steps
    )


def write_reproducer(finding: Finding, case: Case, root: Path) -> Path:
    """The case's files and a README (command, steps, what gpucap said) under `root`."""
    slug = re.sub(r"[^\w.-]+", "-", finding.failure.signature)[:80].strip("-")
    where = root / slug
    remove_tree(where)
    where.mkdir(parents=True)
    m = materialize(case, where)
    cmd = next(c for c in commands_for(case, m) if c.name == finding.command)
    o = finding.outcome
    (where / "README.txt").write_text(
        f"{finding.failure.signature}\n\n"
        f"seen {finding.count} time(s); mutation classes: {dict(finding.classes)}\n"
        f"{case.describe()}\n\n"
        f"cd {where} && {cmd.shell()}\n\n"
        f"exit {o.code} signal {o.signal} in {o.seconds:.2f}s\n"
        f"stderr (first 2000 bytes): {o.stderr[:2000]!r}\n",
        encoding="utf-8",
    )
    return where


def reproducer_text(case: Case, command: str, limit: int = 600) -> str:
    """The minimal reproducer as text for a report: each file (shortened) and the command."""
    where = Path(tempfile.mkdtemp(prefix="gpucap-fuzz-show-"))
    try:
        m = materialize(case, where)
        cmd = next(c for c in commands_for(case, m) if c.name == command)
        names = [p for p in m.files if not p.startswith("w/")]
        if m.target not in names:
            names.append(m.target)
        return (
            "\n".join(f"--- {n}\n{_show(where / n, limit)}" for n in names) + f"\n$ {cmd.shell()}"
        )
    finally:
        remove_tree(where)


def remove_tree(top: Path) -> None:
    """`shutil.rmtree` without its recursion (Python 3.11's fails on the 1,000-level directories
    of the "deep-dir" file step): files first, then each directory deepest first. Errors are
    ignored, as the scratch space is the fuzzer's own."""
    folders: list[Path] = []
    stack = [top]
    while stack:
        folder = stack.pop()
        folders.append(folder)
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
        except OSError:
            continue
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _show(path: Path, limit: int) -> str:
    """A file's text for a report, shortened; what it is when it is not a plain file."""
    try:
        if path.is_symlink():
            return f"<symlink to {os.readlink(path)}>"
        if path.is_dir():
            return f"<directory of {len(list(path.iterdir()))} copies of the file>"
        data = path.read_bytes()
    except OSError as e:
        return f"<not written: {e.strerror}>"
    shown = data.decode("utf-8", "backslashreplace")
    return shown if len(shown) <= limit else shown[:limit] + f"... <{len(data)} bytes>"
