"""Bad input at the CLI: `BadInputError`, and `map_exceptions` for errors that come from elsewhere.

Every input error derives from `runtime.errors.GpucapInputError`; the boundary (`cli/app.py`'s
`LazyGroup`) prints it as `error: <message>` and exits 2, once, for every command. A command
that finds a problem with its own options raises `BadInputError` with the line. Code whose
failures are not input errors by type (boto3's `EC2APIError`, a plain ValueError from an AMI
lookup) is wrapped in `map_exceptions`, which turns the listed types into `BadInputError` where
they cross into the CLI, as httpx's `_transports/default.py` `map_httpcore_exceptions` turns
httpcore's errors into its own at the transport."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from gpucap.runtime.errors import GpucapInputError

__all__ = ["BadInputError", "map_exceptions"]


class BadInputError(GpucapInputError):
    """An input error the CLI finds (an option's value, a combination of options); the
    message is the line after `error: `."""


@contextmanager
def map_exceptions(mapping: Mapping[type[Exception], Callable[[Exception], str]]) -> Iterator[None]:
    """Run the block; an exception of a type in `mapping` becomes `BadInputError(mapping[type](e))`
    (the first listed type it is an instance of). Input errors pass as they are (their message
    is already the line), and any other exception is not the input's fault: it passes too."""
    try:
        yield
    except GpucapInputError:
        raise
    except Exception as e:
        for kind, message in mapping.items():
            if isinstance(e, kind):
                raise BadInputError(message(e)) from None
        raise
