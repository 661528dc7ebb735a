"""The validation cases (document, field, message), shared by validate's and the CLI's tests (not
a test module)."""

from __future__ import annotations

from typing import Any

from tests.builders import (
    DELETE,
    GPU_TOLERATION,
    deployment,
    edit,
    nodeclass,
    nodepool,
    pod,
)

NP = "test.yaml[0] NodePool/gpu: "
NC = "test.yaml[0] EC2NodeClass/gpu: "
POD = "test.yaml[0] Pod/default/web-0: "
DEP = "test.yaml[0] Deployment/default/vllm: "
REQ = "spec.template.spec.requirements"
TPL = "spec.template.spec"


def overlay(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "requirements": [
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}
        ],
        "capacity": {"nvidia.com/gpu": "4"},
    }
    base.update(spec)
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "ts"},
        "spec": base,
    }


def configmap(data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ts", "namespace": "gpu-operator"},
        "data": {"any": data},
    }


CASES: list[tuple[str, dict[str, Any], str]] = [
    # ---- NodePool: requirements
    (
        "requirement operator enum",
        edit(nodepool(), f"{REQ}[1].operator", "Inn"),
        NP
        + f"{REQ}[1].operator: 'Inn' is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte",
    ),
    (
        "requirement key syntax",
        edit(nodepool(), f"{REQ}[0].key", "example.com/gpu team"),
        NP
        + f"{REQ}[0].key: 'example.com/gpu team' is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    ),
    (
        "requirement value syntax",
        edit(nodepool(), f"{REQ}[2].values[0]", "g5 large"),
        NP + f"{REQ}[2].values[0]: 'g5 large' is not a valid label value: must be empty or consist "
        "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character",
    ),
    (
        "In needs values",
        edit(nodepool(), f"{REQ}[2].values", []),
        NP + f"{REQ}[2]: requirements with operator 'In' must have a value defined",
    ),
    (
        "Gt needs a single non-negative integer",
        edit(
            nodepool(),
            f"{REQ}[3]",
            {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["four"]},
        ),
        NP
        + f"{REQ}[3].values: requirements operator 'Gt' must have a single positive integer value",
    ),
    (
        "minValues at most 50",
        edit(nodepool(), f"{REQ}[2].minValues", 51),
        NP + f"{REQ}[2].minValues: 51 is outside 1-50",
    ),
    (
        "minValues needs that many values",
        edit(nodepool(), f"{REQ}[2].minValues", 3),
        NP + f"{REQ}[2].minValues: requirements with 'minValues' must have at least that many "
        "values specified in the 'values' field (2 < 3)",
    ),
    (
        "karpenter.sh domain restricted",
        edit(nodepool(), f"{REQ}[0].key", "karpenter.sh/team"),
        NP + f'{REQ}[0].key: label domain "karpenter.sh" is restricted',
    ),
    (
        "karpenter.sh/nodepool restricted",
        edit(nodepool(), f"{REQ}[0].key", "karpenter.sh/nodepool"),
        NP + f'{REQ}[0].key: label "karpenter.sh/nodepool" is restricted',
    ),
    (
        "kubernetes.io/hostname restricted",
        edit(nodepool(), f"{REQ}[0].key", "kubernetes.io/hostname"),
        NP + f'{REQ}[0].key: label "kubernetes.io/hostname" is restricted',
    ),
    (
        "karpenter.k8s.aws domain restricted",
        edit(nodepool(), f"{REQ}[0].key", "karpenter.k8s.aws/instance-gpus"),
        NP + f'{REQ}[0].key: label domain "karpenter.k8s.aws" is restricted',
    ),
    (
        "capacity-type needs a known value",
        edit(nodepool(), f"{REQ}[1].values", ["spots"]),
        NP + f"{REQ}[1].values: no valid values found in ['spots'] for karpenter.sh/capacity-type, "
        "expected one of: ['on-demand', 'reserved', 'spot']",
    ),
    (
        "requirement values are strings",
        edit(nodepool(), f"{REQ}[2].values", [5]),
        NP + f"{REQ}[2].values[0]: expected a string, got integer 5",
    ),
    (
        "requirements are required",
        edit(nodepool(), f"{REQ}", DELETE),
        NP + f"{REQ}: required field is missing",
    ),
    # ---- NodePool: template labels, taints
    (
        "template label value syntax",
        edit(nodepool(), "spec.template.metadata.labels.team", "machine learning"),
        NP + "spec.template.metadata.labels.team: invalid label value 'machine learning': must be "
        "empty or consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character",
    ),
    (
        "template label domain restricted",
        edit(nodepool(), 'spec.template.metadata.labels["karpenter.sh/pool"]', "x"),
        NP
        + 'spec.template.metadata.labels[karpenter.sh/pool]: label domain "karpenter.sh" is restricted',
    ),
    (
        "taint effect enum",
        edit(nodepool(), f"{TPL}.taints[0].effect", "NoScheduel"),
        NP
        + f"{TPL}.taints[0].effect: 'NoScheduel' is not one of NoSchedule, PreferNoSchedule, NoExecute",
    ),
    (
        "taint key syntax",
        edit(nodepool(), f"{TPL}.taints[0].key", "nvidia.com/gpu/x"),
        NP
        + f"{TPL}.taints[0].key: 'nvidia.com/gpu/x' is not a valid taint key: prefix part must be "
        "a lowercase DNS subdomain (e.g. 'example.com', matching "
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(.[a-z0-9]...)*)",
    ),
    (
        "duplicate taint key and effect across taints and startupTaints",
        edit(
            nodepool(), f"{TPL}.startupTaints", [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
        ),
        NP + f"{TPL}.startupTaints[0]: duplicate taint Key/Effect pair nvidia.com/gpu=NoSchedule "
        "(also in taints[0])",
    ),
    # ---- NodePool: durations, disruption, weight, nodeClassRef, limits
    (
        "expireAfter duration syntax",
        edit(nodepool(), f"{TPL}.expireAfter", "30d"),
        NP + f"{TPL}.expireAfter: '30d' is not a duration like 720h, 30m, 1h30m or Never",
    ),
    (
        "terminationGracePeriod cannot be Never",
        edit(nodepool(), f"{TPL}.terminationGracePeriod", "Never"),
        NP + f"{TPL}.terminationGracePeriod: 'Never' is not a duration like 1h, 30m or 1h30m "
        "(Never is not allowed)",
    ),
    (
        "consolidateAfter duration syntax",
        edit(nodepool(), "spec.disruption", {"consolidateAfter": "1 hour"}),
        NP
        + "spec.disruption.consolidateAfter: '1 hour' is not a duration like 30s, 5m, 1h30m or Never",
    ),
    (
        "consolidationPolicy enum",
        edit(nodepool(), "spec.disruption", {"consolidationPolicy": "WhenUnderutilized"}),
        NP + "spec.disruption.consolidationPolicy: 'WhenUnderutilized' is not one of WhenEmpty, "
        "WhenEmptyOrUnderutilized, Balanced",
    ),
    (
        "budget nodes is a string",
        edit(nodepool(), "spec.disruption", {"budgets": [{"nodes": 1}]}),
        NP + "spec.disruption.budgets[0].nodes: expected a string, got integer 1",
    ),
    (
        "budget nodes pattern",
        edit(nodepool(), "spec.disruption", {"budgets": [{"nodes": "110%"}]}),
        NP
        + "spec.disruption.budgets[0].nodes: '110%' must be a count (e.g. '1') or a percentage 0-100%",
    ),
    (
        "budget schedule needs duration",
        edit(
            nodepool(),
            "spec.disruption",
            {"budgets": [{"nodes": "0", "schedule": "0 9 * * mon-fri"}]},
        ),
        NP + "spec.disruption.budgets[0]: 'schedule' must be set with 'duration'",
    ),
    (
        "budget schedule is cron",
        edit(
            nodepool(),
            "spec.disruption",
            {"budgets": [{"nodes": "0", "schedule": "0 25 * * *", "duration": "8h"}]},
        ),
        NP + "spec.disruption.budgets[0].schedule: '0 25 * * *': hour: 25 is outside 0-23",
    ),
    (
        "budget duration pattern",
        edit(
            nodepool(),
            "spec.disruption",
            {"budgets": [{"nodes": "0", "schedule": "@daily", "duration": "30s"}]},
        ),
        NP
        + "spec.disruption.budgets[0].duration: '30s' must be hours and/or minutes, e.g. 10m, 1h30m",
    ),
    (
        "budget reasons enum",
        edit(nodepool(), "spec.disruption", {"budgets": [{"nodes": "1", "reasons": ["Expired"]}]}),
        NP
        + "spec.disruption.budgets[0].reasons[0]: 'Expired' is not one of Underutilized, Empty, Drifted",
    ),
    (
        "weight 1 to 100",
        nodepool(weight=0),
        NP + "spec.weight: 0 is outside 1-100",
    ),
    (
        "nodeClassRef name required",
        edit(nodepool(), f"{TPL}.nodeClassRef.name", DELETE),
        NP + f"{TPL}.nodeClassRef.name: required field is missing",
    ),
    (
        "limits are quantities",
        edit(nodepool(), 'spec.limits["nvidia.com/gpu"]', "six"),
        NP + "spec.limits[nvidia.com/gpu]: 'six' is not a valid quantity",
    ),
    (
        "unknown NodePool field with suggestion",
        edit(nodepool(), "spec.disruption", {"consolidateafter": "1h"}),
        NP
        + "spec.disruption.consolidateafter: unknown field 'consolidateafter' (did you mean 'consolidateAfter'?)",
    ),
    (
        "v1beta1 NodePool not supported",
        edit(nodepool(), "apiVersion", "karpenter.sh/v1beta1"),
        NP
        + "apiVersion: NodePool karpenter.sh/v1beta1 is not served by Karpenter v1 (v1.1 removed the "
        "v1beta1 APIs): write it as NodePool karpenter.sh/v1; see Karpenter's v1 migration guide "
        "https://karpenter.sh/v1.0/upgrading/v1-migration/",
    ),
    # ---- EC2NodeClass
    (
        "alias format family@version",
        edit(nodeclass(), "spec.amiSelectorTerms[0].alias", "al2023"),
        NC + "spec.amiSelectorTerms[0].alias: 'al2023' is improperly formatted, must match the "
        "format 'family@version'",
    ),
    (
        "alias family supported",
        edit(nodeclass(), "spec.amiSelectorTerms[0].alias", "ubuntu@latest"),
        NC + "spec.amiSelectorTerms[0].alias: family 'ubuntu' is not supported, must be one of the "
        "following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
    ),
    (
        "alias must be the only term",
        edit(nodeclass(), "spec.amiSelectorTerms[1]", {"id": "ami-0123abcd"}),
        NC + "spec.amiSelectorTerms: 'alias' is mutually exclusive, cannot be set with a "
        "combination of other amiSelectorTerms",
    ),
    (
        "windows alias only latest",
        edit(nodeclass(), "spec.amiSelectorTerms[0].alias", "windows2022@v1"),
        NC + "spec.amiSelectorTerms[0].alias: windows families may only specify version 'latest'",
    ),
    (
        "amiFamily matches alias",
        edit(nodeclass(), "spec.amiFamily", "Bottlerocket"),
        NC
        + "spec.amiFamily: if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias",
    ),
    (
        "amiFamily required without alias",
        edit(nodeclass(), "spec.amiSelectorTerms", [{"id": "ami-0123abcd"}]),
        NC + "spec: must specify amiFamily if amiSelectorTerms does not contain an alias",
    ),
    (
        "ami id pattern",
        edit(
            edit(nodeclass(), "spec.amiSelectorTerms", [{"id": "img-1"}]),
            "spec.amiFamily",
            "AL2023",
        ),
        NC + "spec.amiSelectorTerms[0].id: 'img-1' is not an AMI id (ami-...)",
    ),
    (
        "exactly one of role and instanceProfile",
        edit(nodeclass(), "spec.instanceProfile", "KarpenterProfile"),
        NC + "spec: must specify exactly one of ['role', 'instanceProfile']",
    ),
    (
        "subnetSelectorTerms not empty",
        edit(nodeclass(), "spec.subnetSelectorTerms", []),
        NC + "spec.subnetSelectorTerms: subnetSelectorTerms cannot be empty",
    ),
    (
        "volumeType enum",
        edit(nodeclass(), "spec.blockDeviceMappings[0].ebs.volumeType", "gp4"),
        NC + "spec.blockDeviceMappings[0].ebs.volumeType: 'gp4' is not one of standard, io1, io2, "
        "gp2, sc1, st1, gp3",
    ),
    (
        "volumeSize pattern",
        edit(nodeclass(), "spec.blockDeviceMappings[0].ebs.volumeSize", "200GB"),
        NC
        + "spec.blockDeviceMappings[0].ebs.volumeSize: '200GB' must be 1-59000Gi, 1-64000G, 1-58Ti or 1-64T",
    ),
    (
        "restricted tags",
        edit(nodeclass(), "spec.tags", {"kubernetes.io/cluster/demo": "owned"}),
        NC
        + "spec.tags[kubernetes.io/cluster/demo]: tag contains a restricted tag matching kubernetes.io/cluster/demo",
    ),
    (
        "kubelet kubeReserved keys",
        edit(nodeclass(), "spec.kubelet", {"kubeReserved": {"gpu": "1"}}),
        NC
        + "spec.kubelet.kubeReserved.gpu: valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']",
    ),
    (
        "kubelet image GC thresholds ordered",
        edit(
            nodeclass(),
            "spec.kubelet",
            {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60},
        ),
        NC
        + "spec.kubelet: imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
    ),
    # ---- NodeOverlay
    (
        "overlay cannot set price and priceAdjustment",
        overlay(price="1.0", priceAdjustment="-10%"),
        "test.yaml[0] NodeOverlay/ts: spec: cannot set both 'price' and 'priceAdjustment'",
    ),
    (
        "overlay capacity cannot override cpu",
        overlay(capacity={"cpu": "4"}),
        "test.yaml[0] NodeOverlay/ts: spec.capacity.cpu: invalid resource restricted",
    ),
    # ---- Pods and workloads
    (
        "quantity syntax",
        edit(pod(), "spec.containers[0].resources.requests.memory", "12GB"),
        POD + "spec.containers[0].resources.requests.memory: '12GB' is not a valid quantity",
    ),
    (
        "extended resource must be in limits",
        edit(pod(), 'spec.containers[0].resources.requests["nvidia.com/gpu"]', "1"),
        POD + "spec.containers[0].resources.limits[nvidia.com/gpu]: nvidia.com/gpu is an extended "
        "resource: it must be set in limits (Limit must be set for non overcommitable resources)",
    ),
    (
        "extended resource request equals limit",
        edit(pod(gpu=2), 'spec.containers[0].resources.requests["nvidia.com/gpu"]', "1"),
        POD + "spec.containers[0].resources.requests[nvidia.com/gpu]: must be equal to "
        "nvidia.com/gpu limit of 2 (extended resources cannot be overcommitted)",
    ),
    (
        "extended resource is whole",
        edit(pod(), "spec.containers[0].resources.limits", {"nvidia.com/gpu": "0.5"}),
        POD + "spec.containers[0].resources.limits[nvidia.com/gpu]: 500m must be an integer",
    ),
    (
        "cpu request at most limit",
        edit(pod(), "spec.containers[0].resources.limits", {"cpu": "500m"}),
        POD
        + "spec.containers[0].resources.requests.cpu: 1 must be less than or equal to cpu limit of 500m",
    ),
    (
        "toleration operator enum",
        pod(tolerations=[{**GPU_TOLERATION, "operator": "Exist"}]),
        POD + "spec.tolerations[0].operator: unsupported value 'Exist': supported values: "
        "'Equal', 'Exists', 'Gt', 'Lt'",
    ),
    (
        "toleration Exists has no value",
        pod(tolerations=[{**GPU_TOLERATION, "value": "present"}]),
        POD + "spec.tolerations[0].value: value must be empty when operator is 'Exists'",
    ),
    (
        "node affinity In needs values",
        pod(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "karpenter.k8s.aws/instance-family", "operator": "In"}
                                ]
                            }
                        ]
                    }
                }
            }
        ),
        POD + "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchExpressions[0].values: must be specified when operator is 'In'",
    ),
    (
        "topology spread whenUnsatisfiable enum",
        pod(
            topologySpreadConstraints=[
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "Schedule",
                }
            ]
        ),
        POD + "spec.topologySpreadConstraints[0].whenUnsatisfiable: unsupported value 'Schedule': "
        "supported values: 'DoNotSchedule', 'ScheduleAnyway'",
    ),
    (
        "unknown pod spec field",
        pod(toleration=[GPU_TOLERATION]),
        POD + "spec.toleration: unknown field 'toleration' (did you mean 'tolerations'?)",
    ),
    (
        "containers required",
        edit(pod(), "spec.containers", DELETE),
        POD + "spec.containers: required field is missing",
    ),
    (
        "deployment selector matches template labels",
        edit(deployment(), "spec.selector.matchLabels.app", "other"),
        DEP + "spec.template.metadata.labels: `selector` does not match template `labels`",
    ),
    (
        "replicas not negative",
        deployment(replicas=-1),
        DEP + "spec.replicas: -1 must be greater than or equal to 0",
    ),
    (
        "container in workload template validated",
        edit(deployment(), "spec.template.spec.containers[0].resources.requests.cpu", "1 core"),
        DEP
        + "spec.template.spec.containers[0].resources.requests.cpu: '1 core' is not a valid quantity",
    ),
    # ---- GPU Operator config
    (
        "time-slicing replicas positive",
        configmap(
            "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 0\n"
        ),
        "test.yaml[0] ConfigMap/gpu-operator/ts: data.any: invalid device-plugin config: "
        "sharing.timeSlicing.resources[0].replicas: 0 is less than the minimum 1",
    ),
    (
        "MIG strategy enum",
        configmap("version: v1\nflags:\n  migStrategy: all\n"),
        "test.yaml[0] ConfigMap/gpu-operator/ts: data.any: invalid device-plugin config: "
        "flags.migStrategy: 'all' is not one of none, single, mixed",
    ),
]
