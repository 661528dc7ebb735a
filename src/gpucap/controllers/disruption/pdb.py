"""Moved: the PodDisruptionBudget limits are `gpucap.utils.pdb` (Karpenter's `pkg/utils/pdb/pdb.go`
@ 2266468104f3), below the controllers, so that provisioning and termination need not import the
disruption controller for them. Kept only for `sim/podcontroller.py`'s import until it names
`gpucap.utils.pdb`; then this module goes. Import from `gpucap.utils.pdb`."""

from __future__ import annotations

from gpucap.utils.pdb import Limits

__all__ = ["Limits"]
