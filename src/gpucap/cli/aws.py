"""Real AWS for the commands that ask it (`ami`, `render --pin-ami`, `lint --aws`, `catalog
export`): the EC2/SSM client, and the recommended AMI release.

AWS's own failures (no credentials, a refused call: `EC2APIError`) and an AMI lookup's ValueError
(a malformed Kubernetes version, an unknown variant) are not input errors by type; they are
mapped to one `error:` line here, where they cross into the CLI (`cli/errors.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gpucap.cli.errors import map_exceptions
from gpucap.cloudprovider.aws.amifamily.ami import AMIReleaseInfo, recommended_release
from gpucap.cloudprovider.aws.ec2.api import EC2API, EC2APIError

__all__ = ["aws_api", "aws_errors", "lookup_errors", "release"]


def _aws_message(e: Exception) -> str:
    return f"AWS: {e}"


@contextmanager
def aws_errors() -> Iterator[None]:
    """A refused or failed AWS call in the block becomes the line `error: AWS: <reason>`."""
    with map_exceptions({EC2APIError: _aws_message}):
        yield


@contextmanager
def lookup_errors() -> Iterator[None]:
    """An AMI lookup failure in the block (unknown version, family or release; nothing in SSM)
    becomes the one-line bad-input error every `ami` subcommand shares. AMILookupError and
    UnknownReleaseError are input errors already; the lookups' plain ValueErrors are not."""
    with map_exceptions({ValueError: str}):
        yield


def aws_api(region: str | None) -> EC2API:
    """Real AWS through boto3 (standard configuration; AWS_ENDPOINT_URL is honoured).
    Callers call it through this module (`aws.aws_api`), so tests can replace it."""
    # boto3 only when asked: importing it is most of a second, and only these commands use it.
    from gpucap.cloudprovider.aws.ec2.boto import BotoEC2API  # noqa: PLC0415

    with aws_errors():
        return BotoEC2API.from_environment(region=region)


def release(  # noqa: PLR0917 - the six lookup keys
    kubernetes_version: str, family: str, arch: str, variant: str, offline: bool, region: str | None
) -> AMIReleaseInfo:
    """The release AWS recommends for these keys (SSM), or the newest bundled one `offline`."""
    with lookup_errors():
        return recommended_release(
            kubernetes_version,
            family=family,
            arch=arch,
            variant=variant,
            api=None if offline else aws_api(region),
        )
