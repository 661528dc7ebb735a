"""`BotoEC2API`: the `EC2API` protocol over real AWS, through boto3 (the only module importing it).

Built with `BotoEC2API.from_environment(region, profile)` by whatever needs real AWS (the CLI's
`catalog export`, AMI resolution, the AWS cloud provider outside the simulation); everything
else in gpucap sees only the `EC2API` protocol.

Configuration is the standard AWS one, resolved by boto3: credentials from the environment,
`AWS_PROFILE`/`profile=`, SSO or an instance role; the region from `region=`, else
`AWS_REGION`, `AWS_DEFAULT_REGION` or the profile's, in that order; the endpoint from
`endpoint_url=`, else `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_<SERVICE>` (so moto's server,
LocalStack or a VPC endpoint work unchanged). EC2 and SSM clients use the configured region;
the Pricing client always uses `us-east-1`, whose endpoint serves every region's prices.

Behaviour every method shares:
- Retries: botocore's `standard` retry mode (exponential backoff with jitter on throttling --
  `RequestLimitExceeded`, `Throttling`, `ThrottlingException` ... -- and on transient network
  and 5xx errors), `DEFAULT_MAX_ATTEMPTS` attempts in all; `adaptive` (client-side rate
  limiting as well) on request.
- Pagination: a pageable operation (per botocore's paginator model) follows `NextToken` through
  every page and returns one response with the result lists merged, as the protocol requires.
- Responses are boto3's dicts without `ResponseMetadata` (timestamps stay `datetime`).
- Errors: every failure leaves as `EC2APIError(code, message, operation=...)`, chained to the
  botocore exception. A `ClientError` keeps AWS's code (`UnauthorizedOperation`,
  `InvalidInstanceID.NotFound`, `ParameterNotFound` ...); missing credentials are
  `NoCredentials`; unusable SSO/credential-process credentials `CredentialRetrievalError`; other
  botocore errors use their class name (`EndpointConnectionError`, `ConnectTimeoutError`,
  `ReadTimeoutError`, `ParamValidationError` ...). No botocore exception reaches the caller.

CreateFleet and orphans: the AWS cloud provider passes `TagSpecifications` (instance, volume,
fleet) in the CreateFleet request itself, as Karpenter does, so EC2 tags each instance as it
launches and no instance ever exists untagged; this module never tags fleet instances after the
fact. botocore fills CreateFleet's `ClientToken` (an idempotency token) once per call, so a
retried request (after a timeout, say) returns the first attempt's fleet instead of launching
again. If anything fails inside `create_fleet` after EC2 returned instances (the response
check, an interrupt), the instances are terminated before the error is raised, with a note on
the error naming them -- and, should that termination fail too, telling the user to terminate
them by hand. A response that never arrives (every retry timed out) leaves instances gpucap
cannot know about; their tags are what a garbage collector (Karpenter's, or a person) finds
them by.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    SSOError,
    TokenRetrievalError,
)

from gpucap.cloudprovider.aws.ec2.api import EC2APIError, Response
from gpucap.runtime.logging import get_logger

if TYPE_CHECKING:
    from botocore.client import BaseClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_ssm import SSMClient

__all__ = [
    "CONNECT_TIMEOUT_SECONDS",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_RETRY_MODE",
    "PRICING_REGION",
    "READ_TIMEOUT_SECONDS",
    "BotoEC2API",
    "RetryMode",
    "client_config",
    "fleet_instance_ids",
    "translate_error",
]

RetryMode = Literal["standard", "adaptive"]

# The AWS Price List Query API has endpoints in us-east-1 (and ap-south-1, eu-central-1); each
# one serves every region's prices, so one fixed region is enough.
PRICING_REGION: Final = "us-east-1"
# 1 attempt + 4 retries: with standard backoff (jitter x 2^n s, capped at 20 s) a throttled call
# waits ~15 s at most before giving up, and a mistyped endpoint fails in seconds, not minutes.
DEFAULT_MAX_ATTEMPTS: Final = 5
DEFAULT_RETRY_MODE: Final[RetryMode] = "standard"
# botocore's default connect timeout is 60 s; an unreachable endpoint should fail fast.
CONNECT_TIMEOUT_SECONDS: Final = 10
READ_TIMEOUT_SECONDS: Final = 60

_CREDENTIALS_HINT: Final = (
    "configure AWS credentials (AWS_PROFILE or --profile, AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or `aws sso login`)"
)

_log = get_logger(__name__)


def client_config(
    *, max_attempts: int = DEFAULT_MAX_ATTEMPTS, retry_mode: RetryMode = DEFAULT_RETRY_MODE
) -> Config:
    """The botocore `Config` every gpucap client uses: retries, timeouts, user agent."""
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    return Config(
        retries={"mode": retry_mode, "total_max_attempts": max_attempts},
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        user_agent_extra="gpucap",
    )


def translate_error(err: Exception, operation: str) -> EC2APIError:
    """The `EC2APIError` for a botocore failure of `operation` (the caller chains it)."""
    if isinstance(err, ClientError):
        error = err.response.get("Error", {})
        code = str(error.get("Code") or "Unknown")
        message = str(error.get("Message") or err)
        return EC2APIError(code, message, operation=operation)
    if isinstance(err, NoCredentialsError | PartialCredentialsError):
        return EC2APIError("NoCredentials", f"{err}; {_CREDENTIALS_HINT}", operation=operation)
    if isinstance(err, CredentialRetrievalError | TokenRetrievalError | SSOError):
        return EC2APIError(
            "CredentialRetrievalError", f"{err}; {_CREDENTIALS_HINT}", operation=operation
        )
    return EC2APIError(type(err).__name__, str(err), operation=operation)


def fleet_instance_ids(response: Mapping[str, Any]) -> list[str]:
    """Every instance ID in a CreateFleet response, in order (lenient: skips malformed parts)."""
    ids: list[str] = []
    instances = response.get("Instances")
    if not isinstance(instances, list):
        return ids
    for instance in instances:
        if isinstance(instance, Mapping) and isinstance(instance.get("InstanceIds"), list):
            ids.extend(i for i in instance["InstanceIds"] if isinstance(i, str) and i)
    return ids


def _add_note(err: BaseException, note: str) -> None:
    """`err.add_note(note)`, which Python 3.10 lacks: there the note goes on the same
    `__notes__` list by hand (3.10's traceback does not print it; the log line above says it)."""
    if sys.version_info >= (3, 11):
        err.add_note(note)
    else:
        vars(err).setdefault("__notes__", []).append(note)


class BotoEC2API:
    """`EC2API` over boto3 clients (ec2 and ssm in one region, pricing in us-east-1).

    Build it with `from_environment`; the constructor takes ready clients (tests hand it clients
    wrapped in botocore's `Stubber`).
    """

    def __init__(self, *, ec2: EC2Client, ssm: SSMClient, pricing: PricingClient) -> None:
        self._ec2 = ec2
        self._ssm = ssm
        self._pricing = pricing

    @classmethod
    def from_environment(
        cls,
        region: str | None = None,
        profile: str | None = None,
        *,
        endpoint_url: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_mode: RetryMode = DEFAULT_RETRY_MODE,
    ) -> BotoEC2API:
        """Clients from the standard AWS configuration (see the module docstring).

        `region` overrides the environment/profile region; `endpoint_url` overrides
        `AWS_ENDPOINT_URL` for every client. Raises `EC2APIError` (`ProfileNotFound`,
        `NoRegion`, `InvalidConfiguration`) when the configuration cannot give clients.
        Credentials are looked up at the first call (an error there is `NoCredentials`).
        """
        operation = "Configure"
        config = client_config(max_attempts=max_attempts, retry_mode=retry_mode)
        try:
            # A missing profile (`profile=` or AWS_PROFILE) surfaces at any of these steps.
            session = boto3.Session(profile_name=profile)
            # botocore reads only AWS_DEFAULT_REGION; AWS_REGION (the other SDKs' and the AWS
            # CLI v2's variable, taking precedence there) is honoured too.
            resolved = region or os.environ.get("AWS_REGION") or session.region_name
            if not resolved:
                raise EC2APIError(
                    "NoRegion",
                    "no AWS region configured; pass --region, set AWS_REGION, or give the "
                    "profile a region",
                    operation=operation,
                )
            ec2 = session.client(
                "ec2", region_name=resolved, endpoint_url=endpoint_url, config=config
            )
            ssm = session.client(
                "ssm", region_name=resolved, endpoint_url=endpoint_url, config=config
            )
            pricing = session.client(
                "pricing", region_name=PRICING_REGION, endpoint_url=endpoint_url, config=config
            )
        except ProfileNotFound as err:
            name = err.kwargs.get("profile", profile)
            raise EC2APIError(
                "ProfileNotFound",
                f"AWS profile {name!r} is not in the AWS config files; pass an existing "
                "--profile or fix AWS_PROFILE",
                operation=operation,
            ) from err
        except BotoCoreError as err:
            raise translate_error(err, operation) from err
        except ValueError as err:  # botocore's check of a malformed endpoint URL
            raise EC2APIError("InvalidConfiguration", str(err), operation=operation) from err
        return cls(ec2=ec2, ssm=ssm, pricing=pricing)

    @property
    def region(self) -> str:
        """The region of the EC2 and SSM clients."""
        return self._ec2.meta.region_name

    # ---- plumbing ------------------------------------------------------------------------------
    def _call(self, client: BaseClient, method: str, kwargs: Mapping[str, Any]) -> Response:
        """Call `method`, every page merged when it is pageable; botocore errors translated."""
        operation = client.meta.method_to_api_mapping.get(method, method)
        params = dict(kwargs)
        try:
            if client.can_paginate(method):
                token = params.pop("NextToken", None)
                if token is not None:
                    params["PaginationConfig"] = {"StartingToken": token}
                paginator = client.get_paginator(method)
                result: Any = paginator.paginate(**params).build_full_result()
            else:
                result = getattr(client, method)(**params)
        except (ClientError, BotoCoreError) as err:
            raise translate_error(err, operation) from err
        response: Response = dict(result)
        response.pop("ResponseMetadata", None)
        return response

    def _ec2_call(self, method: str, kwargs: Mapping[str, Any]) -> Response:
        return self._call(self._ec2, method, kwargs)

    # ---- EC2 -----------------------------------------------------------------------------------
    def describe_instance_types(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_instance_types", kwargs)

    def describe_instance_type_offerings(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_instance_type_offerings", kwargs)

    def describe_spot_price_history(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_spot_price_history", kwargs)

    def describe_availability_zones(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_availability_zones", kwargs)

    def create_fleet(self, **kwargs: Any) -> Response:
        """CreateFleet; never leaves an instance running that the caller was not told about.

        Put the tags in the request (`TagSpecifications` for `instance`, `volume`, `fleet`): EC2
        applies them at launch. Per-override failures come back in `Errors`, as EC2 reports
        them; a refused call raises `EC2APIError`. If a later step of this method fails after
        EC2 returned instances, they are terminated before the error propagates.
        """
        response = self._ec2_call("create_fleet", kwargs)
        launched = fleet_instance_ids(response)
        try:
            return self._finish_create_fleet(response)
        except BaseException as err:
            self._terminate_orphans(launched, err)
            raise

    def _finish_create_fleet(self, response: Response) -> Response:
        """Check the response is one the caller can track every instance of."""
        instances = response.get("Instances", [])
        well_formed = isinstance(instances, list) and all(
            isinstance(i, Mapping)
            and isinstance(i.get("InstanceIds", []), list)
            and all(isinstance(x, str) and x for x in i.get("InstanceIds", []))
            for i in instances
        )
        if not well_formed:
            raise EC2APIError(
                "InvalidFleetResponse",
                "CreateFleet returned instances gpucap cannot read",
                operation="CreateFleet",
            )
        return response

    def _terminate_orphans(self, instance_ids: Sequence[str], err: BaseException) -> None:
        """Terminate instances launched by a CreateFleet that is failing; note it on `err`."""
        if not instance_ids:
            return
        ids = list(instance_ids)
        try:
            self._ec2_call("terminate_instances", {"InstanceIds": ids})
        except EC2APIError as cleanup_err:
            _log.error("CreateFleet failed and instances %s could not be terminated", ids)
            _add_note(
                err,
                f"instances {', '.join(ids)} were launched but could not be terminated "
                f"({cleanup_err}); terminate them by hand",
            )
            return
        _log.warning("CreateFleet failed after launching %s; terminated them", ids)
        _add_note(err, f"terminated {', '.join(ids)}, launched by the failed CreateFleet")

    def describe_instances(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_instances", kwargs)

    def terminate_instances(self, **kwargs: Any) -> Response:
        return self._ec2_call("terminate_instances", kwargs)

    def create_tags(self, **kwargs: Any) -> Response:
        return self._ec2_call("create_tags", kwargs)

    def describe_images(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_images", kwargs)

    def describe_launch_templates(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_launch_templates", kwargs)

    def create_launch_template(self, **kwargs: Any) -> Response:
        return self._ec2_call("create_launch_template", kwargs)

    def describe_subnets(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_subnets", kwargs)

    def describe_security_groups(self, **kwargs: Any) -> Response:
        return self._ec2_call("describe_security_groups", kwargs)

    def describe_capacity_reservations(self, **kwargs: Any) -> Response:
        """Every page merged (botocore pages it by `NextToken`, `MaxResults` at most 1,000)."""
        return self._ec2_call("describe_capacity_reservations", kwargs)

    # ---- SSM -----------------------------------------------------------------------------------
    def get_parameter(self, **kwargs: Any) -> Response:
        return self._call(self._ssm, "get_parameter", kwargs)

    def get_parameters_by_path(self, **kwargs: Any) -> Response:
        return self._call(self._ssm, "get_parameters_by_path", kwargs)

    # ---- Pricing -------------------------------------------------------------------------------
    def get_products(self, **kwargs: Any) -> Response:
        return self._call(self._pricing, "get_products", kwargs)
