"""User strings never reach the terminal raw: every command, every channel a user string takes.

A hostile string (an escape sequence that clears the screen, NUL, a newline followed by a fake
line, a carriage return, DEL, a C1 control, bidi overrides and isolates, zero-width characters)
is put in one place of a manifest at a time (name, namespace, labels, image, kind, a field name,
a value an error quotes, the file name) and the manifest goes through validate, plan,
plan --explain, lint (text, JSON, SARIF) and render. Whatever the verdict (accepted, warned
about, rejected), no dangerous character reaches stdout or stderr, every stderr line is one
whole `error:`/`warning:` line, and the injected fake line never starts a line.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpucap.apis.placeholders import substitute
from gpucap.cli.main import DEMO_VALUES, main
from gpucap.runtime.terminal import escape
from tests.runtime.hostile_text import CLASSES, dangerous

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"

# Every class at once (but a lone surrogate, which YAML cannot hold: a file name can, below);
# after the newline and the carriage return, text that would pass for a line of gpucap's own if
# they were printed raw.
INJECTED = "INJECTED error: all good"
HOSTILE = (
    "x"
    + "".join(c for name, c in CLASSES.items() if name != "lone surrogate")
    + "\n"
    + INJECTED
    + "\r"
    + INJECTED
)

# What a stderr line may start with: each error or warning is one whole line.
STDERR_LINE = ("error: ", "warning: ", "note: ")


def run(args: list[str], capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch) -> Any:
    """`gpucap ARGS` through the console-script entry point: (exit code, stdout, stderr)."""
    mp.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    captured = capsys.readouterr()
    return (code if isinstance(code, int) else 0), captured.out, captured.err


def assert_safe(code: int, out: str, err: str) -> None:
    assert code in (0, 1, 2), err
    for stream in (out, err):
        raw = sorted({c for c in stream if dangerous(c) and c != "\n"})
        assert not raw, f"raw {raw!r} in {stream!r}"
        assert not any(line.startswith("INJECTED") for line in stream.splitlines()), stream
    for line in err.splitlines():
        assert line.startswith(STDERR_LINE) or line.endswith("nothing was validated"), line
    assert "Traceback" not in err


def _deployment() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((WORKSHOP / "vllm.yaml").read_text(encoding="utf-8"))
    doc["metadata"]["name"] = "web"
    # No toleration: lint (POD002) and plan (pending) both name the Deployment and its pod.
    del doc["spec"]["template"]["spec"]["tolerations"]
    return doc


def _name(doc: dict[str, Any]) -> None:
    doc["metadata"]["name"] = "web" + HOSTILE


def _namespace(doc: dict[str, Any]) -> None:
    doc["metadata"]["namespace"] = "ns" + HOSTILE


def _label_key(doc: dict[str, Any]) -> None:
    doc["metadata"]["labels"] = {"k" + HOSTILE: "v"}
    doc["spec"]["template"]["metadata"]["labels"]["k" + HOSTILE] = "v"


def _label_value(doc: dict[str, Any]) -> None:
    doc["metadata"]["labels"] = {"k": "v" + HOSTILE}
    doc["spec"]["template"]["metadata"]["labels"]["k"] = "v" + HOSTILE


def _selector(doc: dict[str, Any]) -> None:
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"k" + HOSTILE: "v" + HOSTILE}


def _image(doc: dict[str, Any]) -> None:
    doc["spec"]["template"]["spec"]["containers"][0]["image"] = "img" + HOSTILE


def _kind(doc: dict[str, Any]) -> None:
    doc["kind"] = "Deployment" + HOSTILE


def _api_version(doc: dict[str, Any]) -> None:
    doc["apiVersion"] = "apps/v1" + HOSTILE


def _field_name(doc: dict[str, Any]) -> None:
    doc["spec"]["template"]["spec"]["containers"][0]["f" + HOSTILE] = 1


def _enum_value(doc: dict[str, Any]) -> None:
    doc["spec"]["template"]["spec"]["restartPolicy"] = "Always" + HOSTILE


def _quantity(doc: dict[str, Any]) -> None:
    doc["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1" + HOSTILE


def _nothing(doc: dict[str, Any]) -> None:
    pass


# channel -> (how the hostile string gets into the manifest, whether the file name holds it)
CHANNELS: dict[str, tuple[Callable[[dict[str, Any]], None], bool]] = {
    "name": (_name, False),
    "namespace": (_namespace, False),
    "label key": (_label_key, False),
    "label value": (_label_value, False),
    "nodeSelector": (_selector, False),
    "image": (_image, False),
    "kind": (_kind, False),
    "apiVersion": (_api_version, False),
    "field name": (_field_name, False),
    "value an error quotes": (_enum_value, False),
    "quantity": (_quantity, False),
    "file name": (_nothing, True),
}

# Where `validate` must show the string (escaped), in a summary, a warning or an error: the test
# would pass vacuously if the string never reached the output. (An error message that quotes a
# value with repr() shows it escaped twice: `'a\\x1b'`. Still one safe line.)
SHOWN_BY_VALIDATE = {
    "name",
    "namespace",
    "kind",
    "apiVersion",
    "field name",
    "quantity",
    "file name",
}


def _cluster(tmp_path: Path, channel: str) -> tuple[Path, Path, dict[str, Any]]:
    """The workshop (placeholders filled) and one hostile Deployment, in a directory."""
    root = tmp_path / "cluster"
    root.mkdir()
    for p in WORKSHOP.glob("*.yaml"):
        (root / p.name).write_text(substitute(p.read_text(), DEMO_VALUES).text)
    mutate, in_file_name = CHANNELS[channel]
    doc = _deployment()
    mutate(doc)
    # A file name holds any character but NUL (and `/`, which HOSTILE has not).
    hostile = root / (
        ("web" + HOSTILE.replace("\x00", "") + ".yaml") if in_file_name else "web.yaml"
    )
    hostile.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return root, hostile, doc


COMMANDS: dict[str, Callable[[Path, Path, dict[str, Any]], list[str]]] = {
    "validate": lambda root, f, doc: ["validate", str(root)],
    "validate -o yaml": lambda root, f, doc: ["validate", str(root), "-o", "yaml"],
    "plan": lambda root, f, doc: ["plan", str(root)],
    "plan -o yaml": lambda root, f, doc: ["plan", str(root), "-o", "yaml"],
    "plan --explain": lambda root, f, doc: [
        "plan",
        str(root),
        "--explain",
        f"{doc['metadata'].get('namespace', 'default')}/{doc['metadata']['name']}-0",
    ],
    "lint": lambda root, f, doc: ["lint", str(root)],
    "lint -o sarif": lambda root, f, doc: ["lint", str(root), "-o", "sarif"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("channel", list(CHANNELS))
def test_no_user_string_reaches_the_terminal_raw(
    channel: str,
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, hostile, doc = _cluster(tmp_path, channel)
    code, out, err = run(COMMANDS[command](root, hostile, doc), capsys, monkeypatch)
    assert_safe(code, out, err)
    if command.startswith("validate") and "-o" not in command and channel in SHOWN_BY_VALIDATE:
        assert INJECTED in out + err


def test_the_plan_table_and_explanation_show_a_hostile_pod_escaped_on_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _, _ = _cluster(tmp_path, "name")
    code, out, _ = run(["plan", str(root)], capsys, monkeypatch)
    pending = [line for line in out.splitlines() if line.startswith("  default/web")]
    if code == 0:  # (a validation that rejects such names exits 2 before planning)
        assert len(pending) == 1
        assert pending[0].startswith(f"  default/{escape('web' + HOSTILE)}-0: ")
        code, out, _ = run(
            ["plan", str(root), "--explain", f"default/web{HOSTILE}-0"], capsys, monkeypatch
        )
        assert code == 0
        assert out.splitlines()[0].startswith(f"pod default/{escape('web' + HOSTILE)}-0: ")


IN_YAML = {k: v for k, v in CLASSES.items() if k != "lone surrogate"}  # YAML cannot hold it


@pytest.mark.parametrize(("name", "char"), list(IN_YAML.items()), ids=list(IN_YAML))
def test_each_dangerous_class_in_a_name_is_escaped_by_validate(
    name: str,
    char: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = _deployment()
    doc["metadata"]["name"] = f"web{char}x"
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, out, err = run(["validate", str(path)], capsys, monkeypatch)
    assert_safe(code, out, err)
    assert escape(char) in out + err


def test_a_file_name_that_is_not_utf8_is_shown_escaped_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Linux file names are bytes; Python decodes an invalid one to lone surrogates, which no
    # terminal encoding can print (before: UnicodeEncodeError, exit 70).
    raw = tmp_path / "bad\udcff.yaml"
    raw.write_text(yaml.safe_dump(_deployment()), encoding="utf-8")
    code, out, err = run(["validate", str(raw)], capsys, monkeypatch)
    assert (code, err) == (0, "")
    assert "bad\\udcff.yaml[0] Deployment/default/web: " in out
    assert_safe(code, out, err)


def test_an_unknown_kind_warning_is_one_escaped_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "K\x1b[2J\nfake", "metadata": {}}))
    code, out, err = run(["validate", str(path)], capsys, monkeypatch)
    assert code == 0
    assert err == "warning: ignored kinds gpucap does not use: K\\x1b[2J\\nfake\n"
    assert_safe(code, out, err)


def test_render_writes_the_users_file_byte_for_byte_control_characters_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `render` outputs the user's own file: escaping it would change what gets applied. (Before:
    # a carriage return, so a CRLF file, came out as a newline: the file was read in Python's
    # universal-newlines mode.)
    # (Without NUL: a file holding one is refused as binary, tests/cli/test_hostile_input.py.)
    text = f"metadata:\n  name: 'a{HOSTILE.replace(chr(0), '')}'\n  annotations: {{x: '\\e\t${{V}}'}}\n"
    path = tmp_path / "f.yaml"
    path.write_text(text, encoding="utf-8", newline="")
    code, out, err = run(["render", str(path), "--set", "V=1"], capsys, monkeypatch)
    assert (code, err) == (0, "")
    assert out == text.replace("${V}", "1")


def test_render_keeps_crlf_line_endings_from_a_file_and_from_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "a: ${V}\r\nb: 2\r\n"
    path = tmp_path / "crlf.yaml"
    path.write_bytes(text.encode())
    assert run(["render", str(path), "--set", "V=1"], capsys, monkeypatch)[1] == "a: 1\r\nb: 2\r\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode()), "utf-8"))
    assert run(["render", "-", "--set", "V=1"], capsys, monkeypatch)[1] == "a: 1\r\nb: 2\r\n"


def test_render_errors_name_a_hostile_file_on_one_escaped_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"f{HOSTILE.replace(chr(0), '')}.yaml"
    path.write_text("metadata: {name: ${UNSET_VARIABLE_FOR_THIS_TEST}}\n", encoding="utf-8")
    monkeypatch.delenv("UNSET_VARIABLE_FOR_THIS_TEST", raising=False)
    code, out, err = run(["render", str(path)], capsys, monkeypatch)
    assert code == 2
    assert err == f"error: {escape(str(path))}: missing variable(s): UNSET_VARIABLE_FOR_THIS_TEST\n"
    assert_safe(code, out, err)


def test_a_set_option_with_control_characters_is_quoted_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n", encoding="utf-8")
    code, _, err = run(["render", str(path), "--set", "\x1b[2J\nx"], capsys, monkeypatch)
    assert (code, err) == (2, "error: --set '\\x1b[2J\\nx' must be KEY=VALUE\n")


def test_rich_markup_and_emoji_codes_in_user_strings_are_printed_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = {"apiVersion": "v1", "kind": "[bold red]:warning:[/]", "metadata": {}}
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, _, err = run(["validate", str(path)], capsys, monkeypatch)
    assert code == 0
    assert err == "warning: ignored kinds gpucap does not use: [bold red]:warning:[/]\n"


def test_log_records_are_one_escaped_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from gpucap.runtime.logging import configure, get_logger  # noqa: PLC0415

    configure(0)
    get_logger("gpucap.test").warning("leaving out %s", "p5.48xlarge\x1b[2J\nfake")
    assert capsys.readouterr().err == (
        "warning: gpucap.test: leaving out p5.48xlarge\\x1b[2J\\nfake\n"
    )


# Option values quoted back in errors, for the commands whose input is not a manifest. (An
# argument cannot hold NUL: the operating system ends it there.)
ARG = HOSTILE.replace("\x00", "")
OPTION_VALUES = [
    ["ami", "resolve", "--offline", "--kubernetes-version", "1.3" + ARG],
    ["ami", "resolve", "--offline", "--family", "al" + ARG],
    ["ami", "list", "--offline", "--variant", "nv" + ARG],
    ["ami", "diff", "v2025" + ARG, "v20250410"],
    ["lint", "--explain", "GPU" + ARG],
    ["lint", "--image-size", "img" + ARG, str(WORKSHOP)],
    ["lint", "--config", "cfg" + ARG, str(WORKSHOP)],
    ["plan", str(WORKSHOP), "--explain", "pod" + ARG],
    ["plan", str(WORKSHOP), "--catalog", "cat" + ARG],
    ["plan", str(WORKSHOP), "--region", "us" + ARG],
    ["render", str(WORKSHOP / "vllm.yaml"), "--only", "V" + ARG],
    ["validate", str(WORKSHOP), "-o", "t" + ARG],
    ["validate", "missing" + ARG],
    ["plan", str(WORKSHOP), "--" + ARG],
]


@pytest.mark.parametrize(
    "args",
    OPTION_VALUES,
    ids=[" ".join(a[:3]).replace(str(WORKSHOP), "W")[:40] for a in OPTION_VALUES],
)
def test_an_option_value_quoted_in_an_error_is_one_escaped_line(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(args, capsys, monkeypatch)
    assert code == 2
    assert_safe(code, out, err)
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1
    assert "\\x1b[2J" in errors[0]  # the value, quoted, escaped
