"""The static-drift hashes: what Karpenter's `hashstructure` hash of an API object counts, and
the NodePool's hash (`NodePool.Hash()`, kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go`).

Karpenter hashes with mitchellh/hashstructure v2 (`FormatV2`, `SlicesAsSets`, `IgnoreZeroValue`,
`ZeroNil`) and compares the decimal number it prints; a NodeClaim carries the hash of its NodePool
from when it was created (`karpenter.sh/nodepool-hash`, with `karpenter.sh/nodepool-hash-version`),
and a different hash under the same version is static drift. gpucap does not reproduce
Karpenter's numbers (nobody compares them across tools); it reproduces which changes make them
differ:

- a field tagged `hash:"ignore"` does not count (`structure_hash` is given a view without it);
- every list is a set: reordering taints, tags or block devices changes nothing;
- maps are unordered; a field left unset and a field at its zero value hash alike;
- durations count by value (`60m` and `1h` are the same), `Never` differently from any value.

`nodepool_hash` hashes exactly `spec.template` minus `requirements` (the only `hash:"ignore"` in
it): the template's labels and annotations, taints, startup taints, `nodeClassRef`,
`expireAfter` and `terminationGracePeriod`. Everything else of the NodePool — `weight`,
`limits`, `disruption` (budgets, consolidation policy, consolidateAfter), `replicas` — lies
outside the template and never drifts a node; requirements drift separately (by the NodeClaim's
labels, `controllers/disruption/drift.py`). Where gpucap differs: an empty list and an absent
one hash alike (Karpenter's hash tells `taints: []` from no `taints`; gpucap's models cannot),
and so do a label or annotation with an empty value and none (Karpenter keeps empty map values).

Called by the provisioner (the annotations of a new NodeClaim), drift detection, and the AWS
provider (`nodeclass_hash`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from gpucap.apis.duration import DurationError, parse_karpenter_duration
from gpucap.apis.nodepool import KarpenterTaint, NodePool

__all__ = [
    "NODEPOOL_HASH_ANNOTATION",
    "NODEPOOL_HASH_VERSION",
    "NODEPOOL_HASH_VERSION_ANNOTATION",
    "nodepool_hash",
    "structure_hash",
]

NODEPOOL_HASH_ANNOTATION = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION_ANNOTATION = "karpenter.sh/nodepool-hash-version"
# pkg/apis/v1/nodepool.go `NodePoolHashVersion`: bumped when the hash of an unchanged NodePool
# would change; NodeClaims of another version are not compared (and get re-stamped).
NODEPOOL_HASH_VERSION = "v3"


def structure_hash(value: Any) -> str:
    """A decimal 64-bit hash of a JSON-like value with hashstructure's options as Karpenter
    sets them: lists as sets, maps unordered, None and empty values as if absent."""
    digest = hashlib.sha256(_canonical(value).encode()).digest()
    return str(int.from_bytes(digest[:8], "big"))


def _canonical(value: Any) -> str:
    if isinstance(value, Mapping):
        parts = [
            f"{json.dumps(str(k))}:{_canonical(v)}"
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
            if not _zero(v)
        ]
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        # SlicesAsSets: element order does not count.
        return "[" + ",".join(sorted(_canonical(v) for v in value)) + "]"
    return json.dumps(value)


def _zero(value: Any) -> bool:
    """IgnoreZeroValue + ZeroNil: a field at its zero value (unset, "", an empty list or map)
    is left out. A number or boolean is kept: gpucap's models cannot tell an explicit 0 or
    false of a pointer field (which Karpenter hashes) from a value field's zero."""
    return value is None or value == "" or (isinstance(value, Mapping | list | tuple) and not value)


def _duration(text: str | None) -> int | str | None:
    if text is None:
        return None
    try:
        seconds = parse_karpenter_duration(text)
    except DurationError:
        return text  # validation reports it; the hash still tells it apart
    return "Never" if seconds is None else seconds


def _taint(t: KarpenterTaint) -> dict[str, Any]:
    return {"key": t.key, "value": t.value, "effect": t.effect, "timeAdded": t.time_added}


def nodepool_hash(nodepool: NodePool) -> str:
    """Karpenter's `NodePool.Hash()`: the NodePool template's static fields (see the module
    docstring). A NodeClaim whose `karpenter.sh/nodepool-hash` differs, under the same hash
    version, is drifted (`NodePoolDrifted`)."""
    template = nodepool.spec.template
    spec = template.spec
    ref = spec.node_class_ref
    return structure_hash(
        {
            "labels": dict(template.metadata.labels),
            "annotations": dict(template.metadata.annotations),
            "taints": [_taint(t) for t in spec.taints],
            "startupTaints": [_taint(t) for t in spec.startup_taints],
            "nodeClassRef": {"group": ref.group, "kind": ref.kind, "name": ref.name},
            "terminationGracePeriod": _duration(spec.termination_grace_period),
            "expireAfter": _duration(spec.expire_after),
        }
    )
