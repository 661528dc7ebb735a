"""The provisioning loop runs without the cyclic garbage collector (`loop.run_passes`): it is
off while the passes run, back as it was afterwards (also after an error), and the passes leave
no garbage cycles behind that only the collector could free (why pausing it costs no memory)."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instance.launch import Launch, LaunchPreview
from gpucap.controllers.provisioning.loop import run_passes
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.scheduler import PoolInput
from tests.builders import GPU_TOLERATION, deployment, pod, to_yaml
from tests.scheduling.builders import cpu_pool, gpu_pool, instance_type

TYPES = [
    instance_type("m5.large", cpu=2, memory_gib=8, price=0.096),
    instance_type("m5.xlarge", cpu=4, memory_gib=16, price=0.192),
    instance_type("g5.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.006),
]


class _Watching:
    """The AWS launch preview, noting whether the collector was on at each launch."""

    def __init__(self) -> None:
        self.inner = LaunchPreview()
        self.collector_on: list[bool] = []

    def offered(self, *args: Any, **kwargs: Any) -> list[InstanceType]:
        return self.inner.offered(*args, **kwargs)

    def launch(
        self,
        instance_types: Iterable[InstanceType],
        requirements: Requirements,
        requests: Mapping[str, int] | None = None,
        *,
        among: Sequence[InstanceType] | None = None,
    ) -> Launch:
        self.collector_on.append(gc.isenabled())
        return self.inner.launch(instance_types, requirements, requests, among=among)


def _inputs() -> tuple[list[PoolInput], list[Any]]:
    docs = [
        cpu_pool(),
        gpu_pool(),
        deployment("web", replicas=6, cpu="1"),
        deployment("llm", replicas=2, gpu=1, tolerations=[GPU_TOLERATION]),
        pod("big", cpu="64"),  # fits no type: pending
    ]
    objects = load_text(to_yaml(*docs), "t.yaml").objects
    return [PoolInput(np, TYPES) for np in objects.nodepools], objects.pods


@contextmanager
def _collector(enabled: bool) -> Iterator[None]:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_during_the_passes_and_as_it_was_after(enabled: bool) -> None:
    pools, pods = _inputs()
    preview = _Watching()
    with _collector(enabled):
        plan = run_passes(pools, preview=preview, pending=pods)
        assert gc.isenabled() is enabled
    assert preview.collector_on
    assert not any(preview.collector_on)
    assert len(plan.node_claims) >= 2
    assert "default/big" in plan.pod_errors


def test_the_collector_comes_back_after_an_error() -> None:
    pools, pods = _inputs()
    with _collector(True):
        with pytest.raises(ValueError, match="max_passes"):
            run_passes(pools, preview=LaunchPreview(), pending=pods, max_passes=0)
        assert gc.isenabled()

        class Failing(_Watching):
            def launch(self, *args: Any, **kwargs: Any) -> Launch:
                raise RuntimeError("preview failed")

        with pytest.raises(RuntimeError, match="preview failed"):
            run_passes(pools, preview=Failing(), pending=pods)
        assert gc.isenabled()


def test_the_passes_leave_no_garbage_cycles() -> None:
    pools, pods = _inputs()
    run_passes(pools, preview=LaunchPreview(), pending=pods)  # first-use caches filled
    with _collector(False):
        gc.collect()
        plan = run_passes(pools, preview=LaunchPreview(), pending=pods)
        # Unreachable cycles only: the plan itself (which may hold cycles) is still in use.
        assert gc.collect() == 0
        assert plan.node_claims
