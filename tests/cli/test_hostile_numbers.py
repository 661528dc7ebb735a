"""Hostile numbers and times through the CLI: one line naming the field, exit 2, no hang.

Each case is the smallest manifest that shows one class of issue 9: a quantity or duration that
would need a huge computation or that Kubernetes/Karpenter cannot hold, a number written in
non-ASCII digits, a price past a float64. The unit tests of each parser hold the grammar tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.builders import edit, nodepool, pod, to_yaml

runner = CliRunner()

_BIG_INT = "99999999999999999999"  # past int64


def _overlay(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "o"},
        "spec": {
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}
            ],
            **spec,
        },
    }


def _scenario(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "s"},
        "spec": spec,
    }


def _gpu_pod_requesting(**requests: Any) -> dict[str, Any]:
    return edit(pod(), "spec.containers[0].resources.requests", requests)


def _gt(value: str) -> dict[str, Any]:
    return edit(
        nodepool(),
        "spec.template.spec.requirements[0]",
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": [value]},
    )


def _pool_budget(**budget: Any) -> dict[str, Any]:
    return nodepool(disruption={"budgets": [{"nodes": "1", **budget}]})


# (id, document, the error line after "error: <file>[0] <Kind>/<name>: ")
CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "quantity_with_a_huge_exponent",
        _gpu_pod_requesting(cpu="1e999999999"),
        "spec.containers[0].resources.requests.cpu: '1e999999999' is larger than "
        "9223372036854775807",
    ),
    (
        "quantity_past_int64",
        _gpu_pod_requesting(memory="1e5000"),
        "spec.containers[0].resources.requests.memory: '1e5000' is larger than 9223372036854775807",
    ),
    (
        "quantity_exponent_past_int32",
        _gpu_pod_requesting(cpu="1e4294967296"),
        "spec.containers[0].resources.requests.cpu: '1e4294967296' is not a valid quantity: "
        "the exponent is outside -2147483648..2147483647 (int32)",
    ),
    (
        "quantity_integer_past_int64",
        _gpu_pod_requesting(cpu=int(_BIG_INT)),
        f"spec.containers[0].resources.requests.cpu: {_BIG_INT} is larger than 9223372036854775807",
    ),
    (
        "quantity_in_arabic_indic_digits",
        _gpu_pod_requesting(cpu="\u0663"),
        "spec.containers[0].resources.requests.cpu: '\u0663' is not a valid quantity",
    ),
    (
        "nodepool_limit_past_int64",
        nodepool(limits={"cpu": "1e999999999"}),
        "spec.limits.cpu: '1e999999999' is larger than 9223372036854775807",
    ),
    (
        "crd_quantity_without_digits",  # Kubernetes' parser reads "-" as 0; the CRD pattern does not
        nodepool(limits={"cpu": "-"}),
        "spec.limits.cpu: '-' is not a valid quantity",
    ),
    (
        "overlay_capacity_without_digits",
        _overlay(capacity={"example.com/widget": "Ki"}),
        "spec.capacity[example.com/widget]: 'Ki' is not a valid quantity",
    ),
    (
        "static_nodepool_of_two_billion_nodes",
        edit(nodepool(limits=None), "spec.replicas", 2**31),
        "spec.replicas: 2147483648 nodes is more than gpucap models for one NodePool (at most "
        "100000",
    ),
    (
        "budget_schedule_in_superscript_digits",
        _pool_budget(schedule="\u00b2 * * * *", duration="1h"),
        "spec.disruption.budgets[0].schedule: '\u00b2 * * * *': minute: '\u00b2' is not a number",
    ),
    (
        "budget_schedule_in_fullwidth_digits",
        _pool_budget(schedule="0 \uff15 * * *", duration="1h"),
        "spec.disruption.budgets[0].schedule: '0 \uff15 * * *': hour: '\uff15' is not a number",
    ),
    (
        "budget_duration_past_go_int64",
        _pool_budget(schedule="@daily", duration=f"{_BIG_INT}h"),
        f"spec.disruption.budgets[0].duration: '{_BIG_INT}h' is out of range",
    ),
    (
        "expire_after_past_go_int64",
        edit(nodepool(), "spec.template.spec.expireAfter", "2562048h"),
        "spec.template.spec.expireAfter: '2562048h' is out of range",
    ),
    (
        "termination_grace_period_past_go_int64",
        edit(nodepool(), "spec.template.spec.terminationGracePeriod", f"{_BIG_INT}s"),
        f"spec.template.spec.terminationGracePeriod: '{_BIG_INT}s' is out of range",
    ),
    (
        "consolidate_after_past_go_int64",
        nodepool(disruption={"consolidateAfter": "9223372037s"}),
        "spec.disruption.consolidateAfter: '9223372037s' is out of range",
    ),
    (
        "requirement_bound_in_superscript_digits",
        _gt("\u00b2"),
        "spec.template.spec.requirements[0].values: requirements operator 'Gt' must have a "
        "single positive integer value",
    ),
    (
        "requirement_bound_past_int64",
        _gt(_BIG_INT),
        "spec.template.spec.requirements[0].values: requirements operator 'Gt' must have a "
        "single positive integer value",
    ),
    (
        "pod_affinity_bound_past_int64",
        edit(
            pod(),
            "spec.affinity",
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "gpu-count", "operator": "Gt", "values": [_BIG_INT]}
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].values: operator 'Gt' needs a single integer "
        "value",
    ),
    (
        "overlay_price_past_float64",
        _overlay(price="9" * 400),
        f"spec.price: '{'9' * 100}'... (400 characters) is too large for a float64",
    ),
    (
        "overlay_price_adjustment_past_float64",
        _overlay(priceAdjustment="+" + "9" * 400 + "%"),
        f"spec.priceAdjustment: '+{'9' * 99}'... (402 characters) is too large for a float64",
    ),
    (
        "overlay_price_in_arabic_indic_digits",
        _overlay(price="\u0661\u0662"),
        "spec.price: '\u0661\u0662' must be a decimal number, e.g. 0.52",
    ),
    (
        "scenario_duration_of_10_to_the_39_seconds",
        _scenario(duration="1" + "0" * 39 + "s"),
        f"spec.duration: '1{'0' * 39}s' is out of range: a Go duration is at most "
        "2562047h47m16.854775807s (about 292 years)",
    ),
    (
        "scenario_event_time_past_go_int64",
        _scenario(
            duration="1h",
            events=[
                {"at": "2562047h48m", "scale": {"kind": "Deployment", "name": "x", "replicas": 1}}
            ],
        ),
        "spec.events[0].at: '2562047h48m' is out of range",
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_number_is_one_error_line_naming_the_field(
    doc: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    f = tmp_path / "test.yaml"
    f.write_text(to_yaml(doc), encoding="utf-8")
    result = runner.invoke(app, ["validate", str(f)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    # The class's own line; `²` as a requirement value is also a bad label value (two lines).
    assert any(expected in line for line in errors), errors
    assert "Traceback" not in result.output + result.stderr


@pytest.mark.parametrize(
    "raw",
    ["memory: 1.0e+400", "memory: .inf", "memory: .nan"],
    ids=["past_float64", "yaml_inf", "yaml_nan"],
)
def test_a_yaml_number_that_is_not_finite_is_no_quantity(raw: str, tmp_path: Path) -> None:
    f = tmp_path / "pod.yaml"
    f.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        f"  - name: c\n    image: x\n    resources:\n      requests: {{{raw}}}\n"
    )
    result = runner.invoke(app, ["validate", str(f)])
    assert result.exit_code == 2
    assert "spec.containers[0].resources.requests.memory:" in result.stderr
    assert "(not a finite number) is not a quantity" in result.stderr


@pytest.mark.parametrize(
    ("cpu", "shown"),
    [
        ("1e-999999999", "1n"),
        ("0." + "0" * 5000 + "1", "1n"),
        ("9Ei", "9223372036854775807"),
        ("-", "0"),
    ],
    ids=["huge_negative_exponent", "long_fraction", "binary_capped", "no_digits_is_zero"],
)
def test_a_pod_quantity_kubernetes_accepts_is_accepted_with_its_value(
    cpu: str, shown: str, tmp_path: Path
) -> None:
    f = tmp_path / "pod.yaml"
    f.write_text(to_yaml(edit(pod(), "spec.containers[0].resources.requests.memory", cpu)))
    result = runner.invoke(app, ["validate", "-o", "json", str(f)])
    assert result.exit_code == 0, result.output
    assert f'"memory": "{shown}"' in result.stdout


def test_a_budget_count_past_int64_is_a_warning_that_karpenter_fails_closed(
    tmp_path: Path,
) -> None:
    f = tmp_path / "test.yaml"
    f.write_text(to_yaml(_pool_budget(nodes=_BIG_INT)))
    result = runner.invoke(app, ["validate", str(f)])
    assert result.exit_code == 0
    assert (
        f"spec.disruption.budgets[0].nodes: '{_BIG_INT}' is past int64: Karpenter cannot read it "
        "and fails closed, so this budget allows no disruption while active"
    ) in result.stderr


def test_a_static_nodepool_whose_node_limit_is_small_is_valid_whatever_its_replicas(
    tmp_path: Path,
) -> None:
    # Karpenter creates at most limits.nodes NodeClaims; gpucap bounds that number, not replicas.
    doc = edit(nodepool(limits={"nodes": "3"}), "spec.replicas", 2**31)
    f = tmp_path / "test.yaml"
    f.write_text(to_yaml(doc))
    result = runner.invoke(app, ["validate", str(f)])
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    "version", ["1.\u0663\u0663", "1." + "9" * 5000], ids=["arabic_indic", "5000_digits"]
)
def test_a_kubernetes_version_go_would_not_read_is_one_error_line(version: str) -> None:
    result = runner.invoke(app, ["ami", "list", "--offline", "--kubernetes-version", version])
    assert result.exit_code == 2
    assert "expected major.minor, e.g. 1.36" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert len(result.stderr) < 400
