"""The `gpucap` command's entry point: `console` (the installed script) and `main`.

The commands are `cli/app.py`'s typer app (one module per command, imported on use). This
module is the outer boundary: a usage error becomes one line (exit 2), an output that cannot be
written one line (exit 2), a closed pipe silence (exit 1), and any unexpected failure one line
(exit 70): the user never sees a traceback. Bad input inside a command (every
`GpucapInputError`) is the app's own boundary (`LazyGroup.invoke`). Exit codes follow
contract.md: 0 done, 1 findings (lint), 2 bad input or usage.
"""

from __future__ import annotations

import ast
import errno
import gc
import os
import re
import sys
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import typer
from typer._click import exceptions as click_errors  # typer's own copy of click raises these
from typer.core import TyperGroup

from gpucap.apis.reading import os_reason
from gpucap.cli.app import app
from gpucap.cli.terminals import EXIT_BAD_INPUT, EXIT_OK, err

if TYPE_CHECKING:
    from gpucap.cli.demo import DEMO_VALUES

__all__ = ["DEMO_VALUES", "app", "console", "main", "usage_error_line"]

# numpy's OpenBLAS starts a thread per core when numpy is imported. gpucap's arrays are masks
# and short vectors worked on one core (no BLAS call), so the pool only cost start-up: ~40 ms
# of the workshop plan. One thread unless the user asked for more (before numpy is imported).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The status of a run whose reader closed the pipe (`gpucap plan | head`): click's own, which it
# gives when the pipe closes while a command writes; the same when it closes at the last flush.
EXIT_PIPE_CLOSED = 1
# Errors of a write that the output's medium refused (a full disk, a quota, a file size limit,
# a device error): the run was fine, its output could not be kept.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def __getattr__(name: str) -> Any:
    """`DEMO_VALUES`, re-exported from `cli/demo.py` when asked for (not at start-up)."""
    if name == "DEMO_VALUES":
        from gpucap.cli.demo import DEMO_VALUES  # noqa: PLC0415

        return DEMO_VALUES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _option_name(param: Any) -> str:
    """How an error names a parameter: its long option (`--output`), or an argument in capitals
    as the README writes it (`FILES`)."""
    if param is None:
        return "?"
    if getattr(param, "param_type_name", "") == "argument":
        return str(param.name or "?").upper()
    opts = list(getattr(param, "opts", []) or [])
    return next((o for o in opts if o.startswith("--")), opts[0] if opts else str(param.name))


def _clause(message: str) -> str:
    """Click's sentence as a clause after `error: X: ` (no capital, no final period)."""
    text = message.strip().rstrip(".")
    if text[:1].isupper() and text[1:2].islower():
        text = text[0].lower() + text[1:]
    return text


# Click's own messages for the usage errors that carry no structure (plain UsageError), and for
# BadOptionUsage, whose option is known but whose text says what is wrong.
_NO_SUCH_COMMAND = re.compile(r"No such command ('.*'|\".*\")\.(?:\s*Did you mean (.*)\?)?", re.S)
_EXTRA_ARGS = re.compile(r"Got unexpected extra argument(?:s|\(s\))? \((.*)\)", re.S)
_OPTION_USAGE = re.compile(r"Option ('.*'|\".*\") (.*)", re.S)
_OPTION_PROBLEMS = {
    "requires an argument": "requires a value",
    "does not take a value": "takes no value",
}


def usage_error_line(e: click_errors.UsageError) -> str:
    """A click/typer usage error as gpucap's one line, naming the option or argument:
    `error: --explain: requires a value`, `error: FILES: missing argument (...)`,
    `error: --regio: no such option (did you mean --region?)`. Called by `main`."""
    if isinstance(e, click_errors.MissingParameter):
        kind = e.param_type or getattr(e.param, "param_type_name", "parameter")
        help_ = str(getattr(e.param, "help", "") or "").strip().rstrip(".")
        return f"{_option_name(e.param)}: missing {kind}" + (f" ({help_})" if help_ else "")
    if isinstance(e, click_errors.BadParameter):
        hint = e.param_hint
        name = (
            _option_name(e.param)
            if hint is None
            else (hint if isinstance(hint, str) else " / ".join(hint))
        )
        return f"{name}: {_clause(e.message)}"
    if isinstance(e, click_errors.NoSuchOption):
        near = " or ".join(sorted(e.possibilities or []))
        return f"{e.option_name}: no such option" + (f" (did you mean {near}?)" if near else "")
    if isinstance(e, click_errors.BadOptionUsage):
        m = _OPTION_USAGE.fullmatch(e.message.strip())
        problem = _clause(m.group(2)) if m else _clause(e.message)
        return f"{e.option_name}: {_OPTION_PROBLEMS.get(problem, problem)}"
    message = e.format_message()
    if m := _NO_SUCH_COMMAND.fullmatch(message.strip()):
        name = ast.literal_eval(m.group(1))
        if m.group(2):
            return f"{name}: no such command (did you mean {m.group(2)}?)"
        ctx = e.ctx
        group = ctx.command if ctx is not None else None
        names = group.list_commands(ctx) if isinstance(group, TyperGroup) and ctx else []
        return f"{name}: no such command" + (f" (commands: {', '.join(names)})" if names else "")
    if m := _EXTRA_ARGS.fullmatch(message.strip()):
        return f"{m.group(1)}: unexpected extra argument(s)"
    return _clause(message)


_YOUNG_COLLECTION_EVERY = 10_000


def console() -> None:
    """The `gpucap` console script (pyproject's `[project.scripts]`): `main`, then an exit
    without the interpreter's last full garbage collection. At exit CPython collects every
    generation before the process goes; a command's objects (its imports, input, catalog and
    plan) are all alive then, so that walk was pure cost: about a sixth of `gpucap plan` on the
    workshop example. Frozen objects are left out of it and are freed with the process.
    In-process callers (the tests) call `main`, which leaves the collector as it found it."""
    try:
        main()
    finally:
        gc.freeze()


def _discard_stdout() -> None:
    """Point stdout at /dev/null: what is still in its buffer would fail again when the
    interpreter flushes it at exit (and print a warning there). In-process callers (the tests)
    capture stdout in memory: nothing to do."""
    try:
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    os.dup2(null, fd)
    os.close(null)


def _say_once(line: str) -> None:
    """One line on stderr, unless stderr cannot take it either (then the status says it)."""
    with suppress(OSError):
        err.line(line)


def main() -> None:
    """Entry point of the command line (the installed script reaches it through `console`):
    run the app; turn a usage error into one line (exit 2), an output that cannot be written (a
    full disk) into one line (exit 2), a closed pipe into silence (exit 1, as click does), and
    any unexpected failure into one line (exit 70). The one place click's own error output (a
    usage line, a hint and the message, on several lines) is replaced."""
    # A command builds its world (imports, the bundled catalog, the input) before it makes any
    # garbage, and all of it survives: at the default threshold (a young collection every 700
    # allocations) the collector spent a seventh of `gpucap plan`'s start-up walking objects
    # that live on. Every 10,000 allocations instead; restored for in-process callers (tests).
    previous = gc.get_threshold()
    gc.set_threshold(_YOUNG_COLLECTION_EVERY, *previous[1:])
    try:
        code = app(standalone_mode=False)
        # Written out here, where a failure is still this function's to report: left to the
        # interpreter's exit, a full disk or a closed pipe would be a traceback-like warning.
        sys.stdout.flush()
    except click_errors.NoArgsIsHelpError as e:
        e.show()  # `gpucap` or `gpucap ami` alone: the help, as asked for (exit 2, as click)
        sys.exit(EXIT_BAD_INPUT)
    except click_errors.UsageError as e:
        err.line(f"error: {usage_error_line(e)}")
        sys.exit(EXIT_BAD_INPUT)
    except click_errors.ClickException as e:
        err.line(f"error: {_clause(e.format_message())}")
        sys.exit(e.exit_code)
    except typer.Abort:
        err.line("error: aborted")
        sys.exit(1)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        err.line("interrupted")
        sys.exit(130)
    except OSError as e:
        if e.errno == errno.EPIPE:
            _discard_stdout()  # the reader has gone (`gpucap plan | head`): nothing to say
            sys.exit(EXIT_PIPE_CLOSED)
        if e.errno in _WRITE_ERRNOS:
            _discard_stdout()
            _say_once(f"error: cannot write the output: {os_reason(e)}")
            sys.exit(EXIT_BAD_INPUT)
        _say_once(f"gpucap: internal error: {type(e).__name__}: {e} (please report this)")
        sys.exit(70)
    except Exception as e:  # the promise is "never a traceback"; say what broke in one line
        err.line(f"gpucap: internal error: {type(e).__name__}: {e} (please report this)")
        sys.exit(70)
    finally:
        gc.set_threshold(*previous)
    # standalone_mode=False returns the code of a typer.Exit (or the command's value, None).
    sys.exit(code if isinstance(code, int) else EXIT_OK)
