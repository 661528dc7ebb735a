"""Text that would control a terminal, by class, shared by the terminal tests (not a test
module)."""

from __future__ import annotations

from hypothesis import strategies as st

# One character of each class a terminal acts on or does not show, by name.
CLASSES = {
    "escape sequence": "\x1b[2J",
    "NUL": "\x00",
    "newline": "\n",
    "carriage return": "\r",
    "tab": "\t",
    "BEL": "\x07",
    "backspace": "\x08",
    "DEL": "\x7f",
    "C1 CSI": "\x9b",
    "C1 NEL": "\x85",
    "bidi embedding": "\u202a",
    "bidi override": "\u202e",
    "bidi isolate": "\u2066",
    "bidi pop isolate": "\u2069",
    "left-to-right mark": "\u200e",
    "arabic letter mark": "\u061c",
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "word joiner": "\u2060",
    "byte order mark": "\ufeff",
    "soft hyphen": "\xad",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "no-break space": "\xa0",
    "tag character": "\U000e0041",
    "lone surrogate": "\udcff",
}


def dangerous(c: str) -> bool:
    """The classes of the issue, stated independently of `str.isprintable` (which `escape`
    uses): C0, DEL, C1, bidi controls, zero-width and invisible format characters, line and
    paragraph separators, spaces other than U+0020, tag characters, surrogates."""
    o = ord(c)
    return (
        o < 0x20
        or 0x7F <= o <= 0xA0
        or o in (0xAD, 0x061C, 0x180E, 0xFEFF, 0x2028, 0x2029)
        or 0x200B <= o <= 0x200F
        or 0x202A <= o <= 0x202E
        or 0x2060 <= o <= 0x206F
        or 0xD800 <= o <= 0xDFFF
        or 0xE0000 <= o <= 0xE007F
    )


def unescape(text: str) -> str:
    """The inverse of `escape` (Python's own string-escape decoder, on the non-Latin-1
    characters first written as escapes): used to show that `escape` loses nothing."""
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")


# Any code point (surrogates included), with the dangerous ones and the backslash made common.
ANY_TEXT = st.text(
    st.one_of(
        st.characters(codec=None, exclude_categories=()),
        st.sampled_from([*"".join(CLASSES.values()), "\\", "x", "u", "1", "b"]),
    )
)
