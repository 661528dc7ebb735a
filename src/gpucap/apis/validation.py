"""CRD and API validation rules beyond types: patterns, CEL rules, cross-field checks.

Each rule is Karpenter's (the CRDs' OpenAPI patterns and CEL rules, `pkg/apis/crds/*.yaml`, and
the NodePool runtime validation `pkg/apis/v1/nodepool_validation.go` /
`nodeclaim_validation.go: ValidateRequirement`) or Kubernetes' (pod resources, tolerations,
node affinity, workload selectors). A rule yields a `Violation` with the field path; the
loader (`apis/serde.py`) attaches file, document and object. Messages reuse the CRD's wording
where it has one. Types, enums and required fields are checked earlier by the pydantic models;
field names and JSON types of the core kinds at every depth by the Kubernetes API schema
(`apis/schema.py`).

Called by `apis/serde.py` for every object it loads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from gpucap.apis import labels
from gpucap.apis.cron import CronError, parse_cron
from gpucap.apis.duration import (
    BUDGET_DURATION_PATTERN,
    NILLABLE_DURATION_PATTERN,
    TERMINATION_GRACE_PERIOD_PATTERN,
    DurationError,
    parse_go_duration,
    parse_go_duration_ns,
)
from gpucap.apis.ec2nodeclass import ALIAS_FAMILIES, EC2NodeClass
from gpucap.apis.errors import closest_name
from gpucap.apis.goparse import atoi, parse_float
from gpucap.apis.horizontalpodautoscaler import HorizontalPodAutoscaler, hpa_violations
from gpucap.apis.limits import MAX_WORKLOAD_PODS
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import (
    KarpenterTaint,
    NodeClaim,
    NodePool,
    NodeSelectorRequirementWithMinValues,
)
from gpucap.apis.podvalidation import POD_CHECKS
from gpucap.apis.quantity import CRD_QUANTITY_PATTERN, Quantity
from gpucap.apis.scenario import ADDON_NAMES, MAX_SCENARIO_SECONDS, Scenario
from gpucap.apis.violation import INT32_MAX, Found, Path, Violation

__all__ = ["MAX_STATIC_NODES", "Violation", "validate_object"]

# The most NodeClaims gpucap creates for one static NodePool: EKS's largest supported cluster
# (100,000 nodes). About 30 s of `plan`; a replicas count beyond it is an error, not a hang.
MAX_STATIC_NODES = 100_000


# ---- patterns copied from the CRDs ------------------------------------------------------------
_QUALIFIED_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_SCHEDULE_DESCRIPTORS = frozenset(
    f"@{d}" for d in ("annually", "yearly", "monthly", "weekly", "daily", "midnight", "hourly")
)
_ASCII_SPACE = frozenset(" \t\n\r\f\v")  # RE2's \s
_VOLUME_SIZE = re.compile(
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi"
    r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)
_EVICTION_VALUE = re.compile(
    r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$",
    re.ASCII,
)
_OVERLAY_PRICE = re.compile(r"^\d+(\.\d+)?$", re.ASCII)
# The CRD's priceAdjustment pattern is
#   ^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$
# Its `\d*\.?\d+` splits a run of digits every possible way, which Python's backtracking
# engine pays for (3.7 s for 20,000 digits and a stray letter; RE2 is linear). The same language,
# unambiguous: digits with an optional fraction, or a bare fraction.
_DECIMAL_NUMBER = r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
_OVERLAY_PRICE_ADJUSTMENT = re.compile(
    rf"[+-]{_DECIMAL_NUMBER}|\+{_DECIMAL_NUMBER}%|-[0-9]{{1,2}}(?:\.[0-9]+)?%|-100%"
)
_EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
_RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")


def validate_object(obj: Any) -> list[Violation]:
    """Every rule violation of one loaded object (empty when it is valid)."""
    checks: dict[type[Any], Callable[[Any], Found]] = {
        NodePool: _nodepool,
        NodeClaim: _nodeclaim,
        EC2NodeClass: _ec2nodeclass,
        NodeOverlay: _nodeoverlay,
        **POD_CHECKS,
        HorizontalPodAutoscaler: hpa_violations,
        Scenario: _scenario,
    }
    check = checks.get(type(obj))
    return list(check(obj)) if check else []


# ---- NodePool / NodeClaim -------------------------------------------------------------------
def _nodepool(np: NodePool) -> Found:
    spec = np.spec
    tpl = ("spec", "template")
    yield from _template_labels(np.spec.template.metadata.labels, (*tpl, "metadata", "labels"))
    yield from _requirements(spec.template.spec.requirements, (*tpl, "spec", "requirements"))
    yield from _taints(spec.template.spec.taints, spec.template.spec.startup_taints, (*tpl, "spec"))
    yield from _karpenter_durations(
        spec.template.spec.expire_after, spec.template.spec.termination_grace_period, (*tpl, "spec")
    )
    ref = spec.template.spec.node_class_ref
    ref_path = (*tpl, "spec", "nodeClassRef")
    for name, value in (("group", ref.group), ("kind", ref.kind), ("name", ref.name)):
        if value == "":
            yield Violation((*ref_path, name), f"{name} may not be empty")
    if "/" in ref.group:
        yield Violation((*ref_path, "group"), f"{ref.group!r} must not contain '/'")
    # An EKS Auto Mode NodeClass is right on an Auto Mode cluster (EKS's managed Karpenter
    # serves the pool), a KWOKNodeClass where Karpenter's KWOK provider runs, so only other
    # node classes are a warning; plan says it skips them all.
    if ref.group and ref.kind and not (ref.is_ec2nodeclass or ref.served_by):
        yield Violation(
            ref_path,
            f"{ref.group}/{ref.kind} is not the AWS provider's node class "
            "(karpenter.k8s.aws/EC2NodeClass); this NodePool would never become Ready",
            severity="warning",
        )
    d = spec.disruption
    if not NILLABLE_DURATION_PATTERN.fullmatch(d.consolidate_after):
        yield Violation(
            ("spec", "disruption", "consolidateAfter"),
            f"{d.consolidate_after!r} is not a duration like 30s, 5m, 1h30m or Never",
        )
    else:
        yield from _go_duration_range(
            d.consolidate_after, ("spec", "disruption", "consolidateAfter")
        )
    if len(d.budgets) > 50:
        yield Violation(("spec", "disruption", "budgets"), f"{len(d.budgets)} budgets; at most 50")
    for i, b in enumerate(d.budgets):
        bp: Path = ("spec", "disruption", "budgets", i)
        if not _BUDGET_NODES.fullmatch(b.nodes):
            yield Violation(
                (*bp, "nodes"), f"{b.nodes!r} must be a count (e.g. '1') or a percentage 0-100%"
            )
        elif not b.readable_nodes:
            yield Violation(
                (*bp, "nodes"),
                f"{_shorten(b.nodes)} is past int64: Karpenter cannot read it and fails closed, "
                "so this budget allows no disruption while active",
                severity="warning",
            )
        if (b.schedule is None) != (b.duration is None):
            yield Violation(bp, "'schedule' must be set with 'duration'")
        if b.schedule is not None:
            if not _schedule_shape(b.schedule):
                yield Violation(
                    (*bp, "schedule"),
                    f"{b.schedule!r} is not a cron schedule (5 fields or @daily, @hourly, ...)",
                )
            else:
                try:
                    parse_cron(b.schedule)
                except CronError as err:
                    yield Violation((*bp, "schedule"), f"{b.schedule!r}: {err}")
        if b.duration is not None and not BUDGET_DURATION_PATTERN.fullmatch(b.duration):
            yield Violation(
                (*bp, "duration"), f"{b.duration!r} must be hours and/or minutes, e.g. 10m, 1h30m"
            )
        elif b.duration is not None:
            yield from _go_duration_range(b.duration, (*bp, "duration"))
    if spec.weight is not None and not 1 <= spec.weight <= 100:
        yield Violation(("spec", "weight"), f"{spec.weight} is outside 1-100")
    if spec.replicas is not None:
        if spec.replicas < 0:
            yield Violation(("spec", "replicas"), f"{spec.replicas} is less than the minimum 0")
        if spec.limits and set(spec.limits) != {"nodes"}:
            yield Violation(
                ("spec", "limits"), "only 'limits.nodes' is supported on static NodePools"
            )
        if spec.weight is not None:
            yield Violation(("spec", "weight"), "'weight' is not supported on static NodePools")
        # The CRD bounds replicas at int64 only; gpucap creates each NodeClaim, so 2^31 of them
        # would never finish. limits.nodes caps what Karpenter creates.
        limit = (spec.limits or {}).get("nodes")
        nodes = spec.replicas if limit is None else min(spec.replicas, limit.value())
        if nodes > MAX_STATIC_NODES:
            yield Violation(
                ("spec", "replicas"),
                f"{spec.replicas} nodes is more than gpucap models for one NodePool (at most "
                f"{MAX_STATIC_NODES}, the largest EKS cluster; limits.nodes lowers it)",
            )


def _nodeclaim(nc: NodeClaim) -> Found:
    yield from _requirements(nc.spec.requirements, ("spec", "requirements"))
    yield from _taints(nc.spec.taints, nc.spec.startup_taints, ("spec",))
    yield from _karpenter_durations(
        nc.spec.expire_after, nc.spec.termination_grace_period, ("spec",)
    )


def _karpenter_durations(expire_after: str, tgp: str | None, base: Path) -> Found:
    if not NILLABLE_DURATION_PATTERN.fullmatch(expire_after):
        yield Violation(
            (*base, "expireAfter"),
            f"{expire_after!r} is not a duration like 720h, 30m, 1h30m or Never",
        )
    else:
        yield from _go_duration_range(expire_after, (*base, "expireAfter"))
    if tgp is not None and not TERMINATION_GRACE_PERIOD_PATTERN.fullmatch(tgp):
        yield Violation(
            (*base, "terminationGracePeriod"),
            f"{tgp!r} is not a duration like 1h, 30m or 1h30m (Never is not allowed)",
        )
    elif tgp is not None:
        yield from _go_duration_range(tgp, (*base, "terminationGracePeriod"))


def _go_duration_range(text: str, path: Path) -> Found:
    """A CRD duration that passed its pattern but that Karpenter cannot decode: it reads these
    fields with Go's time.ParseDuration (`NillableDuration`, `metav1.Duration`), which fails
    beyond int64 nanoseconds; the API server's pattern does not bound the digits."""
    if text == "Never":
        return
    try:
        parse_go_duration_ns(text)
    except DurationError as err:
        yield Violation(path, str(err))


def _template_labels(template_labels: dict[str, str], base: Path) -> Found:
    if len(template_labels) > 100:
        yield Violation(base, f"{len(template_labels)} labels; at most 100")
    for key, value in template_labels.items():
        problem = labels.restricted_label_problem(key)
        if problem:
            yield Violation((*base, key), problem)
        key_problem = labels.qualified_name_problem(key)
        if key_problem:
            yield Violation((*base, key), f"invalid label key {key!r}: {key_problem}")
        value_problem = labels.label_value_problem(value)
        if value_problem:
            yield Violation((*base, key), f"invalid label value {value!r}: {value_problem}")


def _requirements(
    reqs: Sequence[NodeSelectorRequirementWithMinValues], base: Path, *, overlay: bool = False
) -> Found:
    if len(reqs) > 100:
        yield Violation(base, f"{len(reqs)} requirements; at most 100")
    for i, r in enumerate(reqs):
        p: Path = (*base, i)
        key = labels.normalize_label(r.key)
        if len(r.key) > 316 or not _QUALIFIED_KEY.fullmatch(r.key):
            why = labels.qualified_name_problem(r.key) or "must be at most 316 characters"
            yield Violation((*p, "key"), f"{r.key!r} is not a valid label key: {why}")
        # NodeOverlays may select on karpenter.sh/nodepool; NodePools and NodeClaims may not.
        restricted = (
            None if overlay and key == labels.NODEPOOL else labels.restricted_label_problem(key)
        )
        if restricted:
            yield Violation((*p, "key"), restricted)
        for j, v in enumerate(r.values):
            if len(v) > 63 or not _LABEL_VALUE.fullmatch(v):
                yield Violation(
                    (*p, "values", j),
                    f"{v!r} is not a valid label value: {labels.label_value_problem(v)}",
                )
        if r.operator == "In" and not r.values:
            yield Violation(p, "requirements with operator 'In' must have a value defined")
        if overlay and r.operator == "NotIn" and not r.values:
            yield Violation(p, "requirements with operator 'NotIn' must have a value defined")
        # The CRD's CEL rule `int(x.values[0]) >= 0` and Karpenter's strconv.Atoi: ASCII
        # digits within int64 (`str.isdigit` would take `²`, which `int()` then rejects).
        bound = atoi(r.values[0]) if len(r.values) == 1 else None
        if r.operator in ("Gt", "Lt", "Gte", "Lte") and (bound is None or bound < 0):
            yield Violation(
                (*p, "values"),
                f"requirements operator {r.operator!r} must have a single positive integer value",
            )
        if r.min_values is not None:
            if not 1 <= r.min_values <= 50:
                yield Violation((*p, "minValues"), f"{r.min_values} is outside 1-50")
            elif r.operator == "In" and len(r.values) < r.min_values:
                yield Violation(
                    (*p, "minValues"),
                    "requirements with 'minValues' must have at least that many values specified "
                    f"in the 'values' field ({len(r.values)} < {r.min_values})",
                )
        known = labels.KNOWN_VALUES.get(key)
        if known is not None and r.operator == "In" and r.values:
            valid = [v for v in r.values if v in known]
            invalid = [v for v in r.values if v not in known]
            if not valid:
                yield Violation(
                    (*p, "values"),
                    f"no valid values found in {r.values} for {key}, "
                    f"expected one of: {sorted(known)}",
                )
            elif r.min_values is not None and len(valid) < r.min_values:
                yield Violation(
                    (*p, "values"),
                    f"not enough valid values for {key}: {len(valid)} < minValues {r.min_values}",
                )
            elif invalid:
                yield Violation(
                    (*p, "values"),
                    f"{invalid} are not values of {key} (expected {sorted(known)}); "
                    "Karpenter ignores them",
                    severity="warning",
                )


def _taints(
    taints: Sequence[KarpenterTaint], startup: Sequence[KarpenterTaint], base: Path
) -> Found:
    seen: dict[tuple[str, str], str] = {}
    for field, group in (("taints", taints), ("startupTaints", startup)):
        for i, t in enumerate(group):
            p: Path = (*base, field, i)
            if not _QUALIFIED_KEY.fullmatch(t.key):
                problem = labels.qualified_name_problem(t.key)
                yield Violation((*p, "key"), f"{t.key!r} is not a valid taint key: {problem}")
            if t.value and not _QUALIFIED_KEY.fullmatch(t.value):
                problem = labels.qualified_name_problem(t.value)
                yield Violation((*p, "value"), f"{t.value!r} is not a valid taint value: {problem}")
            pair = (t.key, t.effect)
            if pair in seen:
                yield Violation(
                    p, f"duplicate taint Key/Effect pair {t.key}={t.effect} (also in {seen[pair]})"
                )
            seen.setdefault(pair, f"{field}[{i}]")


# ---- EC2NodeClass -----------------------------------------------------------------------------
def _ec2nodeclass(nc: EC2NodeClass) -> Found:
    s = nc.spec
    if (s.role is None) == (s.instance_profile is None):
        yield Violation(("spec",), "must specify exactly one of ['role', 'instanceProfile']")
    if s.role == "":
        yield Violation(("spec", "role"), "role cannot be empty")
    if s.instance_profile == "":
        yield Violation(("spec", "instanceProfile"), "instanceProfile cannot be empty")
    yield from _ami_terms(nc)
    yield from _selector_terms(
        "subnetSelectorTerms", s.subnet_selector_terms, ("tags", "id"), r"subnet-[0-9a-z]+"
    )
    yield from _selector_terms(
        "securityGroupSelectorTerms",
        s.security_group_selector_terms,
        ("tags", "id", "name"),
        r"sg-[0-9a-z]+",
    )
    if s.tags:
        for key in s.tags:
            p: Path = ("spec", "tags", key)
            if key == "":
                yield Violation(p, "empty tag keys aren't supported")
            elif (
                key == "eks:eks-cluster-name"
                or key.startswith("kubernetes.io/cluster")
                or key in ("karpenter.sh/nodepool", "karpenter.sh/nodeclaim", labels.EC2NODECLASS)
            ):
                yield Violation(p, f"tag contains a restricted tag matching {key}")
    bdms = s.block_device_mappings or []
    if len(bdms) > 50:
        yield Violation(("spec", "blockDeviceMappings"), f"{len(bdms)} mappings; at most 50")
    if sum(1 for b in bdms if b.root_volume) > 1:
        yield Violation(
            ("spec", "blockDeviceMappings"),
            "must have only one blockDeviceMappings with rootVolume",
        )
    for i, b in enumerate(bdms):
        ep: Path = ("spec", "blockDeviceMappings", i, "ebs")
        if b.ebs is None:
            continue
        if b.ebs.snapshot_id is None and b.ebs.volume_size is None:
            yield Violation(ep, "snapshotID or volumeSize must be defined")
        if b.ebs.volume_size is not None and not _VOLUME_SIZE.fullmatch(b.ebs.volume_size):
            yield Violation(
                (*ep, "volumeSize"),
                f"{b.ebs.volume_size!r} must be 1-59000Gi, 1-64000G, 1-58Ti or 1-64T",
            )
        yield from _ebs_limits(b.ebs, ep)
        if b.ebs.volume_initialization_rate is not None:
            rate = b.ebs.volume_initialization_rate
            if not 100 <= rate <= 300:
                yield Violation((*ep, "volumeInitializationRate"), f"{rate} is outside 100-300")
            if not b.ebs.snapshot_id:
                yield Violation(ep, "snapshotID must be set when volumeInitializationRate is set")
    hop = s.metadata_options.http_put_response_hop_limit
    if not 1 <= hop <= 64:
        yield Violation(
            ("spec", "metadataOptions", "httpPutResponseHopLimit"), f"{hop} is outside 1-64"
        )
    if s.kubelet is not None:
        yield from _kubelet(s.kubelet, ("spec", "kubelet"))
    nis = s.network_interfaces or []
    if nis:
        if not any(
            n.device_index == 0 and n.network_card_index == 0 and n.interface_type == "interface"
            for n in nis
        ):
            yield Violation(
                ("spec", "networkInterfaces"),
                "networkInterfaces must include a primary interface with interfaceType='interface'",
            )
        pairs = [(n.network_card_index, n.device_index) for n in nis]
        efa_cards = [n.network_card_index for n in nis if n.interface_type == "efa-only"]
        if len(set(pairs)) != len(pairs) or len(set(efa_cards)) != len(efa_cards):
            yield Violation(
                ("spec", "networkInterfaces"),
                "networkInterfaces must not have duplicate networkCardIndex and deviceIndex "
                "pairs, and can have at most one efa device per network card",
            )
    pg = s.placement_group_selector
    if pg is not None and (pg.id is None) == (pg.name is None):
        yield Violation(
            ("spec", "placementGroupSelector"), "exactly one of 'name' and 'id' must be set"
        )
    if pg is not None and pg.id is not None and not re.fullmatch(r"pg-[0-9a-z]+", pg.id):
        yield Violation(("spec", "placementGroupSelector", "id"), f"{pg.id!r} must match pg-...")


def _ami_terms(nc: EC2NodeClass) -> Found:
    s = nc.spec
    base: Path = ("spec", "amiSelectorTerms")
    terms = s.ami_selector_terms
    if not terms:
        yield Violation(base, "at least one amiSelectorTerm is required")
    if len(terms) > 30:
        yield Violation(base, f"{len(terms)} terms; at most 30")
    has_alias = False
    for i, t in enumerate(terms):
        p: Path = (*base, i)
        if not (t.tags or t.id or t.name or t.alias or t.ssm_parameter):
            yield Violation(
                p,
                "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",
            )
        if t.id is not None and (t.alias or t.tags or t.name or t.owner):
            yield Violation(
                p,
                "'id' is mutually exclusive, cannot be set with a combination of other fields "
                "in amiSelectorTerms",
            )
        if t.id is not None and not re.search(r"ami-[0-9a-z]+", t.id):
            yield Violation((*p, "id"), f"{t.id!r} is not an AMI id (ami-...)")
        if t.tags is not None and any(k == "" or v == "" for k, v in t.tags.items()):
            yield Violation((*p, "tags"), "empty tag keys or values aren't supported")
        if t.alias is None:
            continue
        has_alias = True
        if t.tags or t.name or t.owner:
            yield Violation(
                p,
                "'alias' is mutually exclusive, cannot be set with a combination of other fields "
                "in amiSelectorTerms",
            )
        ap: Path = (*p, "alias")
        if len(t.alias) > 30:
            yield Violation(ap, f"{t.alias!r} is longer than 30 characters")
        if not re.fullmatch(r"[a-zA-Z0-9]+@.+", t.alias):
            yield Violation(
                ap, f"{t.alias!r} is improperly formatted, must match the format 'family@version'"
            )
            continue
        family, version = t.alias.split("@", 1)
        if family not in ALIAS_FAMILIES:
            yield Violation(
                ap,
                f"family {family!r} is not supported, must be one of the following: "
                "'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
            )
        elif family.startswith("windows") and version != "latest":
            yield Violation(ap, "windows families may only specify version 'latest'")
        if s.ami_family is not None and family in ALIAS_FAMILIES:
            want = ALIAS_FAMILIES[family]
            if s.ami_family not in (want, "Custom"):
                yield Violation(
                    ("spec", "amiFamily"),
                    f"if set, amiFamily must be '{want}' or 'Custom' when using an {want} alias",
                )
    if has_alias and len(terms) != 1:
        yield Violation(
            base,
            "'alias' is mutually exclusive, cannot be set with a combination of other "
            "amiSelectorTerms",
        )
    if terms and not has_alias and s.ami_family is None:
        yield Violation(
            ("spec",), "must specify amiFamily if amiSelectorTerms does not contain an alias"
        )


def _selector_terms(field: str, terms: Sequence[Any], kinds: tuple[str, ...], id_re: str) -> Found:
    base: Path = ("spec", field)
    if not terms:
        yield Violation(base, f"{field} cannot be empty")
    if len(terms) > 30:
        yield Violation(base, f"{len(terms)} terms; at most 30")
    for i, t in enumerate(terms):
        p: Path = (*base, i)
        set_fields = [k for k in kinds if getattr(t, k) is not None]
        if not set_fields:
            yield Violation(p, f"expected at least one, got none, {list(kinds)}")
        if t.id is not None and not re.search(id_re, t.id):
            yield Violation((*p, "id"), f"{t.id!r} does not match {id_re}")
        if t.tags is not None:
            if len(t.tags) > 20:
                yield Violation((*p, "tags"), f"{len(t.tags)} tags; at most 20")
            if any(k == "" or v == "" for k, v in t.tags.items()):
                yield Violation((*p, "tags"), "empty tag keys or values aren't supported")
    # The CRD's mutual-exclusion rules are written `!self.all(...)`: they fire only when *every*
    # term combines `id` with another field. gpucap reproduces that exactly.
    if terms and all(
        t.id is not None and len([k for k in kinds if getattr(t, k)]) > 1 for t in terms
    ):
        yield Violation(
            base,
            "'id' is mutually exclusive, cannot be set with a combination of other fields "
            f"in {field}",
        )


# EC2's limits per EBS volume type, as the EC2NodeClass CRD's field descriptions state them
# (aws/karpenter-provider-aws v1.14.1 `pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml`). The
# CRD does not enforce them (no minimum/maximum), so the API server accepts the object and EC2
# refuses the launch: a warning. Sizes in GiB.
_EBS_IOPS = {"gp3": (3000, 16000), "io1": (100, 64000), "io2": (100, 64000)}
_EBS_THROUGHPUT = {"gp3": (125, 1000)}
_EBS_SIZE_GIB = {
    "gp2": (1, 16384),
    "gp3": (1, 16384),
    "io1": (4, 16384),
    "io2": (4, 16384),
    "st1": (125, 16384),
    "sc1": (125, 16384),
    "standard": (1, 1024),
}
_SIZE_UNITS_GIB = {"Gi": 1.0, "G": 10**9 / 2**30, "Ti": 1024.0, "T": 10**12 / 2**30}
_INT64_MAX = 2**63 - 1


def _ebs_limits(ebs: Any, base: Path) -> Found:
    kind = ebs.volume_type or "gp3"  # EC2's default volume type in Karpenter's launch templates
    for field, value, limits in (
        ("iops", ebs.iops, _EBS_IOPS),
        ("throughput", ebs.throughput, _EBS_THROUGHPUT),
    ):
        if value is None:
            continue
        if not 0 <= value <= _INT64_MAX:
            # The CRD's int64 (and the API server's JSON decoding) bound it: an error.
            yield Violation((*base, field), f"{value} is outside 0-{_INT64_MAX} (int64)")
            continue
        if kind not in limits:
            yield Violation(
                (*base, field),
                f"{field} is not supported for {kind} volumes; EC2 would refuse the launch",
                severity="warning",
            )
            continue
        low, high = limits[kind]
        if not low <= value <= high:
            yield Violation(
                (*base, field),
                f"{value} is outside {low}-{high} for {kind} volumes; EC2 would refuse the launch",
                severity="warning",
            )
    size = ebs.volume_size
    m = re.fullmatch(r"([0-9]+)(Gi|G|Ti|T)", size) if size is not None else None
    if m is not None and kind in _EBS_SIZE_GIB:
        gib = int(m.group(1)) * _SIZE_UNITS_GIB[m.group(2)]
        low, high = _EBS_SIZE_GIB[kind]
        if not low <= gib <= high:
            yield Violation(
                (*base, "volumeSize"),
                f"{size} ({gib:.0f} GiB) is outside {low}-{high} GiB for {kind} volumes; "
                "EC2 would refuse the launch",
                severity="warning",
            )


def _kubelet(k: Any, base: Path) -> Found:
    # The CRD (v1.14.1): `format: int32, minimum: 0` for both.
    for field, value in (("maxPods", k.max_pods), ("podsPerCore", k.pods_per_core)):
        if value is not None and value < 0:
            yield Violation((*base, field), f"{value} is less than the minimum 0")
        elif value is not None and value > INT32_MAX:
            yield Violation((*base, field), f"{value} is outside the 32-bit integer range")
    for field, values in (("kubeReserved", k.kube_reserved), ("systemReserved", k.system_reserved)):
        for key, value in (values or {}).items():
            if key not in _RESERVED_RESOURCES:
                yield Violation(
                    (*base, field, key),
                    f"valid keys for {field} are ['cpu','memory','ephemeral-storage','pid']",
                )
            try:
                if isinstance(value, str) and not CRD_QUANTITY_PATTERN.fullmatch(value):
                    raise ValueError(value)  # the pattern kubelet.sh adds to the CRD
                q = Quantity.parse(value)
            except ValueError:
                yield Violation((*base, field, key), f"{value!r} is not a valid quantity")
                continue
            if q.nanos < 0:
                yield Violation(
                    (*base, field, key), f"{field} value cannot be a negative resource quantity"
                )
    for field, values in (
        ("evictionHard", k.eviction_hard),
        ("evictionSoft", k.eviction_soft),
        ("evictionSoftGracePeriod", k.eviction_soft_grace_period),
    ):
        for key, value in (values or {}).items():
            if key not in _EVICTION_SIGNALS:
                yield Violation(
                    (*base, field, key),
                    f"valid keys for {field} are {list(_EVICTION_SIGNALS)}",
                )
            if field != "evictionSoftGracePeriod" and not _EVICTION_VALUE.fullmatch(value):
                yield Violation((*base, field, key), f"{value!r} is not a quantity or a percentage")
    soft, grace = set(k.eviction_soft or {}), set(k.eviction_soft_grace_period or {})
    for key in sorted(soft - grace):
        yield Violation(
            (*base, "evictionSoft", key),
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
        )
    for key in sorted(grace - soft):
        yield Violation(
            (*base, "evictionSoftGracePeriod", key),
            "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
        )
    for field, v in (
        ("imageGCHighThresholdPercent", k.image_gc_high_threshold_percent),
        ("imageGCLowThresholdPercent", k.image_gc_low_threshold_percent),
    ):
        if v is not None and not 0 <= v <= 100:
            yield Violation((*base, field), f"{v} is outside 0-100")
    high, low = k.image_gc_high_threshold_percent, k.image_gc_low_threshold_percent
    if high is not None and low is not None and high <= low:
        yield Violation(
            base, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"
        )


# ---- NodeOverlay ------------------------------------------------------------------------------
def _nodeoverlay(o: NodeOverlay) -> Found:
    s = o.spec
    yield from _requirements(s.requirements, ("spec", "requirements"), overlay=True)
    if s.price is not None and s.price_adjustment is not None:
        yield Violation(("spec",), "cannot set both 'price' and 'priceAdjustment'")
    if s.price is not None and not _OVERLAY_PRICE.fullmatch(s.price):
        yield Violation(("spec", "price"), f"{s.price!r} must be a decimal number, e.g. 0.52")
    elif s.price is not None and parse_float(s.price) is None:
        yield Violation(("spec", "price"), _float_overflow(s.price))
    if s.price_adjustment is not None and not _OVERLAY_PRICE_ADJUSTMENT.fullmatch(
        s.price_adjustment
    ):
        yield Violation(
            ("spec", "priceAdjustment"),
            f"{s.price_adjustment!r} must be a signed amount (+0.1, -0.05) or percentage (-10%)",
        )
    elif s.price_adjustment is not None and parse_float(s.price_adjustment.rstrip("%")) is None:
        yield Violation(("spec", "priceAdjustment"), _float_overflow(s.price_adjustment))
    for name in s.capacity or {}:
        if name in ("cpu", "memory", "ephemeral-storage", "pods"):
            yield Violation(("spec", "capacity", name), "invalid resource restricted")
    if s.weight is not None and not 1 <= s.weight <= 10000:
        yield Violation(("spec", "weight"), f"{s.weight} is outside 1-10000")


def _schedule_shape(text: str) -> bool:
    """The CRD pattern of `budgets[].schedule`,
    `^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$`
    (matched whole, as before), in linear time. Python's backtracking engine takes minutes on
    that pattern for 2,000 spaces and a newline; Go's RE2, which the API server uses, is linear.
    So: a descriptor, or five non-empty pieces without a newline (`.`) split by single
    whitespace characters (`\\s`), found by stepping the pattern's states over the text."""
    if text in _SCHEDULE_DESCRIPTORS:
        return True
    states = {(0, False)}  # (separators used, current piece non-empty)
    for c in text:
        following: set[tuple[int, bool]] = set()
        for used, nonempty in states:
            if c != "\n":
                following.add((used, True))
            if c in _ASCII_SPACE and nonempty and used < 4:
                following.add((used + 1, False))
        if not following:
            return False
        states = following
    return (4, True) in states


def _shorten(text: str) -> str:
    return repr(text) if len(text) <= 200 else f"{text[:100]!r}... ({len(text)} characters)"


def _float_overflow(text: str) -> str:
    # The CRD pattern bounds the form, not the digits; Karpenter parses the value with
    # lo.Must(strconv.ParseFloat(...)), which fails past a float64 (its controller panics).
    return (
        f"{_shorten(text)} is too large for a float64 (Karpenter's strconv.ParseFloat rejects it)"
    )


# ---- Scenario ---------------------------------------------------------------------------------
def _scenario(sc: Scenario) -> Found:
    """What a scenario must hold on its own; the catalog, the files it names and the objects
    its events refer to are checked by the simulator's loader (`sim/scenario.py`)."""
    s = sc.spec
    total: float | None = None
    try:
        total = parse_go_duration(s.duration)
        if total <= 0:
            yield Violation(("spec", "duration"), f"{s.duration!r} must be positive")
        elif total > MAX_SCENARIO_SECONDS:
            total = None
            yield Violation(
                ("spec", "duration"),
                f"{s.duration!r} is longer than 720h (30 days), the longest scenario gpucap runs",
            )
    except DurationError as err:
        yield Violation(("spec", "duration"), str(err))
    for i, e in enumerate(s.events):
        yield from _scenario_event(e, ("spec", "events", i), s.duration, total)
    seen: set[str] = set()
    for i, addon in enumerate(s.addons):
        ap: Path = ("spec", "addons", i)
        if addon.name not in ADDON_NAMES:
            hint = closest_name(addon.name, ADDON_NAMES)
            yield Violation(
                (*ap, "name"),
                f"unknown add-on {addon.name!r}"
                + (
                    f" (did you mean {hint!r}?)"
                    if hint
                    else f"; gpucap knows {', '.join(ADDON_NAMES)}"
                ),
            )
        elif addon.name in seen:
            yield Violation((*ap, "name"), f"add-on {addon.name!r} is listed twice")
        seen.add(addon.name)
        ts = addon.time_slicing
        if ts is not None and not 1 <= ts.replicas <= MAX_WORKLOAD_PODS:
            yield Violation(
                (*ap, "timeSlicing", "replicas"),
                f"{ts.replicas} must be between 1 (no sharing) and {MAX_WORKLOAD_PODS:,}",
            )


def _scenario_event(e: Any, p: Path, duration: str, total: float | None) -> Found:
    try:
        at = parse_go_duration(e.at)
        if at < 0:
            yield Violation((*p, "at"), f"{e.at!r} is before the start of the scenario")
        elif total is not None and at > total:
            yield Violation((*p, "at"), f"{e.at!r} is after the end of the scenario ({duration})")
    except DurationError as err:
        yield Violation((*p, "at"), str(err))
    actions = e.actions
    if len(actions) != 1:
        yield Violation(
            p,
            "an event needs exactly one action of apply, scale, delete, capacity, interrupt, "
            f"amiRelease, reclaim; found {len(actions)}",
        )
    if e.apply is not None and (e.apply.file is None) == (e.apply.manifest is None):
        yield Violation((*p, "apply"), "set exactly one of 'file' and 'manifest'")
    if e.scale is not None and not 0 <= e.scale.replicas <= MAX_WORKLOAD_PODS:
        yield Violation(
            (*p, "scale", "replicas"),
            f"{e.scale.replicas} must be between 0 and {MAX_WORKLOAD_PODS:,} "
            "(gpucap's limit for one workload)",
        )
    if e.capacity is not None and e.capacity.for_ is not None:
        try:
            if parse_go_duration(e.capacity.for_) <= 0:
                yield Violation((*p, "capacity", "for"), f"{e.capacity.for_!r} must be positive")
        except DurationError as err:
            yield Violation((*p, "capacity", "for"), str(err))
