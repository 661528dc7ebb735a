"""Reading input: a file, a pipe or stdin -> text, within the limits; JSON -> data, bounded.

Every file gpucap reads from the user goes through here: manifests (`apis/serde.load_paths`),
`render`'s inputs, `--catalog` and `--prices` (`cli/catalogs.py`), the lint config
(`lint/config.py`). Reading is in bounded chunks, so an endless stream (`/dev/zero`, `yes |`)
stops at `MAX_FILE_BYTES` instead of filling memory; text is UTF-8, decoded as it arrives, so a
binary or Latin-1 file is refused at its first bad byte, named by line and column. Whatever
fails is an `InputError` whose message is one line naming the file.

FIFOs and process substitution (`gpucap validate <(helm template ...)`) are read like files; a
named FIFO nobody writes to reads as empty rather than blocking forever.

A directory is walked for its manifest files (`manifest_files`) with a stack, not recursion, so
a tree 1,000 levels deep is no deeper for Python than a flat one, and within a count of entries
(`MAX_DIRECTORY_ENTRIES`), so `gpucap validate /` ends with one line.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TextIO

from gpucap.apis.limits import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INT_DIGITS,
    Budget,
    InputLimitError,
    size_text,
)
from gpucap.runtime.errors import GpucapInputError

__all__ = [
    "CHUNK",
    "MANIFEST_SUFFIXES",
    "InputError",
    "decode",
    "load_json",
    "manifest_files",
    "read_path",
    "read_stream",
]

# The files of a directory that are read as manifests.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

CHUNK = 1 << 20

_BOMS = {
    codecs.BOM_UTF32_LE: "UTF-32",
    codecs.BOM_UTF32_BE: "UTF-32",
    codecs.BOM_UTF16_LE: "UTF-16",
    codecs.BOM_UTF16_BE: "UTF-16",
}


class InputError(GpucapInputError, ValueError):
    """Input gpucap cannot read; the message is one line and starts with the file's name."""


def os_reason(err: OSError) -> str:
    """`File name too long`, `Permission denied`...: an OSError as the one-line reason."""
    return err.strerror or errno.errorcode.get(err.errno or 0, "") or type(err).__name__


def read_path(path: str, budget: Budget | None = None) -> str:
    """The text of the file (or FIFO, or device) at `path`, bounded and UTF-8."""
    try:
        # O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever; it is
        # cleared at once, so the reads below block as usual.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise InputError(f"{path}: cannot read: {os_reason(err)}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path}: cannot read: {os.strerror(errno.EISDIR)}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", buffering=0, closefd=True) as stream:
            fd = -1
            return read_stream(stream, path, budget)
    except OSError as err:
        raise InputError(f"{path}: cannot read: {os_reason(err)}") from None
    finally:
        if fd >= 0:
            os.close(fd)


def manifest_files(root: str, budget: Budget | None = None) -> list[Path]:
    """Every `*.yaml`, `*.yml` and `*.json` file under the directory `root`, at any depth, in no
    particular order (callers sort). As `Path.rglob` did before: a symlink to a file counts, a
    symlink to a directory is not followed (no loops), a subdirectory that denies reading is
    skipped. Any other failure (a directory removed during the walk, a path too long) is an
    InputError naming the directory, and so is walking more than MAX_DIRECTORY_ENTRIES entries."""
    budget = Budget() if budget is None else budget
    base = Path(root)
    found: list[Path] = []
    folders = [base]
    while folders:
        folder = folders.pop()
        where = "" if folder is base else f" {folder}"
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    budget.charge_entry()
                    path = folder / entry.name
                    if _is_directory(entry):
                        folders.append(path)
                    elif path.suffix.lower() in MANIFEST_SUFFIXES and _is_file(entry):
                        found.append(path)
        except InputLimitError as err:
            raise InputError(f"{root}: {err}") from None
        except PermissionError as err:
            if folder is base:
                raise InputError(f"{root}: cannot read the directory: {os_reason(err)}") from None
        except OSError as err:
            raise InputError(
                f"{root}: cannot read the directory{where}: {os_reason(err)}"
            ) from None
    return found


def _is_directory(entry: os.DirEntry[str]) -> bool:
    """A directory to descend into: not a symlink to one."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    """A regular file, or a symlink to one."""
    try:
        return entry.is_file()
    except OSError:
        return False


def read_stream(stream: BinaryIO | TextIO, name: str, budget: Budget | None = None) -> str:
    """Read `stream` (stdin: its binary buffer when it has one) to the end, in chunks."""
    raw = getattr(stream, "buffer", None)
    if raw is not None:
        return _read_binary(raw, name, budget)
    if isinstance(stream.read(0), str):
        return _read_text(stream, name, budget)  # type: ignore[arg-type]
    return _read_binary(stream, name, budget)  # type: ignore[arg-type]


def _too_big(name: str) -> InputError:
    return InputError(
        f"{name}: larger than {size_text(MAX_FILE_BYTES)} (gpucap's limit for one file); "
        "is it an endless stream?"
    )


def _read_binary(stream: BinaryIO, name: str, budget: Budget | None) -> str:
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    parts: list[str] = []
    size = 0
    newlines = 0
    last_line_start = 0  # offset of the byte after the last newline seen so far
    first = True
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        if first:
            first = False
            for bom, encoding in _BOMS.items():
                if chunk.startswith(bom):
                    raise InputError(
                        f"{name}: is {encoding} (byte order mark {bom.hex(' ').upper()}), not "
                        "UTF-8: convert it (PowerShell's `>` writes UTF-16)"
                    )
        if size + len(chunk) > MAX_FILE_BYTES:
            raise _too_big(name)
        if budget is not None:
            try:
                budget.charge_bytes(len(chunk))
            except InputLimitError as err:
                raise InputError(f"{name}: {err}") from None
        nul = chunk.find(b"\x00")
        try:
            if nul >= 0:
                # Checked first: a binary file (or /dev/zero) is refused at its first NUL.
                decoder.decode(chunk[:nul])
                raise _bad_byte(name, chunk, nul, size, newlines, last_line_start, "binary")
            parts.append(decoder.decode(chunk))
        except UnicodeDecodeError as err:
            raise _bad_byte(name, chunk, err.start, size, newlines, last_line_start) from None
        count = chunk.count(b"\n")
        if count:
            newlines += count
            last_line_start = size + chunk.rfind(b"\n") + 1
        size += len(chunk)
    try:
        parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8: the file ends inside a character") from None
    return "".join(parts)


def _bad_byte(  # noqa: PLR0917 - where the byte is, as the reader counts it
    name: str,
    chunk: bytes,
    at: int,
    offset: int,
    newlines: int,
    line_start: int,
    what: str = "not UTF-8",
) -> InputError:
    """The error for the bad byte at `chunk[at]`: its value, line and column (1-based)."""
    before = chunk[:at]
    line = newlines + before.count(b"\n") + 1
    nl = before.rfind(b"\n")
    start = offset + nl + 1 if nl >= 0 else line_start
    column = offset + at - start + 1
    byte = chunk[at]
    if what == "binary":
        return InputError(
            f"{name}: line {line} column {column}: byte 0x{byte:02x} (NUL): a binary file, "
            "not YAML or JSON text"
        )
    return InputError(
        f"{name}: line {line} column {column}: byte 0x{byte:02x} is not UTF-8 "
        "(gpucap reads UTF-8 text; a Latin-1 file? convert it with iconv -f latin1 -t utf-8)"
    )


def _read_text(stream: TextIO, name: str, budget: Budget | None) -> str:
    """A text stream (tests hand `load_paths` a StringIO): bounded by characters."""
    parts: list[str] = []
    size = 0
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise _too_big(name)
        if budget is not None:
            try:
                budget.charge_bytes(len(chunk))
            except InputLimitError as err:
                raise InputError(f"{name}: {err}") from None
        parts.append(chunk)
    return "".join(parts)


def decode(data: bytes, name: str) -> str:
    """UTF-8 `data` as text, or an InputError naming the first bad byte's line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _bad_byte(name, data, err.start, 0, 0, 0) from None


# ---- JSON -------------------------------------------------------------------------------------
def load_json(text: str, name: str) -> object:
    """Parse JSON as the API server would accept it, within the limits: integers of at most
    MAX_INT_DIGITS digits, no NaN or Infinity (not JSON), at most MAX_DEPTH levels."""

    def bounded_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise _JSONLimitError(_int_message(len(digits.lstrip("-"))), text.find(digits))
        return int(digits)

    def no_constant(word: str) -> object:
        raise _JSONLimitError(f"{word} is not a JSON number", text.find(word))

    try:
        data = json.loads(text, parse_int=bounded_int, parse_constant=no_constant)
    except json.JSONDecodeError as err:
        raise InputError(
            f"{name}: not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})"
        ) from None
    except _JSONLimitError as err:
        raise InputError(f"{name}: {_where(text, err.at)}{err}") from None
    except RecursionError:
        raise InputError(f"{name}: {depth_message()}") from None
    check_depth(data, lambda: name)
    return data


class _JSONLimitError(ValueError):
    def __init__(self, message: str, at: int) -> None:
        super().__init__(message)
        self.at = at


def _where(text: str, at: int) -> str:
    if at < 0:
        return ""
    line = text.count("\n", 0, at) + 1
    return f"line {line} column {at - (text.rfind(chr(10), 0, at) + 1) + 1}: "


def _int_message(digits: int) -> str:
    if digits > 4300:  # what Python's int() refuses: the exact count is not known then
        return f"an integer of more than 4,300 digits (gpucap reads at most {MAX_INT_DIGITS})"
    return f"an integer of {digits:,} digits (gpucap reads at most {MAX_INT_DIGITS})"


def depth_message() -> str:
    """The error for input nested deeper than MAX_DEPTH."""
    return f"nested deeper than {MAX_DEPTH} levels (gpucap's limit)"


def int_message(digits: int) -> str:
    """The error for an integer longer than MAX_INT_DIGITS."""
    return _int_message(digits)


def check_depth(data: object, name: Callable[[], str]) -> None:
    """Raise an InputError if `data` (parsed JSON) nests deeper than MAX_DEPTH; iterative."""
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: object = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= MAX_DEPTH:
            raise InputError(f"{name()}: {depth_message()}")
        stack.extend((c, depth + 1) for c in children)  # type: ignore[attr-defined]


__all__ += ["check_depth", "depth_message", "int_message", "os_reason"]
