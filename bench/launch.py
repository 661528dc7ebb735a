"""Launch-choice benchmark (issue 12, and issue 10's simulator): CPU time per NodeClaim of the
AWS launch decision (`launch.choose_launch`: the launch filters, capacity type, CreateFleet
overrides and the fleet pick), on the tables (`launchtable.LaunchTable`) and one type at a time
(`reference=True`, the path before the tables), back to back in one process.

Workloads (the NodeClaims come from one `Scheduler.solve`):
- `fake400`: Karpenter's `fake.InstanceTypes(400)` and `makeDiversePods` (`bench/run.py`);
- `catalog`: the bundled us-east-1 catalog and the GPU mix of `bench/run.py`.
For each, two ways the decision is asked:
- `plan`: as `plan`'s launch column asks it, with the claim's options (a list drawn from the
  NodePool's types, which are passed as `among`);
- `create`: as `AWSCloudProvider.create` asks it (the simulator's path), with every type of the
  node class (a tuple) and the claim's requirements, which name its types.

Prints, per row: claims, the best of `--repeat` CPU times per claim (ms) for the tables and for
the reference, the ratio, the first (cold) call on the tables (building the table), and whether
both paths chose the same launch for every claim (they must: the equivalence property in
tests/cloudprovider/aws/test_launch_vectorised.py says so on random inputs).

Run: `python bench/launch.py [--pods 1000] [--repeat 5]`. CPU time (`time.process_time`), not
wall time: the machine may be shared. Not a unit test; record figures in docs/perf-log.md.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import diverse_pods, fake_instance_types, gpu_mix, nodepool

from gpucap.cloudprovider.aws.instance.launch import (
    InsufficientCapacityError,
    Launch,
    choose_launch,
    fleet_pick,
    launch_options,
)
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaim import NodeClaim
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.scheduler import PoolInput, Scheduler

Ask = Callable[[NodeClaim, bool], Launch | str]


def reference_launch(
    types: Sequence[InstanceType], reqs: Requirements, requests: dict[str, int]
) -> Launch:
    """`choose_launch` one type at a time (the code before the tables)."""
    options = launch_options(types, reqs, requests, reference=True)
    capacity_type = options.capacity_type()
    overrides = options.overrides(capacity_type)
    best = fleet_pick(overrides).chosen
    assert best is not None
    return Launch(best.instance_type, best.zone, capacity_type, best.price, overrides)


def asker(how: str, pool_types: tuple[InstanceType, ...]) -> Ask:
    def ask(claim: NodeClaim, reference: bool) -> Launch | str:
        types: Sequence[InstanceType] = claim.instance_types if how == "plan" else pool_types
        try:
            if reference:
                return reference_launch(types, claim.requirements, claim.requests)
            among = pool_types if how == "plan" else None
            return choose_launch(types, claim.requirements, claim.requests, among=among)
        except InsufficientCapacityError as err:
            return str(err)

    return ask


def timed(ask: Ask, claims: list[NodeClaim], reference: bool) -> tuple[float, str]:
    gc.collect()
    start = time.process_time()
    answers = [ask(c, reference) for c in claims]
    spent = time.process_time() - start
    return spent, hashlib.sha256(repr(answers).encode()).hexdigest()[:12]


def bench(label: str, pools: list[PoolInput], pods: list, repeat: int) -> None:
    claims = Scheduler(pools, pending_pods=pods).solve(pods).new_node_claims
    by_pool = {p.nodepool.name: p.instance_types for p in pools}
    for how in ("plan", "create"):
        groups: dict[str, list[NodeClaim]] = {}
        for c in claims:
            groups.setdefault(c.nodepool, []).append(c)
        cold = fast = slow = 0.0
        same = True
        for name, members in groups.items():
            pool_types = by_pool[name]
            assert isinstance(pool_types, tuple)
            ask = asker(how, pool_types)
            # The first call builds the tables this NodePool's claims share.
            start = time.process_time()
            ask(members[0], False)
            cold += time.process_time() - start
            best_fast = best_slow = float("inf")
            digests = set()
            for _ in range(repeat):
                spent, digest = timed(ask, members, reference=False)
                best_fast = min(best_fast, spent)
                digests.add(digest)
                spent, digest = timed(ask, members, reference=True)
                best_slow = min(best_slow, spent)
                digests.add(digest)
            fast += best_fast
            slow += best_slow
            same = same and len(digests) == 1
        n = len(claims)
        print(
            f"{label:8} {how:7} {n:6d} {fast / n * 1e3:10.3f} {slow / n * 1e3:10.3f} "
            f"{slow / fast:7.1f}x {cold * 1e3:9.1f} {'yes' if same else 'NO':>5}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'types':8} {'asked':7} {'claims':>6} {'tables ms':>10} {'ref ms':>10} "
        f"{'ratio':>8} {'cold ms':>9} {'same':>5}"
    )
    fake = tuple(fake_instance_types(400))
    bench("fake400", [PoolInput(nodepool(), fake)], diverse_pods(args.pods), args.repeat)
    real = load_catalog("us-east-1").instance_types(None)
    gpu_pool = nodepool(
        "gpu", [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}]
    )
    pools = [PoolInput(gpu_pool, real), PoolInput(nodepool("default"), real)]
    bench("catalog", pools, gpu_mix(args.pods), args.repeat)
    print("per-claim CPU ms (best of --repeat, back to back); cold: first call, builds tables")


if __name__ == "__main__":
    main()
