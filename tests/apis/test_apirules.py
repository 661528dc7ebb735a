"""What the Kubernetes API server rejects, gpucap rejects: one minimal manifest per rule.

Each case is (rule, document, the one expected error line). The rules are the API server's
validation (apis/apirules.py), the enum values of the bundled schema (kubernetes/api `+enum`
types), the EC2NodeClass CRD's integer bounds and the device-plugin config's syntax. The laws
at the end check the name and label syntax against generated strings.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpucap.apis.apirules import dns1123_label_problem, dns1123_subdomain_problem
from gpucap.apis.labels import label_value_problem, qualified_name_problem
from gpucap.cli.main import app
from tests.builders import (
    container,
    deployment,
    edit,
    job,
    load,
    nodeclass,
    pod,
    raycluster,
    to_yaml,
)

POD = "test.yaml[0] Pod/default/web-0: "
DEP = "test.yaml[0] Deployment/default/vllm: "
JOB = "test.yaml[0] Job/default/train: "
NC = "test.yaml[0] EC2NodeClass/gpu: "
PDB = "test.yaml[0] PodDisruptionBudget/default/web: "
RAY = "test.yaml[0] RayCluster/default/ray: "
TSC = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
}
SUBDOMAIN = (
    "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting "
    "and ending with a letter or digit"
)
LABEL = (
    "must be a lowercase RFC 1123 label: lowercase letters, digits and '-', starting and ending "
    "with a letter or digit"
)
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
VALUE = (
    "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character"
)
AFFINITY_TERM = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def node_affinity(*exprs: dict[str, Any], fields: list[Any] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields is not None:
        term["matchFields"] = fields
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def anti_affinity(**term: Any) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, **term}
            ]
        }
    }


def ray_with_template_labels(labels: dict[str, str]) -> dict[str, Any]:
    return edit(raycluster(), "spec.workerGroupSpecs[0].template.metadata", {"labels": labels})


CASES: list[tuple[str, dict[str, Any], str]] = [
    # ---- names and namespaces (ValidateObjectMeta)
    (
        "name with a path",
        pod(name="../x"),
        f"test.yaml[0] Pod/default/../x: metadata.name: invalid name: '../x' {SUBDOMAIN}",
    ),
    (
        "name not ASCII",
        pod(name="é"),
        f"test.yaml[0] Pod/default/é: metadata.name: invalid name: 'é' {SUBDOMAIN}",
    ),
    (
        "name with a newline",
        pod(name="a\nb"),
        f"test.yaml[0] Pod/default/a\nb: metadata.name: invalid name: 'a\\nb' {SUBDOMAIN}",
    ),
    (
        "name with a trailing dot",
        pod(name="web."),
        f"test.yaml[0] Pod/default/web.: metadata.name: invalid name: 'web.' {SUBDOMAIN}",
    ),
    (
        "name too long",
        pod(name="a" * 254),
        f"test.yaml[0] Pod/default/{'a' * 254}: metadata.name: "
        f"invalid name: '{'a' * 67}...' must be no more than 253 characters",
    ),
    (
        "namespace not a label",
        pod(namespace="team.a"),
        f"test.yaml[0] Pod/team.a/web-0: metadata.namespace: invalid namespace: 'team.a' {LABEL}",
    ),
    (
        "generateName prefix",
        edit(pod(), "metadata.generateName", "Web-"),
        POD + f"metadata.generateName: invalid name prefix: 'Weba' {SUBDOMAIN}",
    ),
    (
        "custom resource name",
        edit(nodeclass(), "metadata.name", "GPU"),
        f"test.yaml[0] EC2NodeClass/GPU: metadata.name: invalid name: 'GPU' {SUBDOMAIN}",
    ),
    # ---- labels and annotations, everywhere they appear
    (
        "pod label key",
        edit(pod(), "metadata.labels", {"team name": "a"}),
        POD + f"metadata.labels[team name]: invalid label key 'team name': {NAME_PART}",
    ),
    (
        "pod label value",
        edit(pod(), "metadata.labels.app", "web-"),
        POD + f"metadata.labels.app: invalid label value 'web-': {VALUE}",
    ),
    (
        "label value with a trailing newline",
        edit(pod(), "metadata.labels.app", "web\n"),
        POD + f"metadata.labels.app: invalid label value 'web\\n': {VALUE}",
    ),
    (
        "label value too long",
        edit(pod(), "metadata.labels.app", "a" * 64),
        POD + f"metadata.labels.app: invalid label value '{'a' * 64}': must be no more than 63 "
        "characters",
    ),
    (
        "template label",
        edit(deployment(), "spec.template.metadata.labels.tier", "a b"),
        DEP + f"spec.template.metadata.labels.tier: invalid label value 'a b': {VALUE}",
    ),
    (
        "operator template label",
        ray_with_template_labels({"a b": "x"}),
        RAY + f"spec.workerGroupSpecs[0].template.metadata.labels[a b]: invalid label key 'a b': "
        f"{NAME_PART}",
    ),
    (
        "custom resource label",
        edit(nodeclass(), "metadata.labels", {"x": "-"}),
        NC + f"metadata.labels.x: invalid label value '-': {VALUE}",
    ),
    (
        "annotation key",
        edit(pod(), "metadata.annotations", {"a/b/c": "x"}),
        POD + "metadata.annotations[a/b/c]: invalid annotation key 'a/b/c': prefix part must be a "
        "lowercase DNS subdomain (e.g. 'example.com', matching "
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(.[a-z0-9]...)*)",
    ),
    (
        "annotations too large",
        edit(pod(), "metadata.annotations", {"a": "x" * 262144}),
        POD + "metadata.annotations: annotations are 262145 bytes; the limit is 262144",
    ),
    (
        "nodeSelector key",
        pod(nodeSelector={"-gpu": "true"}),
        POD + f"spec.nodeSelector[-gpu]: invalid label key '-gpu': {NAME_PART}",
    ),
    (
        "nodeSelector value",
        pod(nodeSelector={"gpu": "yes please"}),
        POD + f"spec.nodeSelector.gpu: invalid label value 'yes please': {VALUE}",
    ),
    # ---- label selectors
    (
        "selector matchLabels value",
        edit(deployment(), "spec.selector.matchLabels.app", "a b"),
        DEP + f"spec.selector.matchLabels.app: invalid label value 'a b': {VALUE}",
    ),
    (
        "selector operator",
        edit(
            deployment(),
            "spec.selector.matchExpressions",
            [{"key": "app", "operator": "Equals", "values": ["vllm"]}],
        ),
        DEP + "spec.selector.matchExpressions[0].operator: 'Equals' is not a valid selector "
        "operator (In, NotIn, Exists, DoesNotExist)",
    ),
    (
        "selector In needs values",
        pdb(selector={"matchExpressions": [{"key": "app", "operator": "In"}]}),
        PDB + "spec.selector.matchExpressions[0].values: must be specified when operator is 'In'",
    ),
    (
        "selector Exists has no values",
        pdb(selector={"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]}),
        PDB + "spec.selector.matchExpressions[0].values: may not be specified when operator is "
        "'Exists'",
    ),
    (
        "selector key",
        pdb(selector={"matchExpressions": [{"key": "a b", "operator": "Exists"}]}),
        PDB + f"spec.selector.matchExpressions[0].key: 'a b' is not a valid key: {NAME_PART}",
    ),
    (
        "selector value",
        pdb(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]}),
        PDB + f"spec.selector.matchExpressions[0].values[0]: invalid label value 'a b': {VALUE}",
    ),
    # ---- node affinity
    (
        "node affinity Exists has no values",
        pod(affinity=node_affinity({"key": "gpu", "operator": "Exists", "values": ["a"]})),
        POD + f"{AFFINITY_TERM}.nodeSelectorTerms[0].matchExpressions[0].values: may not be "
        "specified when operator is 'Exists'",
    ),
    (
        "node affinity Gt one value",
        pod(
            affinity=node_affinity(
                {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["1", "2"]}
            )
        ),
        POD + f"{AFFINITY_TERM}.nodeSelectorTerms[0].matchExpressions[0].values: must be a single "
        "value when operator is 'Gt'",
    ),
    (
        "node affinity operator enum",
        pod(affinity=node_affinity({"key": "gpu", "operator": "Has"})),
        POD + f"{AFFINITY_TERM}.nodeSelectorTerms[0].matchExpressions[0].operator: unsupported "
        "value 'Has': supported values: 'DoesNotExist', 'Exists', 'Gt', 'In', 'Lt', 'NotIn'",
    ),
    (
        "node affinity key",
        pod(affinity=node_affinity({"key": "a b", "operator": "Exists"})),
        POD + f"{AFFINITY_TERM}.nodeSelectorTerms[0].matchExpressions[0].key: 'a b' is not a "
        f"valid label key: {NAME_PART}",
    ),
    (
        "node affinity matchFields key",
        pod(
            affinity=node_affinity(
                fields=[{"key": "spec.nodeName", "operator": "In", "values": ["n1"]}]
            )
        ),
        POD + f"{AFFINITY_TERM}.nodeSelectorTerms[0].matchFields[0].key: 'spec.nodeName' is not "
        "a valid field selector key",
    ),
    (
        "node affinity needs a term",
        pod(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }
            }
        ),
        POD + f"{AFFINITY_TERM}.nodeSelectorTerms: must have at least one node selector term",
    ),
    (
        "preferred weight",
        pod(
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "preference": {"matchExpressions": []}}
                    ]
                }
            }
        ),
        POD + "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]."
        "weight: 0 must be in the range 1-100",
    ),
    # ---- pod (anti-)affinity
    (
        "pod affinity topologyKey required",
        pod(affinity=anti_affinity(topologyKey="")),
        POD + "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
        "topologyKey: topologyKey is required",
    ),
    (
        "pod affinity topologyKey syntax",
        pod(affinity=anti_affinity(topologyKey="zone/")),
        POD + "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
        "topologyKey: 'zone/' is not a valid topologyKey: name part must be non-empty",
    ),
    (
        "pod affinity namespaces",
        pod(affinity=anti_affinity(topologyKey="kubernetes.io/hostname", namespaces=["Team"])),
        POD + "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
        f"namespaces[0]: invalid namespace: 'Team' {LABEL}",
    ),
    # ---- topology spread
    (
        "maxSkew at least 1",
        pod(topologySpreadConstraints=[{**TSC, "maxSkew": 0}]),
        POD + "spec.topologySpreadConstraints[0].maxSkew: 0 must be greater than zero",
    ),
    (
        "minDomains at least 1",
        pod(topologySpreadConstraints=[{**TSC, "minDomains": 0}]),
        POD + "spec.topologySpreadConstraints[0].minDomains: 0 must be greater than zero",
    ),
    (
        "minDomains only with DoNotSchedule",
        pod(
            topologySpreadConstraints=[
                {**TSC, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}
            ]
        ),
        POD + "spec.topologySpreadConstraints[0].minDomains: can only be used with "
        "whenUnsatisfiable: DoNotSchedule",
    ),
    (
        "topologyKey required",
        pod(topologySpreadConstraints=[{**TSC, "topologyKey": ""}]),
        POD + "spec.topologySpreadConstraints[0].topologyKey: topologyKey is required",
    ),
    (
        "duplicate spread constraint",
        pod(topologySpreadConstraints=[TSC, TSC]),
        POD + "spec.topologySpreadConstraints[1]: duplicate constraint for topologyKey "
        "'topology.kubernetes.io/zone' and whenUnsatisfiable 'DoNotSchedule'",
    ),
    # ---- containers and ports
    (
        "container name",
        pod(containers=[container(name="App")]),
        POD + f"spec.containers[0].name: invalid container name: 'App' {LABEL}",
    ),
    (
        "duplicate container name across lists",
        pod(initContainers=[container(name="app")]),
        POD + "spec.initContainers[0].name: duplicate container name 'app'",
    ),
    (
        "containerPort zero",
        edit(pod(), "spec.containers[0].ports", [{"containerPort": 0}]),
        POD + "spec.containers[0].ports[0].containerPort: 0 must be between 1 and 65535, inclusive",
    ),
    (
        "containerPort too large",
        edit(pod(), "spec.containers[0].ports", [{"containerPort": 65536}]),
        POD + "spec.containers[0].ports[0].containerPort: 65536 must be between 1 and 65535, "
        "inclusive",
    ),
    (
        "hostPort negative",
        edit(pod(), "spec.containers[0].ports", [{"containerPort": 80, "hostPort": -1}]),
        POD + "spec.containers[0].ports[0].hostPort: -1 must be between 1 and 65535, inclusive",
    ),
    (
        "port name",
        edit(pod(), "spec.containers[0].ports", [{"containerPort": 80, "name": "8080"}]),
        POD + "spec.containers[0].ports[0].name: invalid port name '8080': must contain at least "
        "one letter",
    ),
    (
        "duplicate port name",
        edit(
            pod(),
            "spec.containers[0].ports",
            [{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}],
        ),
        POD + "spec.containers[0].ports[1].name: duplicate port name 'http'",
    ),
    (
        "duplicate hostPort across containers",
        pod(
            containers=[
                {**container(), "ports": [{"containerPort": 80, "hostPort": 8080}]},
                {**container(name="b"), "ports": [{"containerPort": 81, "hostPort": 8080}]},
            ]
        ),
        POD + "spec.containers[1].ports[0].hostPort: duplicate hostPort 8080/TCP",
    ),
    # ---- enums (kubernetes/api +enum types)
    (
        "restartPolicy enum",
        pod(restartPolicy="Sometimes"),
        POD + "spec.restartPolicy: unsupported value 'Sometimes': supported values: 'Always', "
        "'Never', 'OnFailure'",
    ),
    (
        "imagePullPolicy enum",
        edit(pod(), "spec.containers[0].imagePullPolicy", "always"),
        POD + "spec.containers[0].imagePullPolicy: unsupported value 'always': supported values: "
        "'Always', 'IfNotPresent', 'Never'",
    ),
    (
        "dnsPolicy enum",
        pod(dnsPolicy="ClusterLast"),
        POD + "spec.dnsPolicy: unsupported value 'ClusterLast': supported values: 'ClusterFirst', "
        "'ClusterFirstWithHostNet', 'Default', 'None'",
    ),
    (
        "preemptionPolicy enum",
        pod(preemptionPolicy="Always"),
        POD + "spec.preemptionPolicy: unsupported value 'Always': supported values: 'Never', "
        "'PreemptLowerPriority'",
    ),
    (
        "toleration effect enum",
        pod(tolerations=[{"key": "a", "operator": "Exists", "effect": "NoScheduling"}]),
        POD + "spec.tolerations[0].effect: unsupported value 'NoScheduling': supported values: "
        "'NoExecute', 'NoSchedule', 'PreferNoSchedule'",
    ),
    (
        "protocol enum",
        edit(pod(), "spec.containers[0].ports", [{"containerPort": 80, "protocol": "tcp"}]),
        POD + "spec.containers[0].ports[0].protocol: unsupported value 'tcp': supported values: "
        "'SCTP', 'TCP', 'UDP'",
    ),
    (
        "deployment strategy enum",
        edit(deployment(), "spec.strategy", {"type": "BlueGreen"}),
        DEP + "spec.strategy.type: unsupported value 'BlueGreen': supported values: 'Recreate', "
        "'RollingUpdate'",
    ),
    # ---- integer ranges
    (
        "activeDeadlineSeconds at least 1",
        pod(activeDeadlineSeconds=0),
        POD + "spec.activeDeadlineSeconds: 0 must be between 1 and 2147483647, inclusive",
    ),
    (
        "priority within int32",
        pod(priority=2**31),
        POD + "spec.priority: 2147483648 is outside the 32-bit integer range",
    ),
    (
        "int64 field within int64",
        pod(terminationGracePeriodSeconds=2**63),
        POD + "spec.terminationGracePeriodSeconds: 9223372036854775808 is outside the 64-bit "
        "integer range",
    ),
    (
        "probe period not negative",
        edit(
            pod(),
            "spec.containers[0].readinessProbe",
            {"exec": {"command": ["true"]}, "periodSeconds": -1},
        ),
        POD + "spec.containers[0].readinessProbe.periodSeconds: -1 must be greater than or equal "
        "to 0",
    ),
    (
        "deployment minReadySeconds",
        edit(deployment(), "spec.minReadySeconds", -5),
        DEP + "spec.minReadySeconds: -5 must be greater than or equal to 0",
    ),
    (
        "job parallelism",
        job(parallelism=-1),
        JOB + "spec.parallelism: -1 must be greater than or equal to 0",
    ),
    (
        "job backoffLimit",
        edit(job(), "spec.backoffLimit", -1),
        JOB + "spec.backoffLimit: -1 must be greater than or equal to 0",
    ),
    # ---- PodDisruptionBudget
    (
        "pdb above 100%",
        pdb(minAvailable="150%"),
        PDB + "spec.minAvailable: 150% must not be greater than 100%",
    ),
    (
        "pdb both set",
        pdb(minAvailable=1, maxUnavailable=1),
        PDB + "spec: minAvailable and maxUnavailable cannot both be set",
    ),
    (
        "pdb negative",
        pdb(maxUnavailable=-1),
        PDB + "spec.maxUnavailable: -1 must be greater than or equal to 0",
    ),
    (
        "pdb not a percentage",
        pdb(maxUnavailable="1.5%"),
        PDB + "spec.maxUnavailable: '1.5%' must be an integer or a percentage",
    ),
    (
        "pdb eviction policy enum",
        pdb(minAvailable=1, unhealthyPodEvictionPolicy="Never"),
        PDB + "spec.unhealthyPodEvictionPolicy: unsupported value 'Never': supported values: "
        "'AlwaysAllow', 'IfHealthyBudget'",
    ),
    # ---- EC2NodeClass (CRD: maxPods and podsPerCore are int32, minimum 0)
    (
        "kubelet maxPods within int32",
        edit(nodeclass(), "spec.kubelet", {"maxPods": 2**31}),
        NC + "spec.kubelet.maxPods: 2147483648 is outside the 32-bit integer range",
    ),
    (
        "kubelet podsPerCore not negative",
        edit(nodeclass(), "spec.kubelet", {"podsPerCore": -1}),
        NC + "spec.kubelet.podsPerCore: -1 is less than the minimum 0",
    ),
    (
        "ebs iops within int64",
        edit(nodeclass(), "spec.blockDeviceMappings[0].ebs.iops", 2**63),
        NC + "spec.blockDeviceMappings[0].ebs.iops: 9223372036854775808 is outside "
        "0-9223372036854775807 (int64)",
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_what_the_api_server_rejects_gives_the_expected_one_line_error(
    doc: dict[str, Any], expected: str
) -> None:
    result = load(doc)
    assert [str(e) for e in result.errors] == [expected]
    assert result.manifests == []


def test_a_decoding_error_hides_the_rules_as_the_api_server_validates_only_what_it_decoded() -> (
    None
):
    doc = edit(pod(), "spec.containers[0].ports", [{"containerPort": 2**31}])
    assert [str(e) for e in load(doc).errors] == [
        POD + "spec.containers[0].ports[0].containerPort: 2147483648 is outside the 32-bit "
        "integer range"
    ]


def test_an_empty_enum_field_is_accepted_as_the_api_server_defaults_it() -> None:
    doc = pod(restartPolicy="", dnsPolicy="")
    assert load(doc).errors == []


def test_a_generate_name_may_end_in_a_dash() -> None:
    assert load(edit(pod(), "metadata.generateName", "web-")).errors == []


EBS = "spec.blockDeviceMappings[0].ebs"


@pytest.mark.parametrize(
    ("ebs", "warning"),
    [
        (
            {"volumeSize": "200Gi", "volumeType": "gp3", "iops": 20000},
            f"{EBS}.iops: 20000 is outside 3000-16000 for gp3 volumes; EC2 would refuse the launch",
        ),
        (
            {"volumeSize": "200Gi", "volumeType": "gp3", "throughput": 100},
            f"{EBS}.throughput: 100 is outside 125-1000 for gp3 volumes; EC2 would refuse the "
            "launch",
        ),
        (
            {"volumeSize": "200Gi", "volumeType": "gp2", "iops": 3000},
            f"{EBS}.iops: iops is not supported for gp2 volumes; EC2 would refuse the launch",
        ),
        (
            {"volumeSize": "2Gi", "volumeType": "io2", "iops": 1000},
            f"{EBS}.volumeSize: 2Gi (2 GiB) is outside 4-16384 GiB for io2 volumes; EC2 would "
            "refuse the launch",
        ),
        (
            {"volumeSize": "20000G", "volumeType": "gp3"},
            f"{EBS}.volumeSize: 20000G (18626 GiB) is outside 1-16384 GiB for gp3 volumes; EC2 "
            "would refuse the launch",
        ),
    ],
)
def test_ebs_settings_beyond_ec2s_limits_are_warnings_as_the_crd_accepts_them(
    ebs: dict[str, Any], warning: str
) -> None:
    result = load(edit(nodeclass(), "spec.blockDeviceMappings[0].ebs", ebs))
    assert result.errors == []
    assert [str(w) for w in result.warnings] == [NC + warning]


def test_ebs_settings_within_ec2s_limits_load_without_warnings() -> None:
    ebs = {"volumeSize": "1Ti", "volumeType": "gp3", "iops": 16000, "throughput": 1000}
    result = load(edit(nodeclass(), "spec.blockDeviceMappings[0].ebs", ebs))
    assert result.errors == []
    assert result.warnings == []


def test_a_device_plugin_config_that_is_not_yaml_is_an_error() -> None:
    broken = "version: v1\nsharing:\n  timeSlicing:\n    resources: [\n"
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ts", "namespace": "gpu-operator"},
        "data": {"any": broken},
    }
    errors = [str(e) for e in load(doc).errors]
    assert len(errors) == 1
    assert errors[0].startswith(
        "test.yaml[0] ConfigMap/gpu-operator/ts: data.any: invalid device-plugin config: "
        "not valid YAML: "
    )


def test_other_configmap_entries_that_are_not_yaml_are_not_judged() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "scripts"},
        "data": {"run.sh": "echo [ {"},
    }
    assert load(doc).errors == []


def test_every_rule_has_a_case() -> None:
    assert len({c[0] for c in CASES}) == len(CASES) >= 60


# ---- laws --------------------------------------------------------------------------------------
_ALNUM = string.ascii_lowercase + string.digits
_labels = st.builds(
    lambda head, middle, tail: head + middle + tail if middle or tail else head,
    st.sampled_from(_ALNUM),
    st.text(_ALNUM + "-", max_size=20),
    st.sampled_from(_ALNUM),
)
subdomains = st.lists(_labels, min_size=1, max_size=5).map(".".join).filter(lambda s: len(s) <= 253)


@settings(max_examples=300, deadline=None)
@given(name=subdomains)
def test_every_dns_subdomain_is_accepted_as_a_name(name: str) -> None:
    assert dns1123_subdomain_problem(name) is None
    assert load(pod(name=name)).errors == []


@settings(max_examples=300, deadline=None)
@given(
    name=subdomains,
    bad=st.characters().filter(lambda c: c not in _ALNUM + ".-"),
    at=st.integers(min_value=0),
)
def test_every_name_with_a_character_outside_a_z_0_9_dot_dash_is_rejected(
    name: str, bad: str, at: int
) -> None:
    at %= len(name) + 1
    bad_name = name[:at] + bad + name[at:]
    assert dns1123_subdomain_problem(bad_name) is not None
    assert dns1123_label_problem(bad_name) is not None


@settings(max_examples=300, deadline=None)
@given(label=_labels)
def test_a_dns_label_is_a_namespace_a_container_name_and_a_label_value(label: str) -> None:
    if len(label) <= 63:
        assert dns1123_label_problem(label) is None
        assert label_value_problem(label) is None
        assert qualified_name_problem(label) is None


@settings(max_examples=300, deadline=None)
@given(value=st.text(max_size=70))
def test_a_label_value_is_at_most_63_characters_of_the_label_alphabet(value: str) -> None:
    alphabet = set(string.ascii_letters + string.digits + "-_.")
    ok = value == "" or (
        len(value) <= 63
        and set(value) <= alphabet
        and value[0].isascii()
        and value[0].isalnum()
        and value[-1].isascii()
        and value[-1].isalnum()
    )
    assert (label_value_problem(value) is None) == ok


# Through the CLI: exit 2, the line on stderr. Cases whose message holds control or non-ASCII
# characters, or the escapes repr() wrote for them, are left out: how a terminal shows them
# (escaped once more, `runtime/terminal.py`) is the terminal-safety tests' subject.
CLI_CASES = [c for c in CASES if c[2].isascii() and c[2].isprintable() and "\\" not in c[2]]


@pytest.mark.parametrize(
    ("doc", "expected"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES]
)
def test_validate_exits_2_with_the_api_servers_rule_on_stderr(
    doc: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    f = tmp_path / "test.yaml"
    f.write_text(to_yaml(doc), encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(f)])
    assert result.exit_code == 2
    assert f"error: {tmp_path}/{expected}" in result.stderr.splitlines()
