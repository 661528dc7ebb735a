"""What a node's pods say about its disruption (karpenter-disruption.md §3.1, §3.2;
kubernetes-sigs/karpenter `statenode.go: ValidatePodsDisruptable`, `pdb.go`,
`helpers.go: SimulateScheduling`): a PodDisruptionBudget that lets no pod go keeps its pods'
node out of every method (drift only with a terminationGracePeriod), no capacity is made for
pods a fully blocking PDB keeps, a do-not-disrupt duration holds the node until it runs out
(counted from the pod's start), and DaemonSet and mirror pods hold a node as any pod does."""

from __future__ import annotations

import datetime as dt
from typing import Any

from gpucap.apis.core import PodDisruptionBudget
from gpucap.controllers.disruption.candidates import (
    get_candidates,
    next_do_not_disrupt_expiry,
    select_candidates,
)
from gpucap.controllers.disruption.simulation import simulate_scheduling
from gpucap.controllers.disruption.types import EVENTUAL, GRACEFUL, Blocked
from gpucap.controllers.nodeclaim.conditions import with_condition
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.clock import EPOCH
from gpucap.utils.pdb import Limits
from gpucap.utils.pod import do_not_disrupt_until
from tests.builders import edit, load
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool

HOUR = 3600.0
DND = "karpenter.sh/do-not-disrupt"


def pdb(name: str = "web", app: str = "web", **spec: Any) -> dict[str, Any]:
    """A PodDisruptionBudget in `default` selecting the pods labelled app=`app`."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
    }


def web(name: str, app: str = "web", **kw: Any) -> dict[str, Any]:
    """A one-GPU pod labelled app=`app`."""
    return edit(gpu_pod(name, **kw), "metadata.labels", {"app": app})


def daemon(doc: dict[str, Any]) -> dict[str, Any]:
    return edit(
        doc,
        "metadata.ownerReferences",
        [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1"}],
    )


def mirror(doc: dict[str, Any]) -> dict[str, Any]:
    return edit(
        doc, "metadata.ownerReferences", [{"apiVersion": "v1", "kind": "Node", "name": "x"}]
    )


def protected(doc: dict[str, Any], value: str, started: dt.datetime | None) -> dict[str, Any]:
    doc = edit(doc, "metadata.annotations", {DND: value})
    if started is not None:
        doc = edit(doc, "status", {"startTime": started.isoformat().replace("+00:00", "Z")})
    return doc


def drift(e: Env, name: str, grace: str | None = None) -> None:
    """Mark NodeClaim `name` drifted, with terminationGracePeriod `grace`."""
    claim = e.cluster.node_claim(name)
    assert claim is not None
    spec = claim.spec.model_copy(update={"termination_grace_period": grace})
    claim = with_condition(
        claim.model_copy(update={"spec": spec}), "Drifted", "True", e.clock.now(), reason="AMI"
    )
    e.cluster.update_node_claim(claim)


def names(e: Env, disruption_class: str = GRACEFUL) -> list[str]:
    found, _ = get_candidates(
        e.cluster, e.provider, e.clock.now(), disruption_class=disruption_class
    )
    return [c.name for c in found]


def blocked(e: Env, disruption_class: str = GRACEFUL) -> dict[str, Blocked]:
    return select_candidates(
        e.cluster, e.provider, e.clock.now(), disruption_class=disruption_class
    ).blocked


def decided(e: Env, seconds: float = 120) -> list[tuple[str, str, tuple[str, ...]]]:
    """(method, decision, candidates) of every command the loop starts within `seconds`."""
    return [
        (r.decided.method, r.decided.decision, tuple(c.name for c in r.decided.candidates))
        for r in e.run(seconds)
        if r.decided is not None
    ]


def _underused(*docs: dict[str, Any]) -> Env:
    """A g5.12xlarge `x` running one one-GPU pod `a` labelled app=web: single-node
    consolidation replaces it with a g5.xlarge unless something holds it."""
    e = env(pool(), web("a"), *docs)
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    return e


# ---- PodDisruptionBudgets in candidate selection ---------------------------------------------
def test_a_node_whose_pod_a_pdb_holds_is_not_a_consolidation_candidate() -> None:
    assert decided(_underused()) == [("single-node-consolidation", "replace", ("x",))]
    e = _underused(pdb(maxUnavailable=0))
    assert names(e) == []
    assert decided(e) == []
    reason = blocked(e)["x"]
    assert reason.message == "Pdb prevents pod evictions"
    assert reason.values == (("PodDisruptionBudget", "default/web"),)
    assert str(reason) == "Pdb prevents pod evictions (PodDisruptionBudget=default/web)"


def test_a_pdb_that_still_allows_a_disruption_lets_the_node_go() -> None:
    # two healthy replicas, one may be unavailable: disruptionsAllowed is 1
    e = env(pool(), web("a"), web("b"), pdb(minAvailable=1))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/b",))
    assert names(e) == ["x", "y"]
    assert blocked(e) == {}
    # b pending (evicted, say): only a is healthy, so none may go and x is held
    e.cluster.unbind("default/b")
    assert "x" in blocked(e)
    assert "x" not in names(e)


def test_a_pdb_counts_each_pod_against_its_budget_alone() -> None:
    # Karpenter's CanEvictPods asks per pod: two pods of a PDB allowing one disruption on one
    # node pass (the drain then evicts them one at a time).
    e = env(pool(), web("a"), web("b"), web("c"), pdb(maxUnavailable=1))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a", "default/b"))
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/c",))
    assert names(e) == ["x", "y"]


def test_a_node_whose_pod_a_pdb_holds_is_not_an_emptiness_candidate() -> None:
    agent = daemon(web("agent-x", app="agent"))
    e = env(pool(policy="WhenEmpty"), agent)
    e.node("x", "g5.xlarge", pods=("default/agent-x",))
    assert decided(e, 60) == [("emptiness", "delete", ("x",))]
    e = env(pool(policy="WhenEmpty"), agent, pdb("agent", app="agent", maxUnavailable=0))
    e.node("x", "g5.xlarge", pods=("default/agent-x",))
    assert decided(e, 60) == []
    assert blocked(e)["x"].values == (("PodDisruptionBudget", "default/agent"),)


def test_a_pod_two_pdbs_select_holds_its_node() -> None:
    e = _underused(pdb("one", maxUnavailable=5), pdb("two", maxUnavailable=5))
    assert names(e) == []
    reason = blocked(e)["x"]
    assert reason.message == "Eviction does not support multiple PDBs"
    assert reason.values == (("PodDisruptionBudget(s)", "default/one, default/two"),)


def test_an_unready_pod_does_not_hold_its_node_under_always_allow() -> None:
    unready = edit(web("a"), "status", {"conditions": [{"type": "Ready", "status": "False"}]})
    for policy, want in [("IfHealthyBudget", []), ("AlwaysAllow", ["x"])]:
        e = env(pool(), unready, pdb(maxUnavailable=0, unhealthyPodEvictionPolicy=policy))
        e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
        assert names(e) == want, policy


def test_a_pdb_holds_only_pods_of_its_namespace() -> None:
    other = edit(pdb(maxUnavailable=0), "metadata.namespace", "team-b")
    assert names(_underused(other)) == ["x"]


def test_pods_the_drain_would_not_evict_are_not_held_by_their_pdb() -> None:
    # A pod tolerating karpenter.sh/disrupted and a mirror pod are never evicted: their PDB
    # does not matter (`IsEvictable`).
    tolerant = web("t", tolerations=[{"key": "karpenter.sh/disrupted", "operator": "Exists"}])
    for doc, want in [(web("t"), []), (tolerant, ["x"]), (mirror(web("t")), ["x"])]:
        e = env(pool(), doc, pdb(maxUnavailable=0))
        e.node("x", "g5.12xlarge", gpus=4, pods=("default/t",))
        assert names(e) == want, doc


def _pdb_object(doc: dict[str, Any]) -> PodDisruptionBudget:
    loaded = load(edit(doc, "spec.maxUnavailable", 0))
    assert loaded.errors == []
    (obj,) = loaded.objects.of_kind("PodDisruptionBudget")
    return obj  # type: ignore[no-any-return]


def test_applying_a_pdb_changes_the_candidates_at_once() -> None:
    e = _underused()
    assert names(e) == ["x"]
    e.cluster.apply(_pdb_object(pdb()))  # no pod, Node or NodeClaim changes
    assert names(e) == []
    e.cluster.delete("PodDisruptionBudget", "default", "web")
    assert names(e) == ["x"]


# ---- drift: the eventual class ---------------------------------------------------------------
def test_drift_may_take_a_pdb_held_node_only_with_a_termination_grace_period() -> None:
    for grace, want in [(None, []), ("1h", [("drift", "delete", ("x",))])]:
        e = _underused(pdb(maxUnavailable=0))
        drift(e, "x", grace)
        assert names(e, EVENTUAL) == (["x"] if grace else []), grace
        assert decided(e, 30) == want, grace


def test_no_replacement_is_provisioned_for_pods_a_fully_blocking_pdb_keeps() -> None:
    # maxUnavailable 0 keeps a until the grace period forces it: no capacity ahead of time.
    e = _underused(pdb(maxUnavailable=0))
    drift(e, "x", "1h")
    assert decided(e, 30) == [("drift", "delete", ("x",))]
    assert e.launched == []
    # minAvailable 1 over one replica blocks now but is not fully blocking (`isFullyBlocked`
    # reads the spec): the pod will move once the PDB allows it, so it gets its node.
    e = _underused(pdb(minAvailable=1))
    drift(e, "x", "1h")
    assert names(e, EVENTUAL) == ["x"]
    assert decided(e, 30) == [("drift", "replace", ("x",))]
    assert len(e.launched) == 1


def test_pods_a_fully_blocking_pdb_keeps_on_a_deleting_node_get_no_capacity() -> None:
    e = env(pool(), web("a"), web("b", app="other"), gpu_pod("c"), pdb(maxUnavailable="0%"))
    e.node("gone", "g5.12xlarge", gpus=4, pods=("default/a", "default/b"))
    e.node("x", "g5.xlarge", pods=("default/c",))
    e.cluster.mark_for_deletion("gone")
    found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
    sim = simulate_scheduling(
        e.cluster,
        Provisioner(e.provider),
        found,
        nodepools=e.cluster.nodepools,
        now=e.clock.now(),
        consolidation=False,
    )
    assert sim is not None
    placed = {p.key for claim in sim.results.new_node_claims for p in claim.pods}
    assert placed == {"default/b", "default/c"}  # a stays where its PDB keeps it


# ---- do-not-disrupt --------------------------------------------------------------------------
def test_do_not_disrupt_with_a_duration_stops_holding_the_node_when_it_runs_out() -> None:
    start = EPOCH
    e = _underused()
    e.cluster.add_pod(load(protected(web("g"), "1h", start)).objects.pods[0])
    e.bind("default/g", "x")
    e.clock.advance(HOUR - 1)
    assert names(e) == []
    assert str(blocked(e)["x"]) == (
        'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/g)'
    )
    assert next_do_not_disrupt_expiry(e.cluster, e.clock.now()) == start + dt.timedelta(hours=1)
    e.clock.advance(1)
    assert names(e) == ["x"]
    assert next_do_not_disrupt_expiry(e.cluster, e.clock.now()) is None


def test_a_do_not_disrupt_duration_counts_from_the_pods_start_not_its_creation() -> None:
    created, started = EPOCH - dt.timedelta(hours=5), EPOCH + dt.timedelta(minutes=30)
    stamp = created.isoformat().replace("+00:00", "Z")
    doc = edit(protected(web("a"), "1h", started), "metadata.creationTimestamp", stamp)
    pods = load(doc).objects.pods
    assert do_not_disrupt_until(pods, EPOCH) == started + dt.timedelta(hours=1)
    e = env(pool(), doc)
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.clock.advance(HOUR + 29 * 60)
    assert names(e) == []
    e.clock.advance(60)
    assert names(e) == ["x"]


def test_a_do_not_disrupt_duration_without_a_start_time_holds_and_sets_no_wake_up() -> None:
    e = env(pool(), protected(web("a"), "1m", None))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.clock.advance(HOUR)
    assert names(e) == []
    assert next_do_not_disrupt_expiry(e.cluster, e.clock.now()) is None


def test_do_not_disrupt_until_is_the_first_duration_still_running() -> None:
    at = EPOCH
    docs = [
        protected(web("a"), "10m", at),
        protected(web("b"), "1h", at),
        protected(web("c"), "true", at),
        protected(web("d"), "5m", at - dt.timedelta(hours=1)),  # ran out already
        protected(web("e"), "-5m", at),  # ignored, as Karpenter does
    ]
    pods = load(*docs).objects.pods
    assert do_not_disrupt_until(pods, at) == at + dt.timedelta(minutes=10)
    assert do_not_disrupt_until(pods, at + dt.timedelta(minutes=10)) == at + dt.timedelta(hours=1)
    assert do_not_disrupt_until(pods, at + dt.timedelta(hours=1)) is None


# ---- DaemonSet and mirror pods ---------------------------------------------------------------
def test_a_daemonset_pod_with_do_not_disrupt_keeps_an_empty_node() -> None:
    agent = protected(daemon(web("agent-x", app="agent")), "true", None)
    e = env(pool(policy="WhenEmpty"), agent)
    e.node("x", "g5.xlarge", pods=("default/agent-x",))
    assert decided(e, 60) == []
    assert blocked(e)["x"].values == (("Pod", "default/agent-x"),)


def test_a_mirror_pod_with_do_not_disrupt_keeps_its_node() -> None:
    static = protected(mirror(web("static-x", app="static")), "true", None)
    e = env(pool(policy="WhenEmpty"), static)
    e.node("x", "g5.xlarge", pods=("default/static-x",))
    assert names(e) == []
    assert decided(e, 60) == []


def test_limits_of_a_cluster_without_pdbs_answer_go() -> None:
    e = _underused()
    limits = Limits.of(e.cluster)
    assert not limits
    pod = e.cluster.pod("default/a")
    assert limits.can_evict_pods([pod], e.clock.now()) is None
    assert limits.is_currently_reschedulable(pod, e.clock.now())
