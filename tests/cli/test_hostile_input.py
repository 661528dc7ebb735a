"""Hostile input through the real entry point: one line on stderr, exit 2, no hang, no blow-up.

Each class issue 9 found in reading input (and each input limit of `apis/limits.py`) has a
minimal input here. In-process cases call `gpucap.cli.main:main` (the console script: it is what
turns an unexpected exception into exit 70, which CliRunner would not); cases that could hang
or fill memory run `python -m gpucap` in a subprocess with a timeout.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gpucap.apis import limits, reading
from gpucap.cli import main as cli_main
from tests.builders import to_yaml

SRC = Path(__file__).resolve().parents[2] / "src"
VALIDATE_SUMMARY = "1 error(s); nothing was validated"

POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: [{name: c, image: x}]\n"
)


def gpucap(
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: bytes | None = None,
) -> tuple[int, list[str]]:
    """Run the console script in-process: (exit status, stderr lines)."""
    monkeypatch.setattr(sys, "argv", ["gpucap", *args])
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0), capsys.readouterr().err.splitlines()


def run_gpucap(
    args: list[str], *, stdin: object = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`python -m gpucap ARGS` in a new process, killed after `timeout` seconds (a hang fails)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "gpucap", *args],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def one_error(code: int, lines: list[str]) -> str:
    """The single error line of a bad-input run (`validate` adds its count after it)."""
    assert code == 2, lines
    if lines and lines[-1] == VALIDATE_SUMMARY:
        lines = lines[:-1]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines
    assert "internal error" not in lines[0]
    return lines[0]


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


Run = Callable[..., tuple[int, list[str]]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    def run(*args: str, stdin: bytes | None = None) -> tuple[int, list[str]]:
        return gpucap(list(args), capsys, monkeypatch, stdin)

    return run


# ---- files that are not UTF-8 ----------------------------------------------------------------
LATIN1_POD = POD.replace("name: p", "name: caf\xe9").encode("latin-1")


def test_a_latin1_manifest_is_one_line_naming_the_byte(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "pod.yaml", LATIN1_POD)
    line = one_error(*cli("validate", path))
    assert line.startswith(f"error: {path}: line 4 column 12: byte 0xe9 is not UTF-8")


def test_latin1_on_stdin_is_one_line_naming_the_byte(cli: Run) -> None:
    line = one_error(*cli("validate", "-", stdin=LATIN1_POD))
    assert line.startswith("error: <stdin>: line 4 column 12: byte 0xe9 is not UTF-8")


def test_a_latin1_file_given_to_render_is_one_line(cli: Run, tmp_path: Path) -> None:
    line = one_error(*cli("render", write(tmp_path, "pod.yaml", LATIN1_POD)))
    assert "byte 0xe9 is not UTF-8" in line


@pytest.mark.parametrize("option", ["--prices", "--catalog"])
def test_a_latin1_prices_or_catalog_file_is_one_line_naming_the_byte(
    cli: Run, tmp_path: Path, option: str
) -> None:
    bad = write(tmp_path, "data.json", '{"r\xe9gion": {}}'.encode("latin-1"))
    line = one_error(*cli("plan", write(tmp_path, "pod.yaml", POD), option, bad))
    assert line == (
        f"error: {bad}: line 1 column 4: byte 0xe9 is not UTF-8 (gpucap reads UTF-8 text; a "
        "Latin-1 file? convert it with iconv -f latin1 -t utf-8)"
    )


def test_a_latin1_lint_config_is_one_line_naming_the_byte(cli: Run, tmp_path: Path) -> None:
    config = write(tmp_path, "pyproject.toml", b'[tool.gpucap.lint]\nselect = ["caf\xe9"]\n')
    line = one_error(*cli("lint", "--config", config, write(tmp_path, "pod.yaml", POD)))
    assert line.startswith(f"error: {config}: line 2 column 15: byte 0xe9 is not UTF-8")


def test_a_utf16_manifest_says_it_is_utf16(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "pod.yaml", POD.encode("utf-16"))  # with its byte order mark
    line = one_error(*cli("validate", path))
    assert line.startswith(f"error: {path}: is UTF-16 (byte order mark FF FE), not UTF-8")


def test_a_binary_file_is_refused_at_its_first_nul_byte(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "pod.yaml", b"apiVersion: v1\nkind: P\x00d\n")
    line = one_error(*cli("validate", path))
    assert (
        line
        == f"error: {path}: line 2 column 8: byte 0x00 (NUL): a binary file, not YAML or JSON text"
    )


@pytest.mark.parametrize("how", ["path", "stdin"])
def test_dev_zero_is_refused_after_the_size_limit_at_the_latest(how: str) -> None:
    # /dev/zero is endless: it is refused at its first NUL byte, long before the size limit.
    if how == "path":
        proc = run_gpucap(["validate", "/dev/zero"], timeout=30)
    else:
        with open("/dev/zero", "rb") as zero:
            proc = run_gpucap(["validate", "-"], stdin=zero, timeout=30)
    name = "/dev/zero" if how == "path" else "<stdin>"
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: {name}: line 1 column 1: byte 0x00 (NUL): a binary file, not YAML or JSON text",
        VALIDATE_SUMMARY,
    ]


class _Endless(io.RawIOBase):
    """A stream of valid YAML that never ends (`yes 'a: b' |`), counting what was read."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = b"a: b\n" * (len(buffer) // 5)
        buffer[: len(data)] = data
        self.read_bytes += len(data)
        return len(data)


def test_an_endless_stream_is_refused_at_the_size_limit_after_reading_only_that(
    cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reading, "MAX_FILE_BYTES", 4 * reading.CHUNK)
    endless = _Endless()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(endless)))
    line = one_error(*cli("validate", "-"))
    assert line == (
        "error: <stdin>: larger than 4 MiB (gpucap's limit for one file); is it an endless stream?"
    )
    assert endless.read_bytes <= 6 * reading.CHUNK  # read in bounded chunks, not to the end


def test_an_endless_pipe_stops_at_the_real_one_file_limit(tmp_path: Path) -> None:
    yes = subprocess.Popen(["yes", "a: b"], stdout=subprocess.PIPE)
    try:
        proc = run_gpucap(["validate", "-"], stdin=yes.stdout, timeout=120)
    finally:
        yes.kill()
        yes.wait()
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == (
        "error: <stdin>: larger than 1 GiB (gpucap's limit for one file); is it an endless stream?"
    )


def test_all_input_together_is_bounded_too(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", len(POD) * 2 + 10)
    files = [write(tmp_path, f"p{i}.yaml", POD.replace("name: p", f"name: p{i}")) for i in range(3)]
    line = one_error(*cli("validate", *files))
    assert line == (
        f"error: {files[2]}: the input is larger than {len(POD) * 2 + 10:,} bytes in all "
        "(gpucap's limit for one run)"
    )


# ---- integers past Python's 4,300-digit limit --------------------------------------------------
BIG = "1" * 5000


def test_a_huge_integer_in_yaml_names_its_line_and_field(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "pod.yaml", POD + f"  priority: {BIG}\n")
    line = one_error(*cli("validate", path))
    assert line == (
        f"error: {path}[0]: line 7 column 13: spec.priority: an integer of more than 4,300 "
        "digits (gpucap reads at most 100)"
    )


def test_an_integer_just_past_the_digit_limit_is_refused_too(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "pod.yaml", POD + f"  priority: {'9' * 101}\n")
    assert one_error(*cli("validate", path)).endswith(
        "spec.priority: an integer of 101 digits (gpucap reads at most 100)"
    )


def test_a_huge_integer_as_a_mapping_key_is_refused(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", f"? {BIG}\n: 1\n")
    assert "an integer of more than 4,300 digits" in one_error(*cli("validate", path))


def test_a_huge_integer_in_json_is_one_line(cli: Run, tmp_path: Path) -> None:
    # A surrogate pair escape is JSON, not YAML: this file is read as JSON (the JSON fallback).
    path = write(tmp_path, "pod.json", '{"apiVersion": "\\ud83d\\ude00", "n": ' + BIG + "}")
    line = one_error(*cli("validate", path))
    assert line == (
        f"error: {path}: line 1 column 37: an integer of more than 4,300 digits (gpucap reads "
        "at most 100)"
    )


@pytest.mark.parametrize("option", ["--prices", "--catalog"])
def test_a_huge_integer_in_a_prices_or_catalog_file_is_one_line(
    cli: Run, tmp_path: Path, option: str
) -> None:
    bad = write(tmp_path, "data.json", '{"us-east-1": {"g5.xlarge": {"spot": ' + BIG + "}}}")
    line = one_error(*cli("plan", write(tmp_path, "pod.yaml", POD), option, bad))
    assert line == (
        f"error: {bad}: line 1 column 38: an integer of more than 4,300 digits (gpucap reads "
        "at most 100)"
    )


def test_a_huge_integer_in_the_lint_config_is_one_line(cli: Run, tmp_path: Path) -> None:
    config = write(tmp_path, ".gpucap.toml", f"[lint]\nselect = [{BIG}]\n")
    line = one_error(*cli("lint", "--config", config, write(tmp_path, "pod.yaml", POD)))
    assert line == (
        f"error: {config}: not valid TOML: an integer of more than 4,300 digits (gpucap reads "
        "at most 100)"
    )


# ---- nesting and aliases -----------------------------------------------------------------------
def test_yaml_nested_a_thousand_levels_is_refused_at_the_depth_limit(
    cli: Run, tmp_path: Path
) -> None:
    path = write(tmp_path, "deep.yaml", "a: " + "[" * 500 + "]" * 500 + "\n")
    line = one_error(*cli("validate", path))
    assert line == (
        f"error: {path}[0]: line 1 column 131: a[0][0][0][0][0][0][0]...(120 more): nested "
        "deeper than 128 levels (gpucap's limit)"
    )
    # libyaml itself stops at 1,000 levels: one line too.
    path = write(tmp_path, "deep.yaml", "a: " + "[" * 1000 + "]" * 1000 + "\n")
    assert one_error(*cli("validate", path)).endswith("exceeded maximum nesting depth")


def test_json_nested_a_thousand_levels_is_refused(cli: Run, tmp_path: Path) -> None:
    # JSON that YAML reads, and JSON only the JSON fallback reads (a tab): both are bounded.
    for text in ("[" * 500 + "]" * 500, '["\\ud83d\\ude00", ' + "[" * 100_000 + "]" * 100_001):
        path = write(tmp_path, "deep.json", text)
        assert one_error(*cli("validate", path)).endswith(
            "nested deeper than 128 levels (gpucap's limit)"
        )


@pytest.mark.parametrize("option", ["--prices", "--catalog"])
def test_a_deeply_nested_prices_or_catalog_file_is_one_line(
    cli: Run, tmp_path: Path, option: str
) -> None:
    bad = write(tmp_path, "data.json", "[" * 100_000 + "]" * 100_000)
    line = one_error(*cli("plan", write(tmp_path, "pod.yaml", POD), option, bad))
    assert line == f"error: {bad}: nested deeper than 128 levels (gpucap's limit)"


def test_depth_up_to_the_limit_is_read(cli: Run, tmp_path: Path) -> None:
    # 127 levels of annotation-free nesting inside an ignored kind: read, and ignored.
    deep = "[" * 127 + "]" * 127
    path = write(
        tmp_path, "x.yaml", f"apiVersion: x/v1\nkind: Thing\nmetadata: {{name: t}}\nd: {deep}\n"
    )
    code, lines = cli("validate", path)
    assert code == 0, lines


def test_a_recursive_yaml_alias_is_one_line(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "rec.yaml", "a: &a [*a]\n")
    line = one_error(*cli("validate", path))
    assert line == (
        f"error: {path}[0]: line 1 column 4: a[0]: a recursive YAML alias (an anchor used inside "
        "itself)"
    )


def test_a_mapping_merged_into_itself_is_a_recursive_alias(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "rec.yaml", "a: &a {b: 1, c: {<<: *a}}\n")
    assert "a recursive YAML alias" in one_error(*cli("validate", path))


BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_an_alias_bomb_is_refused_before_it_expands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpucap", "validate", "-"],
        input=BILLION_LAUGHS,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("error: <stdin>[0]: line ")
    assert lines[0].endswith(
        "YAML aliases expand to more than 1,000,000 nodes (gpucap's limit for one file; a "
        '"billion laughs" alias bomb?)'
    )


def test_merge_keys_merged_again_and_again_do_not_double(cli: Run, tmp_path: Path) -> None:
    # PyYAML's flatten_mapping doubles a mapping each time it is merged twice: 2^40 pairs here.
    text = "apiVersion: x/v1\nkind: Thing\nmetadata: {name: t}\na: &a0 {x: 1, y: 2}\n" + "".join(
        f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}]}}\n" for i in range(1, 41)
    )
    path = write(tmp_path, "merge.yaml", text)
    code, lines = cli("validate", path)
    assert code == 0, lines  # read (and ignored: gpucap does not use kind Thing)


def test_a_merged_key_is_overridden_by_the_mapping_s_own(tmp_path: Path) -> None:
    from gpucap.apis.serde import load_text  # noqa: PLC0415 - the loader itself, not the CLI

    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {<<: {a: '1', b: '2'}, b: '3'}\n"
    result = load_text(text, "c.yaml")
    assert result.ok, [str(i) for i in result.issues]
    assert result.manifests[0].obj.data == {"a": "1", "b": "3"}  # type: ignore[union-attr]


def test_values_yaml_cannot_construct_are_one_line(cli: Run, tmp_path: Path) -> None:
    for value, tag in (
        ("2024-13-01", "timestamp"),
        ("!!binary xyz", "binary"),
        ("!!int 1.5", "int"),
    ):
        path = write(
            tmp_path, "x.yaml", POD.replace("name: p\n", f"name: p\n  labels: {{a: {value}}}\n")
        )
        line = one_error(*cli("validate", path))
        assert "metadata.labels.a: " in line, line
        assert f"cannot be read as a YAML {tag}" in line, line


def test_a_collection_as_a_mapping_key_is_one_line(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "? [a, b]\n: c\n")
    line = one_error(*cli("validate", path))
    assert (
        line
        == f"error: {path}[0]: line 1 column 3: a mapping key must be a string, not a collection"
    )


# ---- the lint config ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '[tool.gpucap.lint]\nselect = "GPU"',
            "[tool.gpucap.lint].select: expected a list of rule ids",
        ),
        (
            "[tool.gpucap.lint]\nselect = [1]",
            "[tool.gpucap.lint].select: expected a list of rule ids",
        ),
        (
            "[tool.gpucap.lint]\nignore = {a = 1}",
            "[tool.gpucap.lint].ignore: expected a list of rule ids",
        ),
        (
            '[tool.gpucap.lint]\nseverity = ["NP005"]',
            "[tool.gpucap.lint].severity: expected a table of rule id = severity",
        ),
        (
            '[tool.gpucap.lint]\nseverity = {NP005 = ["error"]}',
            "[tool.gpucap.lint].severity.NP005: ['error'] is not one of error, warning, info",
        ),
        (
            "[tool.gpucap.lint]\nseverity = {NP005 = {a = 1}}",
            "[tool.gpucap.lint].severity.NP005: {'a': 1} is not one of error, warning, info",
        ),
        (
            '[tool.gpucap.lint]\ncluster = "gpu-operator"',
            "[tool.gpucap.lint].cluster: expected a list of component names",
        ),
        ("[tool.gpucap.lint]\ncluster = [[]]", "[tool.gpucap.lint].cluster: expected a list of"),
        ("[tool]\ngpucap = 1", "tool.gpucap: expected a table, got integer"),
        ('tool = "x"', "tool: expected a table, got string"),
        ("[tool.gpucap]\nlint = [1]", "tool.gpucap.lint: expected a table, got array"),
        (
            "[tool.gpucap.lint]\nselect = " + "[" * 5000 + "]" * 5000,
            "not valid TOML: nested too deeply",
        ),
    ],
)
def test_a_lint_config_key_of_the_wrong_type_is_one_line_naming_it(
    cli: Run, tmp_path: Path, body: str, message: str
) -> None:
    config = write(tmp_path, "pyproject.toml", body + "\n")
    line = one_error(*cli("lint", "--config", config, write(tmp_path, "pod.yaml", POD)))
    assert line.startswith(f"error: {config}: {message}"), line


# ---- numbers in catalogs and price files ---------------------------------------------------------
def catalog_entry(**fields: object) -> dict[str, object]:
    return {
        "name": "g9.xlarge",
        "family": "g9",
        "size": "xlarge",
        "architecture": "amd64",
        "vcpus": 4,
        "memory_mib": 16384,
        "gpu_count": 1,
        "max_pods_eni": 58,
        "on_demand_price_usd_per_hour": 1.0,
        **fields,
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('"vcpus": 1e300', "field 'vcpus': must be at most 2147483647, got 1000000000000"),
        ('"vcpus": 1e400', "field 'vcpus': must be an integer >= 1, got inf"),
        ('"memory_mib": -1', "field 'memory_mib': must be an integer >= 1, got -1"),
        ('"memory_mib": 1e19', "field 'memory_mib': must be at most 2147483647, got 1000"),
        ('"on_demand_price_usd_per_hour": 1e400', "must be {region: price} or a number, got inf"),
        ('"on_demand_price_usd_per_hour": {"us-east-1": -2}', "must be a number >= 0, got -2"),
        (
            '"on_demand_price_usd_per_hour": {"us-east-1": 1e13}',
            "at most 1e+12, got 10000000000000.0",
        ),
        ('"gpu_fraction": 1e400', "field 'gpu_fraction': must be at most 1e+12, got inf"),
        ('"vcpus": NaN', "NaN is not a JSON number"),
        ('"vcpus": -Infinity', "-Infinity is not a JSON number"),
    ],
)
def test_a_catalog_number_out_of_range_is_one_line(
    cli: Run, tmp_path: Path, raw: str, message: str
) -> None:
    field, value = raw.split(": ", 1)
    body = json.dumps([catalog_entry(**{json.loads(field): "VALUE"})])
    bad = write(tmp_path, "catalog.json", body.replace('"VALUE"', value))
    line = one_error(*cli("plan", write(tmp_path, "pod.yaml", POD), "--catalog", bad))
    assert line.startswith(f"error: {bad}: "), line
    assert message in line, line


@pytest.mark.parametrize(
    ("spot", "message"),
    [
        ("1e400", "field 'spot': must be at most 1e+12, got inf"),
        ("-0.5", "field 'spot': must be a number >= 0, got -0.5"),
        ("123456789012345678901234567890", "field 'spot': must be at most 1e+12, got 1234567890"),
        ("NaN", "line 1 column 38: NaN is not a JSON number"),
        ("Infinity", "line 1 column 38: Infinity is not a JSON number"),
    ],
)
def test_a_price_out_of_range_is_one_line(
    cli: Run, tmp_path: Path, spot: str, message: str
) -> None:
    bad = write(tmp_path, "prices.json", '{"us-east-1": {"g5.xlarge": {"spot": ' + spot + "}}}")
    line = one_error(*cli("plan", write(tmp_path, "pod.yaml", POD), "--prices", bad))
    assert line.startswith(f"error: {bad}: "), line
    assert message in line, line


# ---- paths the system refuses --------------------------------------------------------------------
def test_a_file_name_too_long_is_one_line(cli: Run) -> None:
    name = "x" * 300 + ".yaml"
    assert one_error(*cli("validate", name)) == f"error: {name}: File name too long"


@pytest.mark.parametrize("option", ["--catalog", "--prices"])
def test_a_file_name_too_long_for_catalog_or_prices_is_one_line(
    cli: Run, tmp_path: Path, option: str
) -> None:
    name = "x" * 300 + ".json"
    line = one_error(*cli("plan", write(tmp_path, "pod.yaml", POD), option, name))
    assert line == f"error: {name}: cannot read: File name too long"


def test_a_directory_given_as_the_catalog_is_one_line(cli: Run, tmp_path: Path) -> None:
    line = one_error(*cli("plan", write(tmp_path, "pod.yaml", POD), "--catalog", str(tmp_path)))
    assert line == f"error: {tmp_path}: cannot read: Is a directory"


def test_a_directory_given_as_the_lint_config_is_one_line(cli: Run, tmp_path: Path) -> None:
    line = one_error(*cli("lint", "--config", str(tmp_path), write(tmp_path, "pod.yaml", POD)))
    assert line == f"error: {tmp_path}: cannot read: Is a directory"


def test_a_symlink_loop_is_one_line(cli: Run, tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    line = one_error(*cli("validate", str(loop)))
    assert line == f"error: {loop}: Too many levels of symbolic links"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_one_line(cli: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "pod.yaml", POD)
    os.chmod(path, 0)
    assert one_error(*cli("validate", path)) == f"error: {path}: cannot read: Permission denied"


def test_a_fifo_nobody_writes_to_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "catalog.json"
    os.mkfifo(fifo)
    pod = tmp_path / "pod.yaml"
    pod.write_text(POD)
    proc = run_gpucap(["plan", str(pod), "--catalog", str(fifo)], timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: {fifo}: not valid JSON: Expecting value (line 1, column 1)"
    ]


def test_process_substitution_is_read_like_a_file(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, POD.encode())
    os.close(write_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gpucap", "validate", f"/dev/fd/{read_end}"],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "PYTHONPATH": str(SRC)},
            pass_fds=(read_end,),
            check=False,
        )
    finally:
        os.close(read_end)
    assert proc.returncode == 0, proc.stderr
    assert "1 object valid" in proc.stdout


# ---- pods and documents ------------------------------------------------------------------------
def deployment(replicas: int, name: str = "big") -> str:
    return to_yaml(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
    )


def test_two_billion_replicas_are_refused_before_any_pod_is_made(tmp_path: Path) -> None:
    path = write(tmp_path, "big.yaml", deployment(2_147_483_647))
    proc = run_gpucap(["plan", path], timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: {path}[0] Deployment/default/big: spec.template.spec: makes 2,147,483,647 pods; "
        "gpucap plans at most 150,000 per workload (Kubernetes' limit for a whole cluster)"
    ]


@pytest.mark.parametrize(
    ("doc", "ref"),
    [
        (
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": "big"},
                "spec": {
                    "replicas": 1000,
                    "leaderWorkerTemplate": {
                        "size": 1000,
                        "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                    },
                },
            },
            "LeaderWorkerSet/default/big",
        ),
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "big"},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "w",
                            "replicas": 1000,
                            "template": {
                                "spec": {
                                    "parallelism": 1000,
                                    "completions": 1000,
                                    "template": {
                                        "spec": {
                                            "restartPolicy": "Never",
                                            "containers": [{"name": "c", "image": "x"}],
                                        }
                                    },
                                }
                            },
                        }
                    ]
                },
            },
            "JobSet/default/big",
        ),
        (
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "metadata": {"name": "big"},
                "spec": {
                    "headGroupSpec": {
                        "template": {"spec": {"containers": [{"name": "h", "image": "x"}]}}
                    },
                    "workerGroupSpecs": [
                        {
                            "groupName": "w",
                            "replicas": 1000,
                            "minReplicas": 1000,
                            "maxReplicas": 1000,
                            "numOfHosts": 1000,
                            "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                        }
                    ],
                },
            },
            "RayCluster/default/big",
        ),
    ],
)
def test_operator_kinds_are_bounded_by_the_pods_they_would_make(
    tmp_path: Path, doc: dict[str, object], ref: str
) -> None:
    path = write(tmp_path, "big.yaml", to_yaml(doc))
    proc = run_gpucap(["plan", path], timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {path}[0] {ref}: ")
    assert "pods; gpucap plans at most 150,000 per workload" in lines[0]


def test_the_pods_of_all_the_input_are_bounded(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_PODS", 150)
    path = write(tmp_path, "two.yaml", deployment(100, "a") + "---\n" + deployment(100, "b"))
    line = one_error(*cli("validate", path))
    assert line == (
        f"error: {path}[1] Deployment/default/b: the input makes more than 150 pods in all "
        "(gpucap's limit, Kubernetes' own for one cluster)"
    )


def test_documents_per_run_are_bounded(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_OBJECTS", 10)
    path = write(tmp_path, "many.yaml", "---\n{}\n" * 20)
    line = one_error(*cli("validate", path))
    assert line == (
        f"error: {path}: more than 10 documents and List items in all (gpucap's limit for one run)"
    )


def test_list_items_count_as_documents(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_OBJECTS", 10)
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "x"}]}}
    items = "".join(f"- {json.dumps({**pod, 'metadata': {'name': f'p{i}'}})}\n" for i in range(20))
    path = write(tmp_path, "list.yaml", "kind: List\nitems:\n" + items)
    line = one_error(*cli("validate", path))
    assert line == (
        f"error: {path}[0].items[9]: more than 10 documents and List items in all (gpucap's "
        "limit for one run)"
    )


def test_the_limits_admit_a_whole_cluster_export() -> None:
    """A pod as `kubectl get pods -A -o json` prints it (bench/validate.py's, indented as kubectl
    indents) times 100,000 pods fits one file; the pod limits are Kubernetes' own."""
    sys.path.insert(0, str(SRC.parent / "bench"))
    try:
        import validate as bench  # noqa: PLC0415 - the benchmark's realistic pod

        pod_bytes = len(json.dumps(bench.pod(99_999), indent=4))
    finally:
        sys.path.remove(str(SRC.parent / "bench"))
    assert 100_000 * pod_bytes < limits.MAX_FILE_BYTES
    assert limits.MAX_FILE_BYTES <= limits.MAX_INPUT_BYTES
    assert limits.MAX_PODS == limits.MAX_WORKLOAD_PODS == 150_000
    assert limits.MAX_OBJECTS > limits.MAX_PODS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: " + "[" * 900 + "]" * 900, "nested deeper than 128 levels (gpucap's limit)"),
        (BILLION_LAUGHS, "YAML aliases expand to more than 1,000,000 nodes"),
        ("a: &a [*a]\n", "a recursive YAML alias"),
        (f"a: {BIG}\n", "an integer of more than 4,300 digits"),
    ],
)
def test_the_pure_python_yaml_loader_is_bounded_the_same_way(
    monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    import yaml  # noqa: PLC0415 - only this test swaps the loader

    from gpucap.apis import serde, yamltext  # noqa: PLC0415

    monkeypatch.setattr(yamltext, "Loader", yaml.SafeLoader)  # as without libyaml
    issues = serde.load_text(text, "x.yaml").issues
    assert len(issues) == 1
    assert message in str(issues[0])


def test_lint_says_an_input_limit_is_bad_input_not_a_finding(cli: Run, tmp_path: Path) -> None:
    line = one_error(*cli("lint", write(tmp_path, "big.yaml", deployment(200_000))))
    assert line.endswith(
        "makes 200,000 pods; gpucap plans at most 150,000 per workload (Kubernetes' limit for a whole cluster)"
    )


def test_lint_in_a_removed_working_directory_is_one_line(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pod = write(tmp_path, "pod.yaml", POD)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    line = one_error(*cli("lint", pod))
    assert line == "error: cannot look for a lint config: No such file or directory"


def test_an_alias_bomb_in_a_device_plugin_configmap_is_bounded_too() -> None:
    from gpucap.apis.serde import load_text  # noqa: PLC0415 - the loader itself, not the CLI

    embedded = BILLION_LAUGHS.replace("\n", "\n    ")
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dp}\ndata:\n  any: |\n    "
        + embedded
        + "version: v1\n    sharing: {}\n"
    )
    # Meant as a device-plugin config (version, sharing) but not one YAML can read within the
    # limits: one error naming the limit, reached without expanding the bomb.
    result = load_text(text, "cm.yaml")
    [issue] = result.errors
    assert "invalid device-plugin config: not valid YAML" in str(issue)
    assert "YAML aliases expand to more than 1,000,000 nodes" in str(issue)
