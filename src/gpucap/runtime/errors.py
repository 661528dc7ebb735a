"""`GpucapInputError`: the root of every error that means "the input is wrong".

httpx gives its errors one root (`HTTPError`, `_exceptions.py`) so that a caller can catch them
all in one place; gpucap does the same for bad input. Each class a module raises for input it
cannot use (a file that cannot be read, a catalog, a scenario, a lint config, an AMI lookup)
derives from this root as well as from the builtin it always was (`ValueError`, `LookupError`),
so code that caught the builtin still does. Its message is one line that names the file,
document and field, or the option.

Caught once, by the CLI's boundary (`cli/app.py`'s `LazyGroup`), which prints `error: <message>`
and exits 2; nothing below the CLI catches the root. It lives in `runtime/`, the bottom layer,
so that every layer can derive from it (pyproject's import contracts)."""

from __future__ import annotations

__all__ = ["GpucapInputError"]


class GpucapInputError(Exception):
    """Input gpucap cannot use; `str(e)` is the one line the user reads (without `error: `)."""

    def lines(self) -> tuple[str, ...]:
        """The lines the boundary prints, each after `error: `: one per problem (an error that
        gathers several, such as a scenario's, has one line each)."""
        return (str(self),)
