"""Karpenter's disruption constants, shared by the lint rules and the disruption controllers.

Values from kubernetes-sigs/karpenter @ 2266468104f3 (`pkg/controllers/disruption/`):
`consolidation.go`, `controller.go`, `multinodeconsolidation.go`,
`singlenodeconsolidation.go`, `queue.go`. Seconds, as the simulator's clock counts them.
"""

from __future__ import annotations

__all__ = [
    "COMMAND_VALIDATION_DELAY_S",
    "MULTI_NODE_CONSOLIDATION_MAX_CANDIDATES",
    "MULTI_NODE_CONSOLIDATION_TIMEOUT_S",
    "POLLING_PERIOD_S",
    "SINGLE_NODE_CONSOLIDATION_TIMEOUT_S",
    "SPOT_TO_SPOT_THRESHOLD",
]

# consolidation.go `MinInstanceTypesForSpotToSpotConsolidation`: a spot node is replaced by a
# cheaper spot node only when the replacement may launch as at least this many instance types
# (and the launch is then limited to the 15 cheapest), so consolidation does not walk down the
# price-capacity-optimized ladder (designs/spot-consolidation.md).
SPOT_TO_SPOT_THRESHOLD = 15
# consolidation.go `commandValidationDelay`: a consolidation decision is checked again after
# this long before it is carried out.
COMMAND_VALIDATION_DELAY_S = 15.0
# controller.go `pollingPeriod`: how often the disruption controller looks for candidates.
POLLING_PERIOD_S = 10.0
# multinodeconsolidation.go: at most 100 candidates per multi-node pass, for 1 minute at most.
MULTI_NODE_CONSOLIDATION_MAX_CANDIDATES = 100
MULTI_NODE_CONSOLIDATION_TIMEOUT_S = 60.0
# singlenodeconsolidation.go `SingleNodeConsolidationTimeoutDuration`.
SINGLE_NODE_CONSOLIDATION_TIMEOUT_S = 180.0
