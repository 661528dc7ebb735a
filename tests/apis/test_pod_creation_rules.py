"""Inputs the API server refuses that `validate` used to accept (issue 20): one minimal manifest
per rule, the one error line it gives, and the nearby input that stays valid.

Each rule was read in kubernetes/kubernetes: `pkg/apis/core/validation/validation.go`
(`validateInitContainerRestartPolicy`, `ValidateVolumes`, `ValidateVolumeMounts`, `ValidateEnv`,
`ValidatePodSpec`'s priorityClassName, `validateContainerOnlyForPod`,
`validateMatchLabelKeys*`), `pkg/registry/core/pod/strategy.go` (the label-key merge on pod
creation), `pkg/apis/apps/validation/validation.go` (`ValidateDeploymentStrategy`,
`ValidateRollingUpdateDeployment`, `ValidatePodTemplateSpecForReplicaSet`,
`ValidateDaemonSetSpec`, `ValidateStatefulSetSpec`), `pkg/apis/batch/validation/validation.go`
(`validateJobSpec`, after `SetDefaults_Job`) and apimachinery's `IsConfigMapKey`. The CLI test
runs every case through `gpucap validate`: exit 2 and the line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.builders import container, daemonset, deployment, edit, job, load, pod, to_yaml

POD = "test.yaml[0] Pod/default/web-0: "
DEP = "test.yaml[0] Deployment/default/vllm: "
JOB = "test.yaml[0] Job/default/train: "
CM = "test.yaml[0] ConfigMap/default/cfg: "
STS = "test.yaml[0] StatefulSet/default/db: "
DS = "test.yaml[0] DaemonSet/kube-system/nvidia-device-plugin: "
ZONE = "topology.kubernetes.io/zone"
SUBDOMAIN = (
    "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting "
    "and ending with a letter or digit"
)
TEMPLATE_PODS = "; the API server refuses each pod this template makes"


def configmap(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, **fields}


def statefulset(**template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "selector": {"matchLabels": {"app": "db"}},
            "serviceName": "db",
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [container()], **template_spec},
            },
        },
    }


def with_volumes(doc: dict[str, Any], at: str, volumes: list[Any], mounts: list[Any]) -> Any:
    """`doc` whose pod spec at `at` has `volumes` and whose first container has `mounts`."""
    doc = edit(doc, f"{at}.volumes", volumes)
    return edit(doc, f"{at}.containers[0].volumeMounts", mounts)


def spread(**extra: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", **extra}


def labelled_pod(**spec: Any) -> dict[str, Any]:
    return edit(pod(**spec), "metadata.labels", {"app": "web"})


def anti_affinity(**term: Any) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}, **term}
            ]
        }
    }


ANTI = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
SIDECAR_ONLY = (
    "is not supported for an init container: only 'Always' (a sidecar); 'Never' and "
    "'OnFailure' need the alpha ContainerRestartRules feature gate"
)

REFUSED: list[tuple[str, dict[str, Any], str]] = [
    (
        "an init container's restartPolicy other than Always is refused, lower case included",
        pod(initContainers=[{**container(), "name": "init", "restartPolicy": "always"}]),
        POD + f"spec.initContainers[0].restartPolicy: 'always' {SIDECAR_ONLY}",
    ),
    (
        "an init container's restartPolicy Never needs an alpha gate and is refused",
        pod(initContainers=[{**container(), "name": "init", "restartPolicy": "Never"}]),
        POD + f"spec.initContainers[0].restartPolicy: 'Never' {SIDECAR_ONLY}",
    ),
    (
        "a priorityClassName that is not a DNS subdomain is refused",
        pod(priorityClassName="High_Priority"),
        POD + f"spec.priorityClassName: invalid priorityClassName: 'High_Priority' {SUBDOMAIN}",
    ),
    (
        "a volume mount naming no volume of the pod is refused, with the closest name",
        with_volumes(
            pod(),
            "spec",
            [{"name": "cache", "emptyDir": {}}],
            [{"name": "cahce", "mountPath": "/cache"}],
        ),
        POD + "spec.containers[0].volumeMounts[0].name: no volume 'cahce' in the pod's volumes "
        "(did you mean 'cache'?)",
    ),
    (
        "a volume mount in a workload's template naming no volume is refused",
        with_volumes(
            deployment(), "spec.template.spec", [], [{"name": "models", "mountPath": "/m"}]
        ),
        DEP + "spec.template.spec.containers[0].volumeMounts[0].name: no volume 'models' in the "
        "pod's volumes",
    ),
    (
        "two volumes of one name are refused",
        with_volumes(
            pod(),
            "spec",
            [{"name": "cache", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}],
            [],
        ),
        POD + "spec.volumes[1].name: duplicate volume name 'cache'",
    ),
    (
        "two mounts at one path in a container are refused",
        with_volumes(
            pod(),
            "spec",
            [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}],
            [{"name": "a", "mountPath": "/data"}, {"name": "b", "mountPath": "/data"}],
        ),
        POD + "spec.containers[0].volumeMounts[1].mountPath: '/data' is mounted already by "
        "volumeMounts[0] of this container (mount paths must be unique)",
    ),
    (
        "an environment variable with an empty name is refused",
        edit(pod(), "spec.containers[0].env", [{"name": "", "value": "1"}]),
        POD + "spec.containers[0].env[0].name: an environment variable needs a name",
    ),
    (
        "a ConfigMap key with a space is refused",
        configmap(data={"a b": "1"}),
        CM + "data[a b]: invalid key 'a b': must consist of letters, digits, '-', '_' or '.'",
    ),
    (
        "a ConfigMap key starting with two dots is refused",
        configmap(data={"..x": "1"}),
        CM + "data[..x]: invalid key '..x': must not start with '..'",
    ),
    (
        "a ConfigMap key in both data and binaryData is refused",
        configmap(data={"k": "1"}, binaryData={"k": "MQ=="}),
        CM + "data.k: 'k' is a key of binaryData too",
    ),
    (
        "a Deployment with maxSurge and maxUnavailable both 0 is refused",
        edit(
            deployment(), "spec.strategy", {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}
        ),
        DEP + "spec.strategy.rollingUpdate.maxUnavailable: may not be 0 when maxSurge is 0 "
        "(a rollout could never replace a pod)",
    ),
    (
        "a Deployment with maxSurge and maxUnavailable both 0% is refused",
        edit(
            deployment(),
            "spec.strategy",
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "0%"}},
        ),
        DEP + "spec.strategy.rollingUpdate.maxUnavailable: may not be 0 when maxSurge is 0 "
        "(a rollout could never replace a pod)",
    ),
    (
        "a Deployment's Recreate strategy with a rollingUpdate block is refused",
        edit(deployment(), "spec.strategy", {"type": "Recreate", "rollingUpdate": {}}),
        DEP + "spec.strategy.rollingUpdate: may not be set when the strategy type is 'Recreate'",
    ),
    (
        "a Deployment's maxUnavailable above 100% is refused",
        edit(deployment(), "spec.strategy", {"rollingUpdate": {"maxUnavailable": "150%"}}),
        DEP + "spec.strategy.rollingUpdate.maxUnavailable: 150% must not be greater than 100%",
    ),
    (
        "a Deployment's maxSurge that is neither an integer nor a percentage is refused",
        edit(deployment(), "spec.strategy", {"rollingUpdate": {"maxSurge": "one"}}),
        DEP + "spec.strategy.rollingUpdate.maxSurge: 'one' must be an integer or a percentage "
        "(e.g. '25%')",
    ),
    (
        "an Indexed Job with parallelism and without completions is refused",
        edit(job(parallelism=4), "spec.completionMode", "Indexed"),
        JOB + "spec.completions: an Indexed Job needs completions (only a Job without "
        "parallelism either is defaulted to 1)",
    ),
    (
        "a Deployment's pod template with restartPolicy Never is refused",
        deployment(restartPolicy="Never"),
        DEP + "spec.template.spec.restartPolicy: 'Never' is not supported in a Deployment's pod "
        "template: only 'Always'",
    ),
    (
        "a DaemonSet's pod template with activeDeadlineSeconds is refused",
        edit(daemonset(), "spec.template.spec.activeDeadlineSeconds", 60),
        DS + "spec.template.spec.activeDeadlineSeconds: may not be set in a DaemonSet's pod "
        "template (its pods run until replaced)",
    ),
    (
        "a StatefulSet's pod template with restartPolicy OnFailure is refused",
        statefulset(restartPolicy="OnFailure"),
        STS + "spec.template.spec.restartPolicy: 'OnFailure' is not supported in a "
        "StatefulSet's pod template: only 'Always'",
    ),
    (
        "a Pod image with leading or trailing whitespace is refused",
        edit(pod(), "spec.containers[0].image", "vllm/vllm-openai "),
        POD + "spec.containers[0].image: 'vllm/vllm-openai ' has leading or trailing whitespace",
    ),
    (
        "a template image with whitespace is refused: the pods made from it would be",
        edit(deployment(), "spec.template.spec.containers[0].image", " vllm/vllm-openai"),
        DEP + "spec.template.spec.containers[0].image: ' vllm/vllm-openai' has leading or "
        "trailing whitespace" + TEMPLATE_PODS,
    ),
    (
        "a topology spread key in both matchLabelKeys and the selector is refused once merged",
        labelled_pod(
            topologySpreadConstraints=[
                spread(labelSelector={"matchLabels": {"app": "web"}}, matchLabelKeys=["app"])
            ]
        ),
        POD + "spec.topologySpreadConstraints[0].matchLabelKeys[0]: 'app' is in both "
        "matchLabelKeys and the labelSelector once the pod's labels are merged in",
    ),
    (
        "a pod anti-affinity key in both matchLabelKeys and the selector is refused once merged",
        labelled_pod(affinity=anti_affinity(matchLabelKeys=["app"])),
        POD + f"{ANTI}.matchLabelKeys[0]: 'app' is in both matchLabelKeys and the labelSelector "
        "once the pod's labels are merged in",
    ),
    (
        "matchLabelKeys without a labelSelector are refused",
        labelled_pod(topologySpreadConstraints=[spread(matchLabelKeys=["app"])]),
        POD + "spec.topologySpreadConstraints[0].matchLabelKeys: must not be set without a "
        "labelSelector",
    ),
    (
        "a key in both matchLabelKeys and mismatchLabelKeys is refused",
        labelled_pod(
            affinity=anti_affinity(
                labelSelector={"matchLabels": {"tier": "x"}},
                matchLabelKeys=["team"],
                mismatchLabelKeys=["team"],
            )
        ),
        POD + f"{ANTI}.matchLabelKeys[0]: 'team' is in both matchLabelKeys and mismatchLabelKeys",
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_the_api_servers_refusal_is_one_error_line(doc: dict[str, Any], expected: str) -> None:
    result = load(doc)
    assert [str(e) for e in result.errors] == [expected]
    assert result.manifests == []


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_validate_exits_2_with_the_refusal_on_stderr(
    doc: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    f = tmp_path / "test.yaml"
    f.write_text(to_yaml(doc), encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(f)])
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {tmp_path}/{expected}"]


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    (
        "an init container with restartPolicy Always is a valid sidecar",
        pod(initContainers=[{**container(), "name": "proxy", "restartPolicy": "Always"}]),
    ),
    (
        "a mount naming a StatefulSet's volumeClaimTemplate is valid: the controller adds it",
        edit(
            with_volumes(
                statefulset(), "spec.template.spec", [], [{"name": "data", "mountPath": "/data"}]
            ),
            "spec.volumeClaimTemplates",
            [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
        ),
    ),
    (
        "one volume mounted at two paths is valid",
        with_volumes(
            pod(),
            "spec",
            [{"name": "a", "emptyDir": {}}],
            [
                {"name": "a", "mountPath": "/x"},
                {"name": "a", "mountPath": "/y"},
            ],
        ),
    ),
    (
        "a Deployment with maxSurge 0 keeps the default maxUnavailable 25% and is valid",
        edit(deployment(), "spec.strategy", {"rollingUpdate": {"maxSurge": 0}}),
    ),
    (
        "an Indexed Job without parallelism nor completions is defaulted to 1 and valid",
        edit(job(parallelism=None), "spec.completionMode", "Indexed"),
    ),
    (
        "matchLabelKeys of a label the pod does not have merge nothing and are valid",
        pod(
            topologySpreadConstraints=[
                spread(labelSelector={"matchLabels": {"app": "web"}}, matchLabelKeys=["app"])
            ]
        ),
    ),
    (
        "matchLabelKeys on a key outside the selector are valid",
        labelled_pod(
            topologySpreadConstraints=[
                spread(labelSelector={"matchLabels": {"tier": "x"}}, matchLabelKeys=["app"])
            ]
        ),
    ),
    (
        "ConfigMap keys of letters, digits, dots, dashes and underscores are valid",
        configmap(data={"config.yaml": "a: 1", "A_B-c": "2", ".hidden": "3"}),
    ),
    (
        "a Deployment's pod template with restartPolicy Always is valid",
        deployment(restartPolicy="Always"),
    ),
]


@pytest.mark.parametrize("doc", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_the_nearby_valid_input_loads(doc: dict[str, Any]) -> None:
    result = load(doc)
    assert result.errors == []
    assert len(result.manifests) == 1
