"""`runtime.collector.collector_paused` (loading, the plan loop, `World.run` and `plan` run
inside it): no cyclic collection inside, the collector given back as found, and what was made
inside moved to the oldest generation on the way out, so the first young collection afterwards
does not walk it."""

from __future__ import annotations

import gc

import pytest

from gpucap.runtime.collector import collector_paused


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_inside_and_given_back_as_it_was(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with collector_paused():
            assert not gc.isenabled()
            with collector_paused():  # nested: the outer one gives it back
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_what_was_made_inside_is_not_left_in_the_young_generations() -> None:
    assert gc.isenabled()
    with collector_paused():
        made = [[i] for i in range(2_000)]
    # Left young, the next young collection would walk all of them (and then the next older).
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(m) in oldest for m in made)
    assert gc.get_freeze_count() == 0  # unfrozen again: full collections still see them
