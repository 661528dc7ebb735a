"""A NodePool is static exactly when it sets `spec.replicas` (Karpenter's
`pkg/utils/nodepool/nodepool.go` `IsStatic`): one property that the provisioner, the scheduler,
disruption and lint all read."""

from __future__ import annotations

import pytest

from tests.builders import edit, load, nodepool


@pytest.mark.parametrize(("replicas", "static"), [(None, False), (0, True), (3, True)])
def test_a_nodepool_is_static_exactly_when_it_sets_replicas(
    replicas: int | None, static: bool
) -> None:
    doc = nodepool()
    if replicas is not None:  # a static pool may limit only `nodes`
        doc = edit(edit(doc, "spec.replicas", replicas), "spec.limits", {"nodes": "10"})
    result = load(doc)
    assert not result.errors, [str(e) for e in result.errors]
    (np,) = result.objects.nodepools
    assert np.is_static is static
