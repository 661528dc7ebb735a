"""Text for a terminal: user strings escaped so they can neither control nor spoof it.

Names, kinds, label keys and values, image names, file names and the error messages that quote
them come from the user's files. Printed raw, an escape sequence (`\\x1b[2J`) clears the screen,
a newline or carriage return breaks the one-line error promise or overwrites a line, and a
right-to-left override (U+202E) or a zero-width character shows text other than what is there.

`escape` is the rule, Python's own: a character `str.isprintable()` rejects (categories Cc, Cf,
Cs, Co, Cn, Zl, Zp and every space but U+0020: C0 and C1 controls, DEL, bidi embeddings,
overrides and isolates, zero-width characters, the BOM, line and paragraph separators,
surrogates) is written as its Python escape (`\\t`, `\\n`, `\\r`, `\\x1b`, `\\u202e`,
`\\U000e0001`), and a backslash as two, so the escaping is injective: two different strings never
print the same. Everything else, `é` and CJK included, is printed as it is.

`Terminal` is the only way the CLI writes text to stdout and stderr: it takes *lines*, escapes
each one whole, and prints it through Rich with markup, emoji codes and highlighting off, so no
part of a line (ours or the user's) can start another line or be read as markup. The logging
handler of `runtime/logging.py` escapes each record with the same rule. Machine outputs (JSON,
YAML, SARIF) are escaped by their encoders and do not come through here; neither does `gpucap
render`'s stdout, which is the user's own file, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Terminal", "escape", "plain_console"]

# The three controls Python writes by letter; every other escape is numeric.
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}


def _escape_char(c: str) -> str:
    named = _NAMED.get(c)
    if named is not None:
        return named
    if c.isprintable():
        return c
    o = ord(c)
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def escape(text: str) -> str:
    """`text` with every character a terminal would act on, or would not show, escaped (see the
    module docstring); a backslash is doubled. Injective, and character by character:
    `escape(a + b) == escape(a) + escape(b)`."""
    if text.isprintable() and "\\" not in text:
        return text  # the usual case, at C speed
    return "".join(_escape_char(c) for c in text)


def plain_console(*, stderr: bool) -> Console:
    """A Rich console that prints strings as given: no markup (`[x]`), no emoji codes
    (`:smile:`), no highlighting, no wrapping. Styles (colour) are added on a terminal only."""
    from rich.console import Console  # noqa: PLC0415 - Rich only once something is printed

    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=True)


Part = str | tuple[str, str]


class Terminal:
    """Lines of text to stdout or stderr, each escaped whole (`escape`).

    The CLI's `out` and `err` are Terminals; formatters hand them lines (a list, never a string
    joined with newlines), so that a newline inside a user string is escaped instead of starting
    a line of its own.
    """

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._plain: Console | None = None

    @property
    def _console(self) -> Console:
        # Made at the first line, not when the CLI module is imported: importing Rich is a good
        # part of a start-up that `gpucap --version` should not pay.
        if self._plain is None:
            self._plain = plain_console(stderr=self._stderr)
        return self._plain

    def line(self, *parts: Part, style: str | None = None) -> None:
        """One line: the parts joined (a `(text, style)` part is styled on a terminal)."""
        from rich.text import Text  # noqa: PLC0415 - see `_console`

        text = Text(style=style or "")
        for part in parts:
            if isinstance(part, tuple):
                text.append(escape(part[0]), style=part[1])
            else:
                text.append(escape(part))
        self._console.print(text)

    def lines(self, lines: Iterable[str], style: str | None = None) -> None:
        """Each string as one line (one print: a plan table of thousands of lines stays fast)."""
        from rich.text import Text  # noqa: PLC0415 - see `_console`

        escaped = [escape(line) for line in lines]
        if escaped:
            self._console.print(Text("\n".join(escaped), style=style or ""))
