"""The one seam between gpucap and AWS: the EC2, SSM and Pricing calls the AWS provider makes.

`EC2API` lists exactly the calls Karpenter's AWS provider uses (and `catalog export` needs),
with boto3's method names, keyword arguments and response shapes (botocore's service model), so
that three implementations are interchangeable:
- `SimulatedEC2` (`simulated.py`): in memory, fed by the bundled catalog; the default;
- `BotoEC2API` (`boto.py`): real AWS through boto3 (the only module that imports boto3);
- botocore's Stubber / moto, in tests.

Requests and responses are plain dicts in botocore's shapes (e.g. `create_fleet(**request)`
returns `{"FleetId": ..., "Instances": [...], "Errors": [...]}`). Implementations raise
`EC2APIError` (with the AWS error code) for a failed call; CreateFleet reports per-override
failures in `Errors`, as EC2 does, rather than raising.
Called by the AWS cloud provider (`cloudprovider.py`), AMI resolution, the capacity-reservation
provider and `catalog export`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["EC2API", "EC2APIError", "Response"]

Response = dict[str, Any]


class EC2APIError(Exception):
    """A call AWS (or the simulation) refused: `code` is the AWS error code, e.g.
    `InvalidInstanceID.NotFound`, `UnauthorizedOperation`, `ParameterNotFound`."""

    def __init__(self, code: str, message: str, *, operation: str = "") -> None:
        super().__init__(f"{operation + ': ' if operation else ''}{code}: {message}")
        self.code = code
        self.message = message
        self.operation = operation


@runtime_checkable
class EC2API(Protocol):
    """The EC2/SSM/Pricing calls gpucap makes, boto3-shaped. Paginated calls return every page
    merged (the implementation follows `NextToken`)."""

    # ---- EC2 ---------------------------------------------------------------------------------
    def describe_instance_types(self, **kwargs: Any) -> Response: ...

    def describe_instance_type_offerings(self, **kwargs: Any) -> Response: ...

    def describe_spot_price_history(self, **kwargs: Any) -> Response: ...

    def describe_availability_zones(self, **kwargs: Any) -> Response: ...

    def create_fleet(self, **kwargs: Any) -> Response: ...

    def describe_instances(self, **kwargs: Any) -> Response: ...

    def terminate_instances(self, **kwargs: Any) -> Response: ...

    def create_tags(self, **kwargs: Any) -> Response: ...

    def describe_images(self, **kwargs: Any) -> Response: ...

    def describe_launch_templates(self, **kwargs: Any) -> Response: ...

    def create_launch_template(self, **kwargs: Any) -> Response: ...

    def describe_subnets(self, **kwargs: Any) -> Response: ...

    def describe_security_groups(self, **kwargs: Any) -> Response: ...

    def describe_capacity_reservations(self, **kwargs: Any) -> Response: ...

    # ---- SSM ---------------------------------------------------------------------------------
    def get_parameter(self, **kwargs: Any) -> Response: ...

    def get_parameters_by_path(self, **kwargs: Any) -> Response: ...

    # ---- Pricing (on-demand prices; us-east-1 endpoint) ----------------------------------------
    def get_products(self, **kwargs: Any) -> Response: ...
