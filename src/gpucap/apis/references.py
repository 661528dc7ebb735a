"""References between the objects of one input that a cluster resolves by name.

A NodePool names its node class (`spec.template.spec.nodeClassRef`); Karpenter's NodePool
readiness controller sets the NodePool's NodeClassReady condition False ("NodeClassNotFound")
while that EC2NodeClass does not exist (kubernetes-sigs/karpenter
`pkg/controllers/nodepool/readiness/controller.go`), and a NodePool that is not ready launches
nothing. An input that
holds no EC2NodeClass at all may be applied to a cluster that has them; an input that holds some,
but not the one named, most likely misspells it (`gpus` beside `gpu`).

Called by `gpucap validate` (`cli/validate.py`): one warning per such NodePool, naming the file,
document and field, with the class it most likely meant; the exit status does not change.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpucap.apis.errors import closest_name
from gpucap.apis.nodepool import NodePool
from gpucap.apis.serde import Issue, Manifest

__all__ = ["NODE_CLASS_REF", "missing_node_classes"]

NODE_CLASS_REF = "NODECLASSREF"
_REF_NAME = ("spec", "template", "spec", "nodeClassRef", "name")


def missing_node_classes(manifests: Sequence[Manifest]) -> list[Issue]:
    """A warning for each NodePool whose EC2NodeClass is not among the input's EC2NodeClasses,
    when it holds at least one (`manifests`: the objects a cluster would hold, later wins)."""
    classes = [m.obj.metadata.name for m in manifests if m.obj.kind == "EC2NodeClass"]
    if not classes:
        return []
    known = set(classes)
    out: list[Issue] = []
    for m in manifests:
        if not isinstance(m.obj, NodePool):
            continue
        ref = m.obj.spec.template.spec.node_class_ref
        if not ref.is_ec2nodeclass or ref.name in known:
            continue
        hint = closest_name(ref.name, classes)
        out.append(
            Issue(
                "warning",
                m.source,
                m.ref,
                _REF_NAME,
                f"EC2NodeClass {ref.name!r} is not in the input, which has "
                f"{', '.join(repr(c) for c in classes)}"
                + (f"; did you mean {hint!r}?" if hint else "")
                + " (Karpenter keeps a NodePool whose node class is not found NotReady)",
                NODE_CLASS_REF,
            )
        )
    return out
