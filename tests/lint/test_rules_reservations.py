"""RES001-RES005 (lint/rules/reservations.py): capacity reservations an EC2NodeClass selects.

Which reservations a class selects and which NodePools may use them follow Karpenter AWS's
provider and reserved offerings (aws `pkg/providers/capacityreservation/suite_test.go`,
`pkg/providers/instancetype/suite_test.go` "Reserved Instance Types").
"""

from __future__ import annotations

from typing import Any

from gpucap.apis.capacityreservation import Reservations, parse_reservations
from gpucap.apis.serde import load_text
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.runner import run
from tests.builders import GPU_TOLERATION, deployment, edit, job, nodeclass, nodepool, to_yaml
from tests.lint.builders import CATALOG, FILE, Linted, check_public

CAPACITY_TYPES = "spec.template.spec.requirements[1].values"
TERMS = [{"tags": {"team": "ml"}}]


def reservation(
    rid: str = "cr-0aaa",
    instance_type: str = "g5.xlarge",
    zone: str = "us-east-1a",
    *,
    kind: str = "default",
    start: str | None = None,
    end: str | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "CapacityReservationId": rid,
        "InstanceType": instance_type,
        "AvailabilityZone": zone,
        "OwnerId": "123456789012",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "InstanceMatchCriteria": "targeted",
        "ReservationType": kind,
        "State": "active",
        "Tags": [{"Key": "team", "Value": "ml"}],
    }
    if start is not None:
        item["StartDate"] = start
    if end is not None:
        item["EndDate"] = end
    return item


def reservations(*items: dict[str, Any]) -> Reservations:
    return parse_reservations({"CapacityReservations": list(items)}, source="reservations.yaml")


def lint(rule_id: str, *docs: dict[str, Any], given: Reservations | None = None) -> Linted:
    text = to_yaml(*docs)
    result = load_text(text, FILE)
    assert not result.errors, [str(e) for e in result.errors]
    ctx = LintContext(result.manifests, CATALOG, reservations=given)
    findings = run(ctx, LintConfig(select=(rule_id,))).findings
    for f in findings:
        check_public(f)
    return Linted(text, [f for f in findings if f.rule == rule_id])


def selecting_class() -> dict[str, Any]:
    return edit(nodeclass(), "spec.capacityReservationSelectorTerms", TERMS)


def reserved_pool(*capacity_types: str, **spec: Any) -> dict[str, Any]:
    return edit(nodepool(**spec), CAPACITY_TYPES, list(capacity_types))


# ---- RES001 ---------------------------------------------------------------------------------


def test_a_gpu_pool_not_allowing_reserved_under_a_selecting_class_is_warned() -> None:
    linted = lint("RES001", selecting_class(), nodepool(), given=reservations(reservation()))
    f = linted.only
    assert f.severity == "warning"
    assert "cr-0aaa" in f.message
    assert "`reserved`" in f.message
    assert f.line == linted.line("karpenter.sh/capacity-type", "values")


def test_a_gpu_pool_allowing_reserved_is_not_warned() -> None:
    pool = reserved_pool("reserved", "on-demand")
    assert not lint("RES001", selecting_class(), pool, given=reservations(reservation())).findings


def test_terms_selecting_nothing_in_the_given_file_are_not_warned() -> None:
    other = reservation()
    other["Tags"] = [{"Key": "team", "Value": "web"}]
    assert not lint("RES001", selecting_class(), nodepool(), given=reservations(other)).findings


def test_without_a_reservations_file_the_terms_alone_are_warned() -> None:
    assert lint("RES001", selecting_class(), nodepool()).only.severity == "warning"


# ---- RES002 ---------------------------------------------------------------------------------


def test_a_reservation_whose_type_every_pool_excludes_is_warned() -> None:
    pool = reserved_pool("reserved", "on-demand")
    given = reservations(reservation(instance_type="p5.48xlarge"))
    f = lint("RES002", selecting_class(), pool, given=given).only
    assert f.severity == "warning"
    assert "cr-0aaa" in f.message
    assert "NodePool gpu excludes instance type p5.48xlarge" in f.message


def test_a_reservation_whose_zone_every_pool_excludes_is_warned() -> None:
    pool = reserved_pool("reserved", "on-demand")
    pool = edit(
        pool,
        "spec.template.spec.requirements[3]",
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1b"]},
    )
    f = lint("RES002", selecting_class(), pool, given=reservations(reservation())).only
    assert "zone us-east-1a" in f.message


def test_a_reservation_one_pool_can_use_is_not_warned() -> None:
    pools = [nodepool("spot"), reserved_pool("reserved", name="res")]
    pools[1]["metadata"]["name"] = "res"
    assert not lint("RES002", selecting_class(), *pools, given=reservations(reservation())).findings


# ---- RES003 ---------------------------------------------------------------------------------

BLOCK_END = "2026-01-03T11:30:00Z"


def _only_blocks() -> tuple[dict[str, Any], dict[str, Any], Reservations]:
    pool = reserved_pool("reserved")
    block = reservation(
        "cr-0b10c", kind="capacity-block", start="2025-12-30T11:30:00Z", end=BLOCK_END
    )
    return selecting_class(), pool, reservations(block)


def test_a_deployment_that_can_only_run_in_a_capacity_block_is_warned_with_its_end() -> None:
    nc, pool, given = _only_blocks()
    served = deployment(gpu=1, tolerations=[GPU_TOLERATION])
    f = lint("RES003", nc, pool, served, given=given).only
    assert f.severity == "warning"
    assert "cr-0b10c" in f.message
    assert "2026-01-03T11:30:00Z" in f.message


def test_a_job_in_a_capacity_block_is_not_warned() -> None:
    nc, pool, given = _only_blocks()
    assert not lint("RES003", nc, pool, job(), given=given).findings


def test_a_deployment_that_may_fall_back_to_on_demand_is_not_warned() -> None:
    nc, _, given = _only_blocks()
    pool = reserved_pool("reserved", "on-demand")
    served = deployment(gpu=1, tolerations=[GPU_TOLERATION])
    assert not lint("RES003", nc, pool, served, given=given).findings


def test_a_deployment_with_an_odcr_besides_the_block_is_not_warned() -> None:
    nc, pool, _ = _only_blocks()
    given = reservations(
        reservation("cr-0b10c", kind="capacity-block", start="2025-12-30T11:30:00Z", end=BLOCK_END),
        reservation("cr-0dcr"),
    )
    served = deployment(gpu=1, tolerations=[GPU_TOLERATION])
    assert not lint("RES003", nc, pool, served, given=given).findings


# ---- RES004 / RES005 -------------------------------------------------------------------------


def test_a_class_selecting_reservations_names_the_reserved_capacity_feature_gate() -> None:
    linted = lint("RES004", selecting_class(), given=reservations())
    f = linted.only
    assert f.severity == "info"
    assert "ReservedCapacity" in f.message
    assert f.line == linted.line("capacityReservationSelectorTerms")


def test_a_class_without_terms_names_no_feature_gate() -> None:
    assert not lint("RES004", nodeclass()).findings


def test_terms_without_a_reservations_file_say_the_reservations_are_unknown() -> None:
    f = lint("RES005", selecting_class()).only
    assert f.severity == "info"
    assert "unknown" in f.message
    assert "--reservations-out" in f.message


def test_terms_with_a_reservations_file_even_empty_are_known() -> None:
    assert not lint("RES005", selecting_class(), given=reservations()).findings
