"""SimulatedEC2: the `EC2API` in memory, fed by the bundled catalog — gpucap's default AWS.

It answers the calls the AWS cloud provider makes, in boto3's shapes, from a `Catalog`:
instance types, zone offerings, spot prices, subnets (one per zone) and security groups; it
launches instances with CreateFleet, keeps their lifecycle on the injected Clock (`pending`
for a launch latency, then `running`; `shutting-down` then `terminated`), holds an SSM
parameter store (AMI parameters) and images.

AMIs: `publish_amis` publishes the bundled EKS AL2023 and AL2 releases of a Kubernetes minor
(every variant a release has, `amifamily/releases.py`) as AWS does. What gpucap has no data on is
answered as if AWS had it, when first read (`_stand_in`): Bottlerocket and Windows parameters
(any version), and an AL2023/AL2 release pinned by a date after the bundled list's end (all its
variants, as EKS publishes them). So `plan`, `lint` and `simulate`, which all resolve aliases
through this store, agree: an alias resolves unless gpucap knows it cannot.

Capacity is scripted: `set_capacity(instance_type, zone, capacity_type, available=False,
until=...)` makes a pool refuse launches (EC2's `InsufficientInstanceCapacity`) for a window.

Capacity reservations: EC2's side of them is `reservations.py` (`ReservationsEC2`).

CreateFleet (`fleet.py`, a mixin this class inherits) is modelled on EC2 Fleet `instant`
requests with `launch.fleet_pick`, the one model
of the fleet's choice that `plan`'s launch column also uses: the overrides of the requested
capacity type are tried in the order of their `Priority` (the AWS provider sets it to the
offering price; price-capacity-optimized for spot is modelled as "the cheapest pool that has
capacity"; lowest-price for on-demand), ties by instance type then zone; each override whose
pool has no capacity adds an `InsufficientInstanceCapacity` error; the first pool with capacity
launches. This is a model of EC2, not EC2: real spot allocation also weighs pool depth.
Deterministic: instance IDs count up; no randomness. Called by the AWS cloud provider (the
simulator's, and the throwaway stack `plan` builds for its NodePools' instance types) and by
tests.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpucap.apis.capacityreservation import CapacityReservationItem, Reservations
from gpucap.cloudprovider.aws.amifamily.releases import (
    RELEASE_FAMILIES,
    AMIRelease,
    coverage_end,
)
from gpucap.cloudprovider.aws.amifamily.resolver import (
    release_version_parameter,
    ssm_parameter_name,
)
from gpucap.cloudprovider.aws.ec2.api import EC2APIError, Response
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.simulated.amis import (
    BOTTLEROCKET,
    PINNED_AL2,
    PINNED_AL2023,
    RELEASE_IMAGES,
    WINDOWS,
    ami_name,
    bundled,
    release_date,
)
from gpucap.cloudprovider.aws.simulated.fleet import FleetEC2
from gpucap.cloudprovider.aws.simulated.instance import (
    LAUNCH_LATENCY,
    SPOT_INTERRUPTION_NOTICE,
    TERMINATION_LATENCY,
    SimulatedInstance,
)
from gpucap.cloudprovider.aws.simulated.reservations import (
    CAPACITY_BLOCK_RECLAIM,
)
from gpucap.runtime.clock import Clock

__all__ = ["LAUNCH_LATENCY", "SimulatedEC2", "SimulatedInstance"]


@dataclass(slots=True)
class _Window:
    available: bool
    until: dt.datetime | None


@dataclass(slots=True)
class SimulatedEC2(FleetEC2):
    """An in-memory EC2 + SSM over a catalog (see the module docstring)."""

    catalog: Catalog
    clock: Clock
    instances: dict[str, SimulatedInstance] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)
    images: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    launch_templates: dict[str, str] = field(default_factory=dict)
    # (time, Kubernetes version, release) changes of `recommended` not yet applied
    scheduled_releases: list[tuple[dt.datetime, str, str]] = field(default_factory=list)
    _capacity: dict[tuple[str, str, str], _Window] = field(default_factory=dict)
    # capacity type -> (type, zone) -> catalog price; see `_prices`
    _price_maps: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)
    _next_instance: int = 0
    _next_fleet: int = 0
    # Whether `describe_instances` keeps its answers (see `_listing`); off only for the law that
    # compares the two paths.
    cache_descriptions: bool = True
    # Bumped by every change to an instance the API makes (launch, terminate, tags, interrupt):
    # what a description reads besides the clock.
    _revision: int = 0
    # Instance ID -> (its revision, its state and whether in its reservation, its description)
    # (see `_describe`).
    _described: dict[str, tuple[int, tuple[str, bool], dict[str, Any]]] = field(
        default_factory=dict
    )
    _instance_revision: dict[str, int] = field(default_factory=dict)
    # Filters -> (revision, instance count, valid from, valid until, descriptions): the last
    # answer of a whole listing (see `_listing`).
    _listings: dict[Any, tuple[int, int, dt.datetime, dt.datetime, list[dict[str, Any]]]] = field(
        default_factory=dict
    )
    # The change feed (`watch`).
    _watchers: list[Callable[[str], None]] = field(default_factory=list)
    # The account's capacity reservations (a reservations file); none unless given.
    reservations: Reservations = field(default_factory=Reservations)
    # Launch template name -> its data (a reserved launch's target lives there).
    template_data: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Reservation ID -> when its owner reclaimed it (interruptible reservations, `reclaim`).
    _reclaimed: dict[str, dt.datetime] = field(default_factory=dict)
    # The seeded tie-break between equal-price spot zones (`fleet.py`); set by the simulator
    # when its world has a spot market, else None (the first zone by name).
    spot_ties: random.Random | None = None

    # ---- the change feed -------------------------------------------------------------------------
    def watch(self, fn: Callable[[str], None]) -> None:
        """Call `fn` with what changed on every change of this EC2's state, inside the call that
        made it: `"capacity"` (a pool opened or closed), `"instances"` (an instance launched,
        terminated, tagged or interrupted), `"images"` (an AMI release published). The
        simulator's bus watches it (`sim/world.py` wires it), beside the cluster's feed.
        What changes with the clock alone (a capacity window running out, an interrupted
        instance reclaimed) is reported by whoever scheduled that time (`ended`)."""
        self._watchers.append(fn)

    def ended(self, what: str) -> None:
        """A change the clock made by itself (see `watch`): the simulator's timer for it
        tells the watchers, as a real account's events would."""
        self._changed(what)

    def _changed(self, what: str) -> None:
        for fn in self._watchers:
            fn(what)

    # ---- scripted capacity ---------------------------------------------------------------------
    def set_capacity(
        self,
        instance_type: str | Iterable[str],
        zone: str | None = None,
        capacity_type: str | None = None,
        *,
        available: bool,
        until: dt.datetime | None = None,
    ) -> None:
        """Open or close the pools of one instance type or several (zone, capacity type None:
        every zone / capacity type) until `until` (None: for good)."""
        types = [instance_type] if isinstance(instance_type, str) else list(instance_type)
        zones = [zone] if zone else list(self.catalog.zones)
        capacity_types = [capacity_type] if capacity_type else ["spot", "on-demand"]
        for name in types:
            for z in zones:
                for ct in capacity_types:
                    self._capacity[(name, z, ct)] = _Window(available, until)
        self._changed("capacity")

    def interrupt(self, instance_id: str) -> dt.datetime:
        """Send a spot interruption warning; the instance is reclaimed two minutes later.
        Returns when it will be reclaimed."""
        inst = self.instances[instance_id]
        if inst.capacity_type != "spot":
            raise EC2APIError("IncorrectInstanceState", f"{instance_id} is not a spot instance")
        inst.interrupted_at = self.clock.now()
        self._touch(instance_id)
        return inst.interrupted_at + SPOT_INTERRUPTION_NOTICE

    def interruption_notices(self) -> list[tuple[str, dt.datetime]]:
        """Spot instances under an interruption warning and not yet reclaimed: (id, deadline)."""
        now = self.clock.now()
        return [
            (i.instance_id, i.interrupted_at + SPOT_INTERRUPTION_NOTICE)
            for i in sorted(self.instances.values(), key=lambda i: i.instance_id)
            if i.interrupted_at is not None
            and i.advance(now) not in ("terminated", "shutting-down")
        ]

    def schedule_ami_release(self, at: dt.datetime, kubernetes_version: str, version: str) -> None:
        """Make `version` the recommended release from `at` on (applied on the next SSM call)."""
        self.scheduled_releases.append((at, kubernetes_version, version))
        self.scheduled_releases.sort()

    def _apply_scheduled_releases(self) -> None:
        now = self.clock.now()
        while self.scheduled_releases and self.scheduled_releases[0][0] <= now:
            _, k8s, version = self.scheduled_releases.pop(0)
            self.publish_amis(k8s, recommended=version)

    def has_capacity(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        window = self._capacity.get((instance_type, zone, capacity_type))
        if window is None:
            return True
        if window.until is not None and self.clock.now() >= window.until:
            return True
        return window.available

    # ---- AMIs ------------------------------------------------------------------------------------
    def put_parameter(self, name: str, value: str) -> None:
        self.parameters[name] = value

    def register_image(
        self,
        image_id: str,
        name: str,
        *,
        architecture: str = "x86_64",
        creation_date: str = "2026-01-01T00:00:00.000Z",
        deprecated: bool = False,
        tags: Mapping[str, str] | None = None,
        owner: str = "amazon",
    ) -> None:
        image: dict[str, Any] = {
            "ImageId": image_id,
            "Name": name,
            "Architecture": architecture,
            "CreationDate": creation_date,
            "OwnerId": owner,
            "State": "available",
            "Tags": [{"Key": k, "Value": v} for k, v in sorted((tags or {}).items())],
        }
        if deprecated:
            image["DeprecationTime"] = creation_date
        self.images[image_id] = image

    def publish_amis(self, kubernetes_version: str, *, recommended: str | None = None) -> None:
        """Publish the bundled EKS AL2023 and AL2 AMI releases for a Kubernetes version as AWS
        does: an image and a pinned SSM parameter per release x arch x variant it has (an
        abandoned release too: a pin to it still resolves, lint warns), and `recommended`
        parameters (image id and release version) pointing at `recommended` (default: the
        newest release with that image that is not abandoned). Called when a simulation
        starts, on an `amiRelease` event, and by `plan` and `lint` (which resolve aliases the
        same way)."""
        k8s = kubernetes_version
        for family in RELEASE_FAMILIES:
            newest: dict[tuple[str, str], AMIRelease] = {}
            for release in reversed(bundled(k8s, family)):
                for arch, variant in RELEASE_IMAGES[family]:
                    if not release.has(k8s, family, arch, variant):
                        continue
                    self._publish_image(
                        family,
                        k8s,
                        (arch, variant),
                        release.version,
                        created=release.date.isoformat(),
                    )
                    if (recommended is None and not release.abandoned) or (
                        release.version == recommended
                    ):
                        newest[(arch, variant)] = release
            for (arch, variant), release in newest.items():
                name = ami_name(family, k8s, arch, variant, release.version)
                latest = ssm_parameter_name(f"{family}@latest", k8s, arch, variant)
                self.parameters[latest] = self.image_id_for(name)
                self.parameters[release_version_parameter(k8s, family, arch, variant)] = (
                    release.release_version(k8s) or release.version
                )
        self._changed("images")

    def publish_release(self, kubernetes_version: str, version: str) -> None:
        """Make AL2023 release `version` the recommended one for a Kubernetes version, as AWS
        does when it ships a release (the simulator's `amiRelease` event and a scenario's
        `amiReleases`). A release the bundled list does not have gets an image and a pinned
        parameter per arch x variant, dated by its version (`vYYYYMMDD`)."""
        k8s = kubernetes_version
        if version in {r.version for r in bundled(k8s, "al2023")}:
            self.publish_amis(k8s, recommended=version)
            return
        digits = version.removeprefix("v")
        created = f"{digits[:4]}-{digits[4:6]}-{digits[6:8]}"
        for arch, variant in RELEASE_IMAGES["al2023"]:
            image_id = self._publish_image("al2023", k8s, (arch, variant), version, created=created)
            self.parameters[ssm_parameter_name("al2023@latest", k8s, arch, variant)] = image_id
            self.parameters[release_version_parameter(k8s, "al2023", arch, variant)] = (
                f"{k8s}.0-{digits}"
            )
        self._changed("images")

    def _publish_image(
        self, family: str, k8s: str, image: tuple[str, str], version: str, *, created: str
    ) -> str:
        """Register one EKS AMI (arch, variant) of a release (once) and its pinned SSM
        parameter; its image ID. `created`: the release's date, `YYYY-MM-DD`."""
        arch, variant = image
        name = ami_name(family, k8s, arch, variant, version)
        image_id = self.image_id_for(name)
        if image_id not in self.images:
            self.register_image(
                image_id, name, architecture=arch, creation_date=f"{created}T00:00:00.000Z"
            )
        self.parameters[ssm_parameter_name(f"{family}@{version}", k8s, arch, variant)] = image_id
        return image_id

    def _stand_in(self, name: str) -> bool:
        """Publish parameter `name` (and what AWS publishes with it) if it is one gpucap has no
        data on: a Bottlerocket or Windows parameter (any version: one stand-in image for it),
        or a pinned AL2023/AL2 release dated after the bundled list ends (every image of that
        release for its Kubernetes minor). A release within the list's dates that it does not
        have, and anything else, stays missing. Whether it published."""
        end = coverage_end()
        for family, pattern in (("al2023", PINNED_AL2023), ("al2", PINNED_AL2)):
            match = pattern.match(name)
            if match is None:
                continue
            created = release_date(match["version"])
            if created is None or created <= end:
                return False
            for image in RELEASE_IMAGES[family]:
                self._publish_image(
                    family, match["k8s"], image, match["version"], created=created.isoformat()
                )
            return name in self.parameters
        match = BOTTLEROCKET.match(name)
        arch = match["arch"] if match is not None else "x86_64"
        if match is None and WINDOWS.match(name) is None:
            return False
        # The image is named after its parameter, so each parameter has its own, stable one.
        image_name = "gpucap-stand-in" + name.removesuffix("/image_id").replace("/", "-")
        image_id = self.image_id_for(image_name)
        if image_id not in self.images:
            stamp = f"{end.isoformat()}T00:00:00.000Z"
            self.register_image(image_id, image_name, architecture=arch, creation_date=stamp)
        self.parameters[name] = image_id
        return True

    def release_of(self, image_id: str) -> str | None:
        """The release (`vYYYYMMDD`) of an EKS AMI this EC2 published, from its name."""
        image = self.images.get(image_id)
        if image is None:
            return None
        tail = str(image.get("Name", "")).rsplit("-", 1)[-1]
        return tail if tail.startswith("v") else None

    @staticmethod
    def image_id_for(name: str) -> str:
        """A stable fake AMI id for an image name."""
        return "ami-" + hashlib.sha256(name.encode()).hexdigest()[:17]

    # ---- EC2: describe -----------------------------------------------------------------------
    def describe_instance_types(self, **kwargs: Any) -> Response:
        self.calls.append("DescribeInstanceTypes")
        wanted = set(kwargs.get("InstanceTypes") or [])
        out = []
        for info in self.catalog.infos:
            if wanted and info.name not in wanted:
                continue
            arch = "x86_64" if info.architecture == "amd64" else "arm64"
            entry: dict[str, Any] = {
                "InstanceType": info.name,
                "ProcessorInfo": {"SupportedArchitectures": [arch]},
                "VCpuInfo": {"DefaultVCpus": info.vcpus},
                "MemoryInfo": {"SizeInMiB": info.memory_mib},
                "SupportedVirtualizationTypes": ["hvm"],
                "SupportedUsageClasses": ["on-demand", "spot"],
            }
            if info.gpu_count:
                entry["GpuInfo"] = {
                    "Gpus": [
                        {
                            "Name": info.gpu_name or "",
                            "Manufacturer": (info.gpu_manufacturer or "nvidia").upper(),
                            "Count": info.gpu_count,
                            "MemoryInfo": {"SizeInMiB": info.gpu_memory_mib or 0},
                        }
                    ]
                }
            out.append(entry)
        return {"InstanceTypes": out}

    def describe_instance_type_offerings(self, **kwargs: Any) -> Response:
        self.calls.append("DescribeInstanceTypeOfferings")
        out = []
        for info in self.catalog.infos:
            zones = (info.offerings or {}).get(self.catalog.region, self.catalog.zones)
            for z in sorted(zones):
                if z in self.catalog.zones:
                    out.append(
                        {
                            "InstanceType": info.name,
                            "LocationType": "availability-zone",
                            "Location": z,
                        }
                    )
        return {"InstanceTypeOfferings": out}

    def describe_spot_price_history(self, **kwargs: Any) -> Response:
        self.calls.append("DescribeSpotPriceHistory")
        wanted = set(kwargs.get("InstanceTypes") or [])
        out = []
        stamp = self.clock.now().isoformat()
        for it in self.catalog.instance_types(None):
            if wanted and it.name not in wanted:
                continue
            for o in it.offerings:
                if o.capacity_type == "spot" and o.available:
                    out.append(
                        {
                            "InstanceType": it.name,
                            "AvailabilityZone": o.zone,
                            "ProductDescription": "Linux/UNIX",
                            "SpotPrice": f"{o.price:.6f}",
                            "Timestamp": stamp,
                        }
                    )
        return {"SpotPriceHistory": out}

    def describe_availability_zones(self, **kwargs: Any) -> Response:
        self.calls.append("DescribeAvailabilityZones")
        return {
            "AvailabilityZones": [
                {
                    "ZoneName": z,
                    "ZoneId": f"use1-az{i + 1}",
                    "State": "available",
                    "RegionName": self.catalog.region,
                }
                for i, z in enumerate(self.catalog.zones)
            ]
        }

    def describe_subnets(self, **kwargs: Any) -> Response:
        """One subnet per zone; it matches any selector (the simulation has one VPC)."""
        self.calls.append("DescribeSubnets")
        return {
            "Subnets": [
                {
                    "SubnetId": self.subnet_for(z),
                    "AvailabilityZone": z,
                    "AvailableIpAddressCount": 8000,
                    "VpcId": "vpc-0sim",
                }
                for z in self.catalog.zones
            ]
        }

    @staticmethod
    def subnet_for(zone: str) -> str:
        return "subnet-" + hashlib.sha256(zone.encode()).hexdigest()[:17]

    def describe_security_groups(self, **kwargs: Any) -> Response:
        self.calls.append("DescribeSecurityGroups")
        return {
            "SecurityGroups": [
                {"GroupId": "sg-0sim", "GroupName": "gpucap-sim", "VpcId": "vpc-0sim"}
            ]
        }

    def describe_images(self, **kwargs: Any) -> Response:
        self.calls.append("DescribeImages")
        ids = set(kwargs.get("ImageIds") or [])
        filters = {f["Name"]: f["Values"] for f in kwargs.get("Filters") or []}
        out = []
        for image_id in sorted(self.images):
            image = self.images[image_id]
            if ids and image_id not in ids:
                continue
            if "image-id" in filters and image_id not in filters["image-id"]:
                continue
            if "name" in filters and not any(_glob(p, image["Name"]) for p in filters["name"]):
                continue
            tags = {t["Key"]: t["Value"] for t in image["Tags"]}
            if any(
                name.startswith("tag:") and tags.get(name[4:]) not in values
                for name, values in filters.items()
            ):
                continue
            if "tag-key" in filters and not set(filters["tag-key"]) <= set(tags):
                continue
            out.append(dict(image))
        if ids and not out:
            raise EC2APIError(
                "InvalidAMIID.NotFound",
                f"the image ids {sorted(ids)} do not exist",
                operation="DescribeImages",
            )
        return {"Images": out}

    # ---- EC2: launch templates -----------------------------------------------------------------
    def describe_launch_templates(self, **kwargs: Any) -> Response:
        self.calls.append("DescribeLaunchTemplates")
        names = set(kwargs.get("LaunchTemplateNames") or [])
        found = [
            {"LaunchTemplateName": n, "LaunchTemplateId": i}
            for n, i in sorted(self.launch_templates.items())
            if not names or n in names
        ]
        if names and not found:
            raise EC2APIError(
                "InvalidLaunchTemplateName.NotFoundException",
                "At least one of the launch templates specified in the request does not exist.",
                operation="DescribeLaunchTemplates",
            )
        return {"LaunchTemplates": found}

    def create_launch_template(self, **kwargs: Any) -> Response:
        self.calls.append("CreateLaunchTemplate")
        name = kwargs["LaunchTemplateName"]
        if name in self.launch_templates:
            raise EC2APIError(
                "InvalidLaunchTemplateName.AlreadyExistsException",
                f"Launch template name already in use: {name}",
                operation="CreateLaunchTemplate",
            )
        self.launch_templates[name] = f"lt-{len(self.launch_templates) + 1:017x}"
        self.template_data[name] = dict(kwargs.get("LaunchTemplateData") or {})
        return {
            "LaunchTemplate": {
                "LaunchTemplateName": name,
                "LaunchTemplateId": self.launch_templates[name],
            }
        }

    # ---- EC2: instances (CreateFleet is `fleet.py`) --------------------------------------------
    def _prices(self, capacity_type: str) -> dict[tuple[str, str], float]:
        """The catalog's price per (type, zone) for `capacity_type`. Built once per capacity
        type: the catalog does not change during a run (capacity windows live in
        `has_capacity`, not here), and callers only read the map."""
        cached = self._price_maps.get(capacity_type)
        if cached is not None:
            return cached
        out = self.catalog.available_prices(capacity_type)
        self._price_maps[capacity_type] = out
        return out

    def _launch(
        self,
        override: Mapping[str, Any],
        capacity_type: str,
        price: float,
        tags: dict[str, str],
        *,
        into: CapacityReservationItem | None = None,
    ) -> SimulatedInstance:
        self._next_instance += 1
        instance = SimulatedInstance(
            instance_id=f"i-{self._next_instance:017x}",
            instance_type=override["InstanceType"],
            zone=override["AvailabilityZone"],
            subnet_id=override.get("SubnetId") or self.subnet_for(override["AvailabilityZone"]),
            image_id=override.get("ImageId") or "ami-0sim",
            capacity_type=capacity_type,
            price=price,
            launched_at=self.clock.now(),
            tags=dict(tags),
        )
        if into is not None:
            end = into.end_date
            instance.reservation_id = into.capacity_reservation_id
            instance.reservation_type = into.reservation_type
            instance.interruptible = into.interruptible
            instance.reservation_until = end
            if into.reservation_type == "capacity-block" and end is not None:
                instance.reclaim_at = end - CAPACITY_BLOCK_RECLAIM
        self.instances[instance.instance_id] = instance
        self._touch(instance.instance_id)
        return instance

    def _touch(self, instance_id: str) -> None:
        """Instance `instance_id` changed through the API: its kept description and every kept
        listing are stale."""
        self._revision += 1
        self._instance_revision[instance_id] = self._revision
        self._changed("instances")

    def describe_instances(self, **kwargs: Any) -> Response:
        """DescribeInstances by IDs or over every instance, with `instance-state-name`,
        `tag:KEY` and `tag-key` filters. The descriptions are shared between calls while the
        instance is unchanged (callers only read them, as the AWS cloud provider does): see
        `_listing` and `_describe`."""
        self.calls.append("DescribeInstances")
        ids = list(kwargs.get("InstanceIds") or [])
        missing = [i for i in ids if i not in self.instances]
        if missing:
            raise EC2APIError(
                "InvalidInstanceID.NotFound",
                f"The instance IDs '{', '.join(missing)}' do not exist",
                operation="DescribeInstances",
            )
        raw = kwargs.get("Filters") or []
        if ids or not self.cache_descriptions:
            out = self._described_instances(ids, raw)
        else:
            out = list(self._listing(raw))
        return {"Reservations": [{"Instances": out}] if out else []}

    def _listing(self, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The descriptions of every instance that passes `raw`, kept per filter set while no
        instance changed through the API (`_revision`, and the instance count for one added
        by hand) and the clock stays within the stretch where no instance changes state
        (`_stable_until`): an instance's description is a function of its fields, its tags and
        its state, and its state of the clock between those times. Garbage collection lists
        every instance twice a minute at most, nearly always over an unchanged fleet.
        Skipping `state()` is not observable: its one side effect (an interrupted instance's
        `terminated_at` set when the notice runs out) is a value every reader of
        `terminated_at` (`state()` itself, `terminate_instances` after it) computes the same
        way first."""
        key = tuple((f["Name"], tuple(f["Values"])) for f in raw)
        now = self.clock.now()
        kept = self._listings.get(key)
        if (
            kept is not None
            and kept[0] == self._revision
            and kept[1] == len(self.instances)
            and kept[2] <= now < kept[3]
        ):
            return kept[4]
        out = self._described_instances([], raw)
        if len(self._listings) >= 64:
            self._listings.clear()
        self._listings[key] = (
            self._revision,
            len(self.instances),
            now,
            self._stable_until(now),
            out,
        )
        return out

    def _stable_until(self, now: dt.datetime) -> dt.datetime:
        """The first time after `now` at which some instance's description may change without
        a call changing it: launch latency over, an interruption notice running out, a
        termination finishing, a reclaim, a reservation ending (`dt.datetime.max` when none is
        ahead)."""
        soonest = dt.datetime.max.replace(tzinfo=now.tzinfo)
        for inst in self.instances.values():
            times = [inst.launched_at + LAUNCH_LATENCY]
            if inst.interrupted_at is not None:
                end = inst.interrupted_at + SPOT_INTERRUPTION_NOTICE
                times += [end, end + TERMINATION_LATENCY]
            if inst.terminated_at is not None:
                times.append(inst.terminated_at + TERMINATION_LATENCY)
            if inst.reclaim_at is not None:
                times += [inst.reclaim_at, inst.reclaim_at + TERMINATION_LATENCY]
            if inst.reservation_until is not None:
                times.append(inst.reservation_until)
            for t in times:
                if now < t < soonest:
                    soonest = t
        return soonest

    def _described_instances(
        self, ids: list[str], raw: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The descriptions of the instances `ids` (all, in ID order, when empty) that pass
        the filters `raw`, each instance's state read at the clock's time."""
        filters = {f["Name"]: f["Values"] for f in raw}
        states = filters.get("instance-state-name")
        # The filters taken apart once per call, not per instance (garbage collection lists
        # every instance ever launched about twice a minute).
        tag_values = [
            (name[4:], values) for name, values in filters.items() if name.startswith("tag:")
        ]
        tag_keys = set(filters["tag-key"]) if "tag-key" in filters else None
        now = self.clock.now()
        out = []
        for instance_id in ids or sorted(self.instances):
            inst = self.instances[instance_id]
            state = inst.advance(now)
            if states is not None and state not in states:
                continue
            tags = inst.tags
            if any(tags.get(key) not in values for key, values in tag_values):
                continue
            if tag_keys is not None and not tag_keys <= tags.keys():
                continue
            out.append(self._describe(inst, state))
        return out

    def _describe(self, inst: SimulatedInstance, state: str) -> dict[str, Any]:
        """An instance's description, the same object while the instance did not change
        through the API and its state is the same (see `_listing`)."""
        revision = self._instance_revision.get(inst.instance_id, -1)
        attached = inst.in_reservation(self.clock.now())
        kept = self._described.get(inst.instance_id)
        if (
            self.cache_descriptions
            and kept is not None
            and kept[0] == revision
            and kept[1] == (state, attached)
        ):
            return kept[2]
        lifecycle = "spot" if inst.capacity_type == "spot" else None
        if inst.reservation_type == "capacity-block":
            lifecycle = "capacity-block"
        elif inst.interruptible:
            lifecycle = "interruptible-capacity-reservation"
        out: dict[str, Any] = {
            "InstanceId": inst.instance_id,
            "InstanceType": inst.instance_type,
            "ImageId": inst.image_id,
            "SubnetId": inst.subnet_id,
            "Placement": {"AvailabilityZone": inst.zone},
            "State": {"Name": state},
            "InstanceLifecycle": lifecycle,
            "LaunchTime": inst.launched_at.isoformat(),
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(inst.tags.items())],
        }
        if inst.reservation_id:
            out["CapacityReservationSpecification"] = {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": inst.reservation_id},
            }
            if attached:
                out["CapacityReservationId"] = inst.reservation_id
        if self.cache_descriptions:
            self._described[inst.instance_id] = (revision, (state, attached), out)
        return out

    def terminate_instances(self, **kwargs: Any) -> Response:
        self.calls.append("TerminateInstances")
        out = []
        for instance_id in kwargs.get("InstanceIds") or []:
            inst = self.instances.get(instance_id)
            if inst is None:
                raise EC2APIError(
                    "InvalidInstanceID.NotFound",
                    f"The instance ID '{instance_id}' does not exist",
                    operation="TerminateInstances",
                )
            previous = inst.advance(self.clock.now())
            if inst.terminated_at is None:
                inst.terminated_at = self.clock.now()
            self._touch(instance_id)
            out.append(
                {
                    "InstanceId": instance_id,
                    "PreviousState": {"Name": previous},
                    "CurrentState": {"Name": inst.advance(self.clock.now())},
                }
            )
        return {"TerminatingInstances": out}

    def create_tags(self, **kwargs: Any) -> Response:
        self.calls.append("CreateTags")
        tags = {t["Key"]: t["Value"] for t in kwargs.get("Tags") or []}
        for resource in kwargs.get("Resources") or []:
            if resource in self.instances:
                self.instances[resource].tags.update(tags)
                self._touch(resource)
            elif resource in self.images:
                merged = {t["Key"]: t["Value"] for t in self.images[resource]["Tags"]} | tags
                self.images[resource]["Tags"] = [
                    {"Key": k, "Value": v} for k, v in sorted(merged.items())
                ]
            else:
                raise EC2APIError(
                    "InvalidID", f"The ID '{resource}' is not valid", operation="CreateTags"
                )
        return {}

    # ---- SSM ------------------------------------------------------------------------------------
    def get_parameter(self, **kwargs: Any) -> Response:
        self.calls.append("GetParameter")
        self._apply_scheduled_releases()
        name = kwargs["Name"]
        if name not in self.parameters and not self._stand_in(name):
            raise EC2APIError(
                "ParameterNotFound", f"Parameter {name} not found.", operation="GetParameter"
            )
        return {"Parameter": {"Name": name, "Type": "String", "Value": self.parameters[name]}}

    def get_parameters_by_path(self, **kwargs: Any) -> Response:
        self.calls.append("GetParametersByPath")
        self._apply_scheduled_releases()
        path = kwargs["Path"].rstrip("/") + "/"
        recursive = bool(kwargs.get("Recursive"))
        out = []
        for name in sorted(self.parameters):
            if not name.startswith(path):
                continue
            if not recursive and "/" in name[len(path) :]:
                continue
            out.append({"Name": name, "Type": "String", "Value": self.parameters[name]})
        return {"Parameters": out}

    # ---- Pricing --------------------------------------------------------------------------
    def get_products(self, **kwargs: Any) -> Response:
        """On-demand prices as the Pricing API's JSON price list (only `instanceType` filters)."""
        self.calls.append("GetProducts")
        wanted = {
            f["Value"] for f in kwargs.get("Filters") or [] if f.get("Field") == "instanceType"
        }
        out = []
        for info in self.catalog.infos:
            if wanted and info.name not in wanted:
                continue
            price = self.catalog.pricing[info.name].on_demand
            if price is None:
                continue
            out.append(
                json.dumps(_price_list_entry(info.name, self.catalog.region, price), sort_keys=True)
            )
        return {"PriceList": out}


def _glob(pattern: str, text: str) -> bool:
    import fnmatch  # noqa: PLC0415 - only image name filters need it

    return fnmatch.fnmatchcase(text, pattern)


def _price_list_entry(instance_type: str, region: str, price: float) -> dict[str, Any]:
    sku = hashlib.sha256(f"{region}:{instance_type}".encode()).hexdigest()[:16].upper()
    return {
        "product": {
            "sku": sku,
            "attributes": {
                "instanceType": instance_type,
                "regionCode": region,
                "operatingSystem": "Linux",
            },
        },
        "terms": {
            "OnDemand": {
                f"{sku}.JRTCKXETXF": {
                    "priceDimensions": {
                        f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "pricePerUnit": {"USD": f"{price:.10f}"},
                        }
                    }
                }
            }
        },
    }
