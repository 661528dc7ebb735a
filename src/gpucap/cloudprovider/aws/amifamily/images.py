"""The `ImageProvider`: an EC2NodeClass's AMIs as the AWS cloud provider reads them.

aws `pkg/providers/amifamily/ami.go` (`DefaultProvider.List`, over the SSM cache of `pkg/
providers/ssm`): the class's `amiSelectorTerms` resolved by `resolver.resolve_amis` (or by an
injected `ImageResolver`), kept for 24 hours on the clock per class and selector terms, so a
new `recommended` release is seen, and `@latest` nodes drift, within a day. `image_for` is
`MapToInstanceTypes` for one type (the first AMI whose requirements the type's are compatible
with): launch and AMI drift both ask it. `readiness` is the AMIsReady condition aws `pkg/
controllers/nodeclass/ami.go` derives from the same list.

Called by `AWSCloudProvider` (create, readiness, status), the `InstanceProvider` (the AMI of
each launched type) and drift (`drift.py`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.cloudprovider.aws.amifamily.releases import RELEASE_FAMILIES, known_releases
from gpucap.cloudprovider.aws.amifamily.resolver import (
    AMIDiscoveryError,
    AMIResolutionError,
    UnsupportedAliasError,
    resolve_amis,
)
from gpucap.cloudprovider.aws.ec2.api import EC2API, EC2APIError
from gpucap.cloudprovider.types import NodeClassNotReadyError
from gpucap.runtime.clock import Clock
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements

__all__ = [
    "AMIS_READY",
    "AMI_CACHE_TTL",
    "NODECLASS_READY",
    "ImageProvider",
    "ImageResolver",
    "NodeClassReadiness",
    "ResolvedImage",
    "image_for",
]

# pkg/providers/ssm: resolved SSM parameters (and so alias AMIs) are cached for 24 hours.
AMI_CACHE_TTL = dt.timedelta(hours=24)


class ResolvedImage(Protocol):
    """An AMI the node class resolved to, with the instance types it applies to."""

    @property
    def id(self) -> str: ...

    @property
    def requirements(self) -> Requirements: ...


ImageResolver = Callable[[EC2NodeClass], Sequence[ResolvedImage]]


@dataclass(frozen=True, slots=True)
class NodeClassReadiness:
    """An EC2NodeClass's readiness: `status` of its Ready condition ("True", "False",
    "Unknown"), and the condition that decides it (`condition`, its `reason` and `message`).

    Read from aws `pkg/controllers/nodeclass/ami.go` @ v1.14.1: an AL2 alias on Kubernetes
    1.33+ or a Windows 2025 alias before 1.35 sets AMIsReady False, reason `UnsupportedAlias`;
    selector terms that match no image set it False, `AMINotFound` ("AMISelector did not match
    any AMIs"); any other error (an alias none of whose SSM parameters exists: "failed to
    discover any AMIs for alias", an AWS call that fails) is returned without a condition, so
    AMIsReady stays Unknown, and so does Ready (`status.NewReadyConditions`: Ready is True only
    when every condition is). The message gpucap adds for an alias names the releases it
    knows (`releases.known_releases`)."""

    status: str
    condition: str = "Ready"
    reason: str = ""
    message: str = ""

    @property
    def ready(self) -> bool:
        return self.status == "True"


NODECLASS_READY = NodeClassReadiness("True")
AMIS_READY = "AMIsReady"


def image_for(it: InstanceType, images: Sequence[ResolvedImage]) -> ResolvedImage | None:
    """aws `amifamily.MapToInstanceTypes` for one type: the first image whose requirements the
    type's are `Compatible` with. Launch and AMI drift both ask this."""
    return next((im for im in images if it.requirements.is_compatible(im.requirements)), None)


def _not_resolved(cause: BaseException) -> str:
    """Why a class resolved no AMI, in words; an alias names the releases gpucap knows."""
    if isinstance(cause, AMIDiscoveryError) and cause.alias is not None:
        alias, k8s = cause.alias, cause.kubernetes_version
        text = f"failed to discover any AMIs for alias {alias} on Kubernetes {k8s}"
        if alias.family in RELEASE_FAMILIES:
            text += f" ({known_releases(k8s, alias.family, near=_date_of(alias.version))})"
        return text
    return str(cause)


def _date_of(version: str) -> dt.date | None:
    """The date a release version (`v20250715`) names, None when it names none."""
    digits = version.removeprefix("v")
    if len(digits) != 8 or not digits.isascii() or not digits.isdigit():
        return None
    try:
        return dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        return None


@dataclass(slots=True)
class ImageProvider:
    """Karpenter AWS's AMI provider with its 24-hour cache (see the module docstring)."""

    api: EC2API
    clock: Clock
    kubernetes_version: str
    # How AMIs are resolved: None is Karpenter's resolution over `api` (SSM + EC2).
    resolver: ImageResolver | None = None
    _ami_cache: dict[tuple[str, str], tuple[dt.datetime, Sequence[ResolvedImage]]] = field(
        default_factory=dict
    )
    _terms: dict[str, tuple[EC2NodeClass, str]] = field(default_factory=dict)
    # The image each type's requirements map to, per AMI list (both by identity, both held):
    # every create asks it of up to 60 types, and the provider's types share requirements.
    _image_memo: dict[
        tuple[int, int], tuple[Sequence[ResolvedImage], Requirements, ResolvedImage | None]
    ] = field(default_factory=dict)

    def list(self, nodeclass: EC2NodeClass) -> Sequence[ResolvedImage]:
        """The node class's AMIs, cached for 24 hours on the clock (Karpenter's SSM cache): a
        new `recommended` release is seen, and `@latest` nodes drift, within a day. Raises
        `NodeClassNotReadyError` when none resolves."""
        known = self._terms.get(nodeclass.name)
        if known is not None and known[0] is nodeclass:
            terms = known[1]
        else:
            terms = json.dumps(
                [
                    t.model_dump(by_alias=True, exclude_none=True)
                    for t in nodeclass.spec.ami_selector_terms
                ],
                sort_keys=True,
            )
            self._terms[nodeclass.name] = (nodeclass, terms)
        key = (nodeclass.name, terms)
        cached = self._ami_cache.get(key)
        now = self.clock.now()
        if cached is not None and now < cached[0]:
            return cached[1]
        images = self._resolve(nodeclass)
        self._ami_cache[key] = (now + AMI_CACHE_TTL, images)
        return images

    def _resolve(self, nodeclass: EC2NodeClass) -> Sequence[ResolvedImage]:
        try:
            if self.resolver is not None:
                images = self.resolver(nodeclass)
            else:
                images = resolve_amis(
                    nodeclass, self.kubernetes_version, self.api, now=self.clock.now()
                )
        except (EC2APIError, AMIResolutionError, ValueError) as err:
            raise NodeClassNotReadyError(
                f"resolving AMIs for EC2NodeClass {nodeclass.name}: {err}"
            ) from err
        if not images:
            raise NodeClassNotReadyError(f"EC2NodeClass {nodeclass.name} resolved no AMI")
        return images

    def image_of(self, it: InstanceType, images: Sequence[ResolvedImage]) -> ResolvedImage | None:
        """`image_for`, memoised by the AMI list and the type's requirements (identity)."""
        key = (id(images), id(it.requirements))
        kept = self._image_memo.get(key)
        if kept is not None and kept[0] is images and kept[1] is it.requirements:
            return kept[2]
        image = image_for(it, images)
        if len(self._image_memo) >= 8192:
            self._image_memo.clear()
        self._image_memo[key] = (images, it.requirements, image)
        return image

    def readiness(self, nodeclass: EC2NodeClass) -> NodeClassReadiness:
        """Whether the class is Ready, from the AMIs it resolves now (through the 24-hour
        cache, as Karpenter's reconciler reads its SSM cache): see `NodeClassReadiness`."""
        try:
            self.list(nodeclass)
        except NodeClassNotReadyError as err:
            cause = err.__cause__
            if isinstance(cause, UnsupportedAliasError):
                return NodeClassReadiness("False", AMIS_READY, "UnsupportedAlias", str(cause))
            if cause is None:  # resolved, to nothing
                return NodeClassReadiness(
                    "False", AMIS_READY, "AMINotFound", "AMISelector did not match any AMIs"
                )
            return NodeClassReadiness("Unknown", AMIS_READY, message=_not_resolved(cause))
        return NODECLASS_READY
