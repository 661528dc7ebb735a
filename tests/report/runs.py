"""The runs and plans the report tests look at, made once per test session: small stories of
`tests/sim/stories/` (consolidation replacing a node, a spot ICE and its fallback, time-slicing
under a NodePool limit) and the bundled workshop planned as written and scaled past its limit."""

from __future__ import annotations

import functools
from pathlib import Path

from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import LoadResult, Manifest, load_text
from gpucap.apis.workloads import Deployment
from gpucap.cli.demo import DEMO_VALUES, workshop_texts
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.controllers.provisioning import Plan
from gpucap.operator.plan import plan
from gpucap.sim.scenario import LoadedScenario, load_scenario
from gpucap.sim.world import SimulationResult, simulate

STORIES = Path(__file__).resolve().parents[1] / "sim" / "stories"


@functools.cache
def catalog() -> Catalog:
    return load_catalog("us-east-1")


@functools.cache
def story(name: str) -> tuple[LoadedScenario, SimulationResult]:
    scenario = load_scenario(str(STORIES / name), lambda region: catalog())
    return scenario, simulate(scenario, catalog())


def workshop(replicas: int | None = None) -> LoadResult:
    """The bundled workshop, placeholders filled as the demo fills them; vLLM at `replicas`."""
    loaded = LoadResult()
    for name, text in workshop_texts():
        loaded.extend(load_text(substitute(text, DEMO_VALUES).text, name))
    if replicas is None:
        return loaded
    scaled = LoadResult(issues=list(loaded.issues))
    for m in loaded.manifests:
        obj = m.obj
        if isinstance(obj, Deployment) and obj.metadata.name == "vllm":
            obj = obj.model_copy(
                update={"spec": obj.spec.model_copy(update={"replicas": replicas})}
            )
        scaled.manifests.append(Manifest(obj, m.source))
    return scaled


@functools.cache
def workshop_plan(replicas: int | None = None) -> tuple[LoadResult, Plan]:
    loaded = workshop(replicas)
    return loaded, plan(loaded.objects, catalog())
