"""The event log of a simulated run in plain words: one line per notable thing that happened.

`timeline(events)` reads nothing but the events (`sim/recorder.py`) and tells them as a person
would, related events merged: an ICE and the launch that replaced it, a NodeClaim created and
launched together, a node registered and initialized, a pod's wait and its pull and load times; a
node that registers but never advertises its GPUs is said plainly, and so is one that registers
before any device plugin exists (then initializes once one arrives). Each line keeps the type of
the event that told it (`TimelineLine`), so the HTML report can filter them by kind;
`format_timeline` gives the same lines as text at wall-clock-style virtual times.

One wording for every reader: `gpucap simulate`'s terminal timeline and the demo
(`cli/simulate_render.py`, `cli/demo.py`) and the report's event table (`report/simulation.py`)
all call this module, so the two cannot drift apart. Text is returned unescaped: the CLI's
`Terminal` escapes each line whole, the report's template escapes HTML.

The small word helpers (`clock_time`, `format_duration`, `format_age`, `plural`, `offering_words`,
`node_words`, `price_words`, `gpu_words`) are shared by the same callers.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucap.runtime.clock import EPOCH
from gpucap.sim.recorder import Event

__all__ = [
    "FALLBACK_WINDOW",
    "TimelineLine",
    "clock_time",
    "collapse",
    "format_age",
    "format_duration",
    "format_timeline",
    "gpu_words",
    "names_words",
    "node_words",
    "offering_words",
    "plural",
    "price_words",
    "reason_words",
    "timeline",
]

# An ICE and a launch of the same NodePool this close together are one story.
FALLBACK_WINDOW = 60.0
# A fallback this soon after the failure (the next batch) is told without its delay.
FALLBACK_WAIT_UNSAID = 1.0
# Lines that say the same thing about objects of one series (`cpu-1`, `cpu-2`, ...) are told
# once, with a count and a span (`collapse`), when at least this many come with at most
# COLLAPSE_WINDOW between one and the next (Kubernetes aggregates similar events over 10
# minutes: client-go's `EventCorrelator`).
COLLAPSE_MIN = 3
COLLAPSE_WINDOW = 600.0
# An object's index in its series: `-12` in `cpu-12`, `default/vllm-3` (not `us-east-1a`).
_SERIES_INDEX = re.compile(r"(?<=[a-z0-9])-\d+\b")
_TIMES = "\N{MULTIPLICATION SIGN}"
# DisruptionBlocked messages that are a node's ordinary life (launching, initializing, taking
# its pods, going away: candidates.py's first reasons): its other lines tell it; in the JSON.
_NODE_LIFE = frozenset(
    {
        "Nodeclaim does not have an associated node",
        "Node isn't initialized",
        "Node is deleting or marked for deletion",
        "Node is nominated for a pending pod",
    }
)
_NAMES_SHOWN = 3
# Unconsolidatable messages that are a NodePool's setting, not a node's state: told once per
# NodePool (every node of the pool gets them; the JSON keeps each).
_POOL_SETTING = re.compile(
    r'^NodePool "(?P<pool>[^"]*)" has (?:consolidation disabled|consolidation policy WhenEmpty)'
)


# ---- words for times, counts and objects ---------------------------------------------------------
def clock_time(t: float, start: dt.datetime) -> str:
    """`HH:MM:SS` of `start` + t seconds (whole seconds, rounded down); `+Nd HH:MM:SS` once the
    run has crossed into a later day than `start`'s."""
    at = start + dt.timedelta(seconds=int(t // 1))
    days = (at.date() - start.date()).days
    return (f"+{days}d " if days else "") + at.strftime("%H:%M:%S")


def format_duration(seconds: float) -> str:
    """`45s`, `4m05s`, `1h02m05s` (whole seconds, rounded down)."""
    s = max(0, int(seconds // 1))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m{s:02d}s"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


def format_age(seconds: float) -> str:
    """An age as kubectl prints one (`95s`, `5m30s`, `42m`, `3h5m`, `20h`, `3d4h`, `12d`): the
    thresholds of k8s.io/apimachinery's duration.HumanDuration, years left out."""
    s = max(0, int(seconds // 1))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    return f"{h // 24}d"


# Reasons whose words are not just their parts (the rest: `reason_words` splits them).
_REASON_WORDS = {
    "SpotInterruption": "spot interruption",
    "nodeclass_not_ready": "EC2NodeClass not ready",
    "GarbageCollected": "instance gone (garbage collected)",
}
_WORD = re.compile(r"[A-Z][A-Z0-9]*(?=[A-Z][a-z]|[^A-Za-z0-9]|$)|[A-Z]?[a-z]+|\d+")


def reason_words(reason: object) -> str:
    """A reason code as words for prose (`insufficient_capacity` → `insufficient capacity`,
    `SpotInterruption` → `spot interruption`, `AMINotFound` → `AMI not found`); a reason that is
    already prose (has a space) as it is. The JSON keeps Karpenter's codes."""
    text = "" if reason is None else str(reason)
    if not text or " " in text:
        return text
    if text in _REASON_WORDS:
        return _REASON_WORDS[text]
    words = _WORD.findall(text.replace("_", " ").replace("-", " "))
    if not words:
        return text
    return " ".join(w if len(w) > 1 and w.isupper() else w.lower() for w in words)


def names_words(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMES_SHOWN])
    more = len(names) - _NAMES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def gpu_words(gpus: Mapping[str, Any]) -> str:
    """`1 nvidia.com/gpu`, `4 nvidia.com/gpu.shared`; `no GPUs` when empty or all zero."""
    parts = [f"{n} {r}" for r, n in sorted(gpus.items()) if n]
    return ", ".join(parts) if parts else "no GPUs"


def offering_words(
    capacity_type: str | None,
    instance_type: str | None,
    zone: str | None,
    family: str | None = None,
) -> str:
    """`spot g5.xlarge in us-east-1a`, `on-demand g6e.* in every zone`, `spot in us-east-1a`:
    the offerings a capacity event or a launch names."""
    types = instance_type or (f"{family}.*" if family else None)
    what = " ".join(w for w in (capacity_type, types) if w) or "every instance type"
    return f"{what} in {zone}" if zone else f"{what} in every zone"


def _offerings(offerings: Sequence[tuple[str, str, str]]) -> str:
    """Offerings in few words: `spot g5.xlarge, g6.xlarge in us-east-1a, us-east-1b` when they
    are every type in every zone of a capacity type, else one group per capacity type and zone."""
    groups: list[str] = []
    for cap in dict.fromkeys(c for c, _, _ in offerings):
        mine = [(it, z) for c, it, z in offerings if c == cap]
        types = list(dict.fromkeys(it for it, _ in mine))
        zones = list(dict.fromkeys(z for _, z in mine))
        if len(set(mine)) == len(types) * len(zones):
            groups.append(offering_words(cap, ", ".join(types), ", ".join(zones)))
            continue
        for zone in zones:
            in_zone = [it for it, z in dict.fromkeys(mine) if z == zone]
            groups.append(offering_words(cap, ", ".join(in_zone), zone))
    return "; ".join(groups)


def node_words(node: str | None, claim: str) -> str:
    """`node gpu-1`, or `node ip-10-0-1-2 (gpu-1)` when the node's name differs."""
    if not node or node == claim:
        return f"node {claim}"
    return f"node {node} ({claim})"


def price_words(per_hour: float) -> str:
    return f"${per_hour:.4f}/h"


def _metric_number(v: Any) -> str:
    """A metric value as people read it: `412`, `3.93`, `1,250,000`."""
    r = round(float(v), 2)
    return f"{r:,.0f}" if r.is_integer() else f"{r:,.2f}".rstrip("0")


# ---- the timeline -------------------------------------------------------------------------------
@dataclass(slots=True)
class _Index:
    """What the timeline needs to know about the whole log while it walks it."""

    created_at: dict[str, float]  # pod -> latest PodCreated time seen so far (walk order)
    launches: dict[str, Event]  # claim -> NodeClaimLaunched
    registered: dict[str, Event]
    initialized: dict[str, Event]


def _index(events: Sequence[Event]) -> _Index:
    idx = _Index({}, {}, {}, {})
    for e in events:
        claim = e.get("nodeClaim")
        if e.type == "NodeClaimLaunched":
            idx.launches.setdefault(claim, e)
        elif e.type == "NodeRegistered":
            idx.registered.setdefault(claim, e)
        elif e.type == "NodeInitialized":
            idx.initialized.setdefault(claim, e)
    return idx


def _batches(events: Sequence[Event]) -> list[list[int]]:
    """Indexes of the events grouped by equal time, in log order."""
    out: list[list[int]] = []
    for i, e in enumerate(events):
        if out and events[out[-1][0]].t == e.t:
            out[-1].append(i)
        else:
            out.append([i])
    return out


@dataclass(frozen=True, slots=True)
class TimelineLine:
    """One line of the timeline: at `t` seconds, `text`; `type` is the event type that told it
    (the first of the events merged into the line), which the report's filter groups by."""

    t: float
    text: str
    type: str


class _Timeline:
    def __init__(self, events: Sequence[Event]) -> None:
        self.events = sorted(events, key=lambda e: e.t)
        self.current: Event | None = None  # the event whose handler is talking
        self.idx = _index(self.events)
        self.batches = _batches(self.events)
        self.batch_of = [b for b in self.batches for _ in b]  # event index -> its batch
        self.done: set[int] = set()
        # Spot pools reclaimed while empty, whose reclaim and restore the timeline leaves out.
        self.quiet_pools: set[tuple[Any, Any]] = set()
        self.lines: list[tuple[float, int, TimelineLine]] = []  # (t, order, line)
        self.evicted_at: dict[str, float] = {}  # pod -> its last eviction, seen so far
        self.instance_gone: dict[str, float] = {}  # NodeClaim -> when EC2 took its instance
        # NodeClaim (or "NodePool <name> <reason>") -> whether its block in force was told
        self.blocked: dict[str, bool] = {}
        self.pool_settings: set[str] = set()  # Unconsolidatable `_POOL_SETTING` lines said

    def say(self, t: float, text: str) -> None:
        kind = self.current.type if self.current is not None else ""
        self.lines.append((t, len(self.lines), TimelineLine(t, text, kind)))

    def run(self) -> list[TimelineLine]:
        for batch in self.batches:
            self.batch(batch)
        self.lines.sort(key=lambda x: (x[0], x[1]))
        return [line for _, _, line in self.lines]

    def _take(self, batch: list[int], kind: str, **match: Any) -> list[Event]:
        """The not yet told events of `kind` in `batch` whose fields equal `match`; told now."""
        taken = []
        for i in batch:
            e = self.events[i]
            if i in self.done or e.type != kind:
                continue
            if all(e.get(k) == v for k, v in match.items()):
                self.done.add(i)
                taken.append(e)
        return taken

    def batch(self, batch: list[int]) -> None:
        # An interruption claims the offering it marks unavailable, and an ICE the launches and
        # failures of its batch, before those are told on their own.
        first = {"SpotPoolReclaimed": -1, "SpotInterruptionWarning": 0, "OfferingUnavailable": 1}
        for i in sorted(batch, key=lambda i: first.get(self.events[i].type, 2)):
            if i in self.done:
                continue
            e = self.events[i]
            handler = getattr(self, f"on_{e.type}", None)
            self.done.add(i)
            if handler is not None:
                self.current = e
                handler(e, batch)

    # -- scenario and capacity --
    def on_ScenarioEvent(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        kind = e.get("kind")
        own = {"capacity": "CapacityChanged", "interrupt": "SpotInterruptionWarning"}
        if kind in own and any(self.events[i].type == own[kind] for i in batch):
            return  # told by its own event
        detail = e.get("detail")
        if detail is None:
            obj, replicas, source = e.get("object"), e.get("replicas"), e.get("source")
            if kind == "scale" and obj is not None and replicas is not None:
                detail = f"scale {obj} to {replicas}"
            elif kind == "apply" and source is not None:
                detail = f"apply {source}"
            elif kind == "delete" and obj is not None:
                detail = f"delete {obj}"
            else:
                detail = str(kind)
        self.say(e.t, f"scenario events[{e.get('index')}]: {detail}")

    def on_HorizontalPodAutoscalerScaled(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        # `sim/podautoscaler.py`: "HPA vllm: 3 -> 5 replicas (requests_per_second 412 / target 80)"
        hpa = str(e.get("hpa", "")).removeprefix("default/")
        why = ""
        if e.get("metric") is not None:
            per = " per replica" if e.get("targetType") == "AverageValue" else ""
            value, target = (_metric_number(e.get(k)) for k in ("value", "target"))
            why = f" ({e.get('metric')} {value} / target {target}{per})"
        elif e.get("reason"):
            why = f" ({e.get('reason')})"
        self.say(e.t, f"HPA {hpa}: {e.get('previous')} -> {e.get('replicas')} replicas{why}")

    def on_CapacityChanged(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        what = offering_words(
            e.get("capacityType"), e.get("instanceType"), e.get("zone"), e.get("instanceFamily")
        )
        state = "capacity back" if e.get("available") else "no capacity"
        self.say(e.t, f"scenario: {what}: {state}")

    def on_SpotPoolReclaimed(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        # The spot market's reclaim (`sim/spotmarket.py`); the warnings follow on their own.
        # A pool with no instance of the run is not told (a day's market closes dozens of them,
        # and the summary counts them); a launch that finds one closed says so itself.
        n = e.get("instances") or 0
        if not n:
            self.quiet_pools.add((e.get("instanceType"), e.get("zone")))
            return
        warned = f"{n} instance{'s' if n != 1 else ''} warned"
        self.say(
            e.t,
            f"EC2 reclaims spot pool {e.get('instanceType')}/{e.get('zone')}: {warned}; "
            f"no spot there for {format_duration(e.get('outage') or 0)}",
        )

    def on_SpotPoolRestored(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        pool = (e.get("instanceType"), e.get("zone"))
        if pool in self.quiet_pools:
            self.quiet_pools.discard(pool)
            return
        self.say(e.t, f"EC2: spot pool {e.get('instanceType')}/{e.get('zone')} has capacity again")

    def on_AMIResolved(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        version = f" ({e.get('version')})" if e.get("version") else ""
        self.say(
            e.t,
            f"EC2NodeClass {e.get('nodeClass')}: {e.get('alias')} resolves to "
            f"{e.get('image')}{version}",
        )

    def on_NodePoolNotReady(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        why = e.get("message") or e.get("reason")
        self.say(
            e.t,
            f"NodePool {e.get('nodePool')} is not Ready ({reason_words(e.get('reason'))}): {why};"
            " Karpenter "
            "ignores it, so its pods get no NodeClaim",
        )

    def on_NodePoolReady(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        self.say(e.t, f"NodePool {e.get('nodePool')} is Ready again")

    def on_LimitReached(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        resource = e.get("resource")
        what = f"its {resource} limit" if resource else "its limits"
        message = e.get("message")
        self.say(
            e.t,
            f"NodePool {e.get('nodePool')} reached {what}" + (f": {message}" if message else ""),
        )

    # -- pods --
    def on_PodCreated(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        group = [e, *self._take(batch, "PodCreated")]
        for p in group:
            self.idx.created_at[p.get("pod")] = p.t
        names = [p.get("pod") for p in group]
        kinds = {gpu_words(p.get("gpus") or {}) for p in group}
        gpus = kinds.pop() if len(kinds) == 1 else None
        if len(group) == 1:
            self.say(e.t, f"pod {names[0]} created" + (f" ({gpus})" if gpus else ""))
        else:
            each = f" ({gpus} each)" if gpus and gpus != "no GPUs" else ""
            self.say(e.t, f"{len(group)} pods created: {names_words(names)}{each}")

    def on_PodUnschedulable(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        group = [e, *self._take(batch, "PodUnschedulable", reason=e.get("reason"))]
        names = [p.get("pod") for p in group]
        who = f"pod {names[0]}" if len(group) == 1 else f"{len(group)} pods ({names_words(names)})"
        self.say(e.t, f"{who} cannot be scheduled: {e.get('reason')}")

    def on_PodNotPlanned(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        group = [e, *self._take(batch, "PodNotPlanned", reason=e.get("reason"))]
        names = [p.get("pod") for p in group]
        who = f"pod {names[0]}" if len(group) == 1 else f"{len(group)} pods ({names_words(names)})"
        self.say(e.t, f"{who} not simulated: {e.get('reason')}")

    def _waited(self, pod: str, t: float) -> str:
        evicted = self.evicted_at.get(pod)
        if evicted is not None and evicted <= t:
            # Pending again under its own name: count from the eviction, not the creation.
            return f" {format_duration(t - evicted)} after its eviction"
        created = self.idx.created_at.get(pod)
        return "" if created is None else f" after {format_duration(t - created)}"

    def on_PodBound(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        group = [e, *self._take(batch, "PodBound", node=e.get("node"))]
        where = e.get("node")
        if len(group) == 1:
            pod = e.get("pod")
            self.say(e.t, f"pod {pod} bound to {where}{self._waited(pod, e.t)}")
        else:
            names = [p.get("pod") for p in group]
            self.say(e.t, f"{len(group)} pods bound to {where}: {names_words(names)}")

    def _ready_words(self, e: Event) -> str:
        parts = []
        if e.get("pullSeconds") is not None:
            parts.append(f"pull {format_duration(e.get('pullSeconds'))}")
        if e.get("loadSeconds") is not None:
            parts.append(f"load {format_duration(e.get('loadSeconds'))}")
        return self._waited(e.get("pod"), e.t) + (f" ({', '.join(parts)})" if parts else "")

    def on_PodReady(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        words = self._ready_words(e)
        group = [e]
        for i in batch:
            other = self.events[i]
            if i in self.done or other.type != "PodReady" or other.get("node") != e.get("node"):
                continue
            if self._ready_words(other) == words:
                self.done.add(i)
                group.append(other)
        if len(group) == 1:
            self.say(e.t, f"pod {e.get('pod')} ready{words}")
        else:
            self.say(
                e.t, f"{len(group)} pods ready{words}: {names_words([p.get('pod') for p in group])}"
            )

    def on_PodEvicted(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        group = [e, *self._take(batch, "PodEvicted", node=e.get("node"), reason=e.get("reason"))]
        names = [p.get("pod") for p in group]
        for p in group:
            self.evicted_at[p.get("pod")] = p.t
        who = f"pod {names[0]}" if len(group) == 1 else f"{len(group)} pods ({names_words(names)})"
        self.say(e.t, f"{who} evicted from {e.get('node')}: {reason_words(e.get('reason'))}")

    def on_PodDeleted(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        group = [e, *self._take(batch, "PodDeleted")]
        names = [p.get("pod") for p in group]
        if len(group) == 1:
            self.say(e.t, f"pod {names[0]} deleted")
        else:
            self.say(e.t, f"{len(group)} pods deleted: {names_words(names)}")

    # -- NodeClaims and nodes --
    def _launch_words(self, launch: Event) -> str:
        what = offering_words(
            launch.get("capacityType"), launch.get("instanceType"), launch.get("zone")
        )
        price = price_words(launch.get("pricePerHour"))
        return f"{what} launched ({launch.get('nodeClaim')}, {price})"

    def on_NodeClaimCreated(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        claim = e.get("nodeClaim")
        pods = [p.get("pod") for p in self._take(batch, "PodNominated", nodeClaim=claim)]
        for_pods = f" for {names_words(pods)}" if pods else ""
        launched = self._take(batch, "NodeClaimLaunched", nodeClaim=claim)
        if launched:
            self.say(
                e.t, f"NodePool {e.get('nodePool')}: {self._launch_words(launched[0])}{for_pods}"
            )
            return
        options = e.get("instanceTypeCount") or len(e.get("instanceTypes") or ())
        choice = f" ({plural(options, 'instance type')})" if options else ""
        self.say(e.t, f"NodePool {e.get('nodePool')}: NodeClaim {claim} created{for_pods}{choice}")

    def on_NodeClaimLaunched(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        self.say(e.t, f"NodePool {e.get('nodePool')}: {self._launch_words(e)}")

    def on_PodNominated(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        pass  # told with the NodeClaim created for the pod; a re-nomination is not news

    def _fallback(self, start: int, pools: set[str], t: float) -> int | None:
        """The index of the first untold launch of one of `pools` from event `start` on, within
        the fallback window and before any other launch failure of those pools."""
        for j in range(start, len(self.events)):
            e = self.events[j]
            if e.t - t > FALLBACK_WINDOW:
                return None
            if j in self.done or e.get("nodePool") not in pools:
                continue
            if e.type == "LaunchFailed":
                return None
            if e.type == "NodeClaimLaunched":
                return j
        return None

    def on_OfferingUnavailable(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        group = [e, *self._take(batch, "OfferingUnavailable")]
        gone = _offerings(
            [(o.get("capacityType"), o.get("instanceType"), o.get("zone")) for o in group]
        )
        failed = self._take(batch, "LaunchFailed")
        for f in failed:  # the claim that failed is part of this story, from creation to deletion
            for kind in ("NodeClaimCreated", "PodNominated", "NodeClaimDeleted"):
                self._take(batch, kind, nodeClaim=f.get("nodeClaim"))
        if failed:
            j = self._fallback(batch[0], {str(f.get("nodePool")) for f in failed}, e.t)
        else:  # the same CreateFleet call may have fallen back to another offering
            j = next(
                (
                    i
                    for i in batch
                    if i not in self.done and self.events[i].type == "NodeClaimLaunched"
                ),
                None,
            )
        lost = ", ".join(str(f.get("nodeClaim")) for f in failed)
        if j is None:
            if failed:
                self.say(e.t, f"{gone} unavailable: {lost} not launched, its pods wait")
            else:
                self.say(e.t, f"{gone} marked unavailable: {reason_words(e.get('reason'))}")
            return
        launch = self.events[j]
        self.done.add(j)
        # The replacement's own creation and nominations are part of this story.
        for kind in ("NodeClaimCreated", "PodNominated"):
            self._take(self.batch_of[j], kind, nodeClaim=launch.get("nodeClaim"))
        later = launch.t - e.t
        # Said when the fallback waited (the pod controller's requeue, a mark running out),
        # not for the next batch's second.
        when = f" {format_duration(later)} later" if later > FALLBACK_WAIT_UNSAID else ""
        not_launched = f" ({lost} not launched)" if failed else ""
        self.say(e.t, f"{gone} unavailable{not_launched} →{when} {self._launch_words(launch)}")

    def on_LaunchFailed(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        self._take(batch, "NodeClaimDeleted", nodeClaim=e.get("nodeClaim"))
        reason, message = e.get("reason"), e.get("message") or ""
        # The reason said once: not `launch failed: launch failed: ...`, nor the message's own
        # `Reason: ` prefix again.
        message = message.removeprefix(f"{reason}: ") if reason else message
        parts = [reason_words(reason)] if reason and reason != "LaunchFailed" else []
        parts += [message] if message else []
        said = "".join(f": {p}" for p in parts)
        self.say(e.t, f"NodeClaim {e.get('nodeClaim')} launch failed{said}")

    def on_NodeRegistered(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        claim = e.get("nodeClaim")
        node = node_words(e.get("node"), claim)
        init = self.idx.initialized.get(claim)
        launch = self.idx.launches.get(claim)
        gpus = launch.get("gpus") if launch is not None else None
        # A node launched without GPUs (a CPU type) has no device plugin to wait for.
        no_plugin = gpus != 0 and "devicePlugin" in e.fields and e.get("devicePlugin") is None
        if init is not None:
            if no_plugin:  # the wait is the story: say it when it starts
                self.say(e.t, f"{node} registered; GPU not advertised: no device plugin yet")
            return  # otherwise told when it initializes
        if launch is not None and not gpus:  # no GPU: no device plugin to wait for
            why = "not initialized by the end of the run"
        elif no_plugin:
            why = "GPU never advertised: no device plugin in the cluster"
        elif "devicePlugin" in e.fields:
            why = (
                f"GPU not advertised by the end of the run ({e.get('devicePlugin')} still starting)"
            )
        elif gpus:
            why = "GPU never advertised (no device plugin advertised it)"
        else:
            why = "never initialized"
        self.say(e.t, f"{node} registered; {why}")

    def on_NodeInitialized(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        claim = e.get("nodeClaim")
        node = node_words(e.get("node"), claim)
        advertised = gpu_words(e.get("gpusAdvertised") or {})
        reg = self.idx.registered.get(claim)
        if reg is None or reg.t == e.t:
            self.say(e.t, f"{node} registered and initialized: {advertised} advertised")
        else:
            after = format_duration(e.t - reg.t)
            self.say(e.t, f"{node} initialized {after} after registering: {advertised} advertised")

    def on_SpotInterruptionWarning(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        claim = e.get("nodeClaim")
        self._take(batch, "DisruptionDecision", nodeClaim=claim)
        deleted = self._take(batch, "NodeClaimDeleted", nodeClaim=claim)
        launch = self.idx.launches.get(claim)
        where = ""
        if launch is not None:
            where = (
                " (" + offering_words("spot", launch.get("instanceType"), launch.get("zone")) + ")"
            )
            self._take(
                batch,
                "OfferingUnavailable",
                instanceType=launch.get("instanceType"),
                zone=launch.get("zone"),
                capacityType=launch.get("capacityType"),
            )
        then = ": NodeClaim deleted, its pods will be provisioned again" if deleted else ""
        self.say(e.t, f"spot interruption warning for {claim}{where}{then}")

    def on_DisruptionDecision(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        claim = e.get("nodeClaim")
        if self._take(batch, "NodeClaimDeleted", nodeClaim=claim):
            self.say(e.t, f"NodeClaim {claim} deleted: disrupted ({reason_words(e.get('reason'))})")
        else:
            self.say(e.t, f"NodeClaim {claim} to be disrupted: {reason_words(e.get('reason'))}")

    def on_DisruptionBlocked(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        pool, claim = e.get("nodePool"), e.get("nodeClaim")
        message = str(e.get("message") or "").rstrip()  # Go's scheduler errors end in a space
        if claim is None:  # a NodePool's budget
            reason = reason_words(e.get("reason"))
            self.blocked[f"NodePool {pool} {e.get('reason')}"] = True
            self.say(
                e.t,
                f"NodePool {pool}: no disruptions allowed for {reason}: its budget allows none",
            )
            return
        told = message not in _NODE_LIFE
        self.blocked[claim] = told
        if not told:
            return  # part of the node's own story, told by its other lines
        named = [str(e.get(k)) for k in ("pod", "pdb", "pdbs") if e.get(k)]
        objects = f" ({', '.join(named)})" if named else ""
        self.say(e.t, f"{node_words(e.get('node'), claim)} cannot be disrupted: {message}{objects}")

    def on_DisruptionUnblocked(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        pool, claim = e.get("nodePool"), e.get("nodeClaim")
        if claim is None:
            if self.blocked.pop(f"NodePool {pool} {e.get('reason')}", False):
                reason = reason_words(e.get("reason"))
                self.say(e.t, f"NodePool {pool}: its budget allows disruptions for {reason} again")
            return
        if self.blocked.pop(claim, False):
            self.say(e.t, f"{node_words(e.get('node'), claim)} may be disrupted again")

    def on_Unconsolidatable(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        message = str(e.get("message") or "")
        setting = _POOL_SETTING.match(message)
        if setting is not None:
            if message not in self.pool_settings:
                self.pool_settings.add(message)
                pool = setting["pool"]
                if "disabled" in message:
                    words = "consolidateAfter is Never, its nodes are never consolidated"
                else:
                    words = (
                        "consolidationPolicy WhenEmpty, its nodes with pods are not consolidated"
                    )
                self.say(e.t, f"NodePool {pool}: {words}")
            return
        self.say(
            e.t,
            f"{node_words(e.get('node'), e.get('nodeClaim'))} not consolidated: {e.get('message')}",
        )

    def on_EvictionBlocked(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        pod = str(e.get("pod"))
        pdb = e.get("pdb")
        if pdb is None:
            by = "more than one PDB (an eviction supports one)"
        else:
            namespace = pod.split("/", 1)[0] + "/"
            by = f"PDB {str(pdb).removeprefix(namespace)}"
            for key in ("maxUnavailable", "minAvailable"):
                if e.get(key) is not None:
                    by += f" ({key} {e.get(key)})"
        took = format_duration(e.get("for") or 0)
        if e.get("evicted"):
            self.say(e.t, f"eviction of {pod} blocked by {by} for {took}")
        else:
            self.say(e.t, f"eviction of {pod} still blocked by {by} at the end ({took})")

    def on_NodeClaimDeleted(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        reason = reason_words(e.get("reason"))
        self.say(e.t, f"NodeClaim {e.get('nodeClaim')} deleted" + (f": {reason}" if reason else ""))

    def on_CapacityReservationChanged(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        words = {
            "active": "starts: its reserved offerings appear",
            "expiring": "is a Capacity Block 40 minutes from its end: Karpenter deletes its "
            "NodeClaims and offers it no more",
            "reclaiming": "is 30 minutes from its end: EC2 takes its instances back",
            "expired": "ends",
        }
        self.say(
            e.t,
            f"capacity reservation {e.get('reservation')} ({e.get('instanceType')} in "
            f"{e.get('zone')}) {words.get(str(e.get('state')), str(e.get('state')))}",
        )

    def on_CapacityReservationInstanceInterrupted(  # noqa: N802
        self, e: Event, batch: list[int]
    ) -> None:
        claim = e.get("nodeClaim")
        self._take(batch, "DisruptionDecision", nodeClaim=claim)
        self.say(
            e.t,
            f"interruptible capacity reservation {e.get('reservation')} reclaimed by its owner: "
            f"{claim} gets EC2's two-minute warning; Karpenter marks the reservation unavailable "
            "and deletes the NodeClaim",
        )

    def on_CapacityTypeDemoted(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        self.say(
            e.t,
            f"NodeClaim {e.get('nodeClaim')} relabelled on-demand: its instance is no longer in "
            "its reservation (consolidation now prices it as on-demand)",
        )

    def on_InstanceTerminated(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        claim = e.get("nodeClaim")
        self.instance_gone[claim] = e.t
        if e.get("reason") in ("CapacityBlockEnded", "CapacityReservationInterrupted"):
            self.say(
                e.t,
                f"EC2 took back the reserved instance of {node_words(e.get('node'), claim)} "
                f"({reason_words(e.get('reason'))}): the node stops reporting",
            )
            return
        self.say(
            e.t,
            f"EC2 took back the spot instance of {node_words(e.get('node'), claim)} before its "
            "drain finished: no longer billed; the node stops reporting",
        )

    def on_NodeNotReady(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        self.say(
            e.t,
            f"{node_words(e.get('node'), e.get('nodeClaim'))} NotReady: its instance is gone; "
            "Karpenter removes it without finishing the drain",
        )

    def on_NodeTerminated(self, e: Event, batch: list[int]) -> None:  # noqa: N802
        claim = e.get("nodeClaim")
        launch = self.idx.launches.get(claim)
        bill = ""
        if launch is not None:
            seconds = min(e.t, self.instance_gone.get(claim, e.t)) - launch.t
            cost = seconds / 3600 * launch.get("pricePerHour")
            bill = f" after {format_duration(seconds)}, ${cost:.2f}"
        self.say(e.t, f"{node_words(e.get('node'), claim)} terminated{bill}")


def timeline(events: Sequence[Event], *, start: dt.datetime = EPOCH) -> list[TimelineLine]:
    """The notable events in plain words, in time order (see the module docstring); events no
    person needs (PodNominated alone) are left out, unknown types too; repeated lines
    collapsed (`collapse`; `start` dates their spans)."""
    return collapse(_Timeline(events).run(), start=start)


def collapse(lines: Sequence[TimelineLine], *, start: dt.datetime = EPOCH) -> list[TimelineLine]:
    """`lines` with each run of the same line told once: lines of one type whose words are equal
    once the objects' series indexes are read as `N` (`NodeClaim cpu-N launch failed: ...`), at
    least COLLAPSE_MIN of them, each within COLLAPSE_WINDOW of the one before, become one line
    at the first one's place and time, with the count and the span (`NodeClaim cpu-N launch
    failed`, the count, `between 00:00:01 and 05:59:50: ...`). Fewer, or further apart, stay as
    they are. A bad day's log is thousands of such lines; the JSON keeps every event."""
    groups: list[list[int]] = []
    open_: dict[tuple[str, str], list[int]] = {}
    for i, line in enumerate(lines):
        key = (line.type, _SERIES_INDEX.sub("-N", line.text))
        group = open_.get(key)
        if group is None or line.t - lines[group[-1]].t > COLLAPSE_WINDOW:
            group = open_[key] = []
            groups.append(group)
        group.append(i)
    told: dict[int, TimelineLine] = {}
    for group in groups:
        if len(group) < COLLAPSE_MIN:
            told.update((i, lines[i]) for i in group)
            continue
        first, last = lines[group[0]], lines[group[-1]]
        texts = {lines[i].text for i in group}
        text = first.text if len(texts) == 1 else _SERIES_INDEX.sub("-N", first.text)
        if first.t == last.t:
            span = f"at {clock_time(first.t, start)}"
        else:
            span = f"between {clock_time(first.t, start)} and {clock_time(last.t, start)}"
        head, sep, tail = text.partition(": ")
        said = f"{head} {_TIMES}{len(group)} {span}{sep}{tail}"
        told[group[0]] = TimelineLine(first.t, said, first.type)
    return [told[i] for i in sorted(told)]


def format_timeline(events: Sequence[Event], *, start: dt.datetime = EPOCH) -> list[str]:
    """`timeline(events)` as lines `HH:MM:SS words` (`start` + t)."""
    return [f"{clock_time(line.t, start)} {line.text}" for line in timeline(events, start=start)]
