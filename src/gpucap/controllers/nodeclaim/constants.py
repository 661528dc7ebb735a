"""The NodeClaim lifecycle's and termination's timings, in seconds, each with where Karpenter
defines it (kubernetes-sigs/karpenter @ 2266468104f36373ed002241afaee2d3bbc26078). One place,
so the lifecycle, termination and interruption controllers and the simulator agree.
"""

from __future__ import annotations

__all__ = [
    "BACKOFF_BASE",
    "BACKOFF_MAX",
    "INSTANCE_TERMINATION_REQUEUE",
    "LAUNCH_TIMEOUT",
    "MESSAGE_LIMIT",
    "MIN_DRAIN_TIME",
    "REGISTRATION_TIMEOUT",
    "backoff",
]

# pkg/controllers/nodeclaim/lifecycle/liveness.go: `LaunchTimeout = time.Minute * 5`. A NodeClaim
# whose Launched condition is not True 5 minutes after it last changed is deleted
# (reason `launch_timeout`).
LAUNCH_TIMEOUT = 5 * 60.0
# pkg/controllers/nodeclaim/lifecycle/liveness.go: `registrationTimeout = time.Minute * 15`. A
# NodeClaim whose Registered condition is not True 15 minutes after it last changed (it is set
# Unknown on the first reconcile, when the NodeClaim launches) is deleted (`registration_timeout`).
REGISTRATION_TIMEOUT = 15 * 60.0
# pkg/controllers/nodeclaim/lifecycle/launch.go `truncateMessage`: a launch error's message is
# cut to 300 characters (and "..." added) in the Launched condition.
MESSAGE_LIMIT = 300
# pkg/controllers/nodeclaim/lifecycle/controller.go `Register`: a failed reconcile is retried by
# `NewTypedItemExponentialFailureRateLimiter(time.Second, time.Minute)`: 1 s, doubling per
# failure, at most 1 minute.
BACKOFF_BASE = 1.0
BACKOFF_MAX = 60.0
# pkg/controllers/node/termination/controller.go: `MinDrainTime = 5 * time.Second`; a node is
# drained no sooner than 5 s after draining started (pods bound just after the taint are caught).
MIN_DRAIN_TIME = 5.0
# pkg/controllers/node/termination/controller.go `awaitInstanceTermination` and
# pkg/controllers/nodeclaim/lifecycle/controller.go `finalize`: after `CloudProvider.Delete`
# succeeds, check again in 5 s until the cloud provider says the instance is gone.
INSTANCE_TERMINATION_REQUEUE = 5.0


def backoff(failures: int) -> float:
    """Seconds before retry number `failures` (1, 2, ...) of a failing reconcile."""
    exponent = max(failures - 1, 0)
    return min(BACKOFF_BASE * 2.0**exponent, BACKOFF_MAX)
