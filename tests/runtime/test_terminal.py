"""`escape`: what reaches a terminal. Laws over any string (nothing dangerous survives; distinct
strings stay distinct; it works character by character), the classes one by one, and what is
left alone (ordinary text, non-ASCII letters). `Terminal`: one line per call, nothing read as
markup."""

from __future__ import annotations

import pytest
from hypothesis import given

from gpucap.runtime.terminal import Terminal, escape

# One character of each class a terminal acts on or does not show, by name.
from tests.runtime.hostile_text import (
    ANY_TEXT,
    CLASSES,
    dangerous,
    unescape,
)


@given(ANY_TEXT)
def test_nothing_dangerous_survives_escaping(s: str) -> None:
    assert not any(dangerous(c) for c in escape(s))


@given(ANY_TEXT)
def test_escaping_loses_nothing_so_distinct_strings_stay_distinct(s: str) -> None:
    assert unescape(escape(s)) == s


@given(ANY_TEXT, ANY_TEXT)
def test_distinct_strings_escape_to_distinct_strings(s: str, t: str) -> None:
    assert (escape(s) == escape(t)) == (s == t)


@given(ANY_TEXT, ANY_TEXT)
def test_escaping_works_character_by_character(s: str, t: str) -> None:
    # So a line escaped whole equals its parts escaped one by one: where a user string sits in
    # a line does not change how it is shown.
    assert escape(s + t) == escape(s) + escape(t)


@given(ANY_TEXT)
def test_escaped_text_is_one_printable_line(s: str) -> None:
    assert escape(s).isprintable()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[2J", "\\x1b[2J"),
        ("a\nb", "a\\nb"),
        ("a\rb", "a\\rb"),
        ("a\tb", "a\\tb"),
        ("\x00", "\\x00"),
        ("\x7f", "\\x7f"),
        ("\x9b", "\\x9b"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\u200b", "\\u200b"),
        ("\ufeff", "\\ufeff"),
        ("\U000e0041", "\\U000e0041"),
        ("\udcff", "\\udcff"),
        ("a\\nb", "a\\\\nb"),  # a backslash the user wrote is doubled: not a newline
    ],
)
def test_dangerous_characters_are_written_as_python_escapes(text: str, shown: str) -> None:
    assert escape(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "gpu-pool",
        "nvidia.com/gpu=present:NoSchedule",
        "café",
        "名前空間",
        "ñandú",
        "Ωmega",
        "emoji 🚀",
        "[bold]:smile:[/]",
        "",
        " spaces  inside ",
    ],
)
def test_ordinary_text_and_non_ascii_letters_are_left_alone(text: str) -> None:
    assert escape(text) == text


@pytest.mark.parametrize(("name", "char"), list(CLASSES.items()), ids=list(CLASSES))
def test_every_class_is_dangerous_and_escaped(name: str, char: str) -> None:
    assert any(dangerous(c) for c in char), name
    assert escape(char) != char


def test_a_terminal_line_is_one_line_whatever_it_holds(capsys: pytest.CaptureFixture[str]) -> None:
    Terminal().line("error: ", "a\nb\x1b[2J", ("bold\u202e", "bold"))
    assert capsys.readouterr().out == "error: a\\nb\\x1b[2Jbold\\u202e\n"


def test_terminal_lines_escape_each_line_and_keep_their_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Terminal(stderr=True).lines(["one", "t\nwo", "", "[red]three:smile:[/red]"])
    assert capsys.readouterr().err == "one\nt\\nwo\n\n[red]three:smile:[/red]\n"


def test_no_lines_print_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    Terminal().lines([])
    assert capsys.readouterr().out == ""
