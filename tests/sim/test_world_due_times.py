"""The disruption cadence's kept due times are the plain computation's: on every call of an idle
disruption pass, `DisruptionCadence._due_time` (per-NodeClaim entries kept by object identity,
entries whose consolidateAfter ran out skipped) equals `next_disruption_time` of `due_inputs`
computed from scratch over the cluster's NodeClaims and NodePools, on random scenarios
(`tests/sim/laws.py` `stories`: scale-downs that empty nodes, drift, AMI releases, interruptions,
capacity windows, every consolidation policy and budget shape). A hand-made mutation of the
shortcut (entries kept by name, so a NodeClaim's new last pod event is not seen) is caught."""

from __future__ import annotations

import datetime as dt

from hypothesis import HealthCheck, example, given, note, settings

from gpucap.apis.nodepool import NodeClaim
from gpucap.sim import cadence as cadence_module
from gpucap.sim.cadence import DisruptionCadence
from gpucap.sim.world import World, due_inputs, next_disruption_time
from tests.sim import laws
from tests.sim.laws import EXAMPLES, ROLLING, Story, stories


class _Checked(DisruptionCadence):
    """A cadence that computes every due time both ways and keeps the pairs."""

    pairs: list[tuple[float, float]]

    def _due_time(self) -> float:
        kept = super()._due_time()
        plain = next_disruption_time(
            self.clock.now(),
            self.bus.now,
            *due_inputs(self.cluster.node_claims(), self.cluster.nodepools()),
        )
        self.pairs.append((kept, plain))
        return kept


class _ByName(_Checked):
    """The mutation: entries kept per NodeClaim name, whatever the object."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._by_name: dict[str, tuple[dt.datetime | None, int]] = {}

    def _due_time(self) -> float:
        pools = {np.name: np for np in self.cluster.nodepools()}
        now, seconds = self.clock.now(), self.bus.now
        soonest = float("inf")
        claim: NodeClaim
        for claim in self.cluster.node_claims():
            entry = self._by_name.get(claim.name)
            if entry is None:
                entry = self._by_name[claim.name] = cadence_module._due_of(claim, pools)
            start, after = entry
            if start is not None and (due := (start - now).total_seconds() + after) > 0:
                soonest = min(soonest, seconds + due)
        plain = next_disruption_time(
            now, seconds, *due_inputs(self.cluster.node_claims(), self.cluster.nodepools())
        )
        self.pairs.append((soonest, plain))
        return plain  # the run itself stays the plain one


def _pairs(story: Story, checked: type[_Checked]) -> list[tuple[float, float]]:
    """The (shortcut, plain) due times of every idle pass of `story` run with the cadence
    `checked`."""
    pairs: list[tuple[float, float]] = []

    class _Recording(World):
        cadence_type = checked

        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            self.cadence.pairs = pairs  # type: ignore[attr-defined]

    saved = laws.World
    laws.World = _Recording  # Story.run builds its world from the module's name
    try:
        story.run()
    finally:
        laws.World = saved
    return pairs


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stories())
@example(ROLLING)
def test_the_kept_due_time_is_the_plain_one_at_every_idle_pass(story: Story) -> None:
    note(story.to_yaml())
    pairs = _pairs(story, _Checked)
    assert [kept for kept, _ in pairs] == [plain for _, plain in pairs]


def test_the_rolling_story_asks_for_due_times_that_a_consolidate_after_fixes() -> None:
    pairs = _pairs(ROLLING, _Checked)
    assert len(pairs) > 5
    assert any(plain != float("inf") for _, plain in pairs)


def test_the_law_catches_entries_kept_by_name() -> None:
    pairs = _pairs(ROLLING, _ByName)
    assert any(kept != plain for kept, plain in pairs)
