"""The kubelet model: device plugins, advertised GPUs, DaemonSets, image pulls, start-up."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpucap.apis.core import Pod, Taint
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.gpuoperator import DevicePluginConfig
from gpucap.apis.serde import Manifests
from gpucap.cloudprovider.aws.coldstart import GIB, Timings
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.runtime.memo import Memos
from gpucap.sim.kubelet import (
    Addon,
    DevicePlugin,
    PullBounds,
    advertised_gpus,
    daemonsets_for,
    device_plugin_for,
    image_pull_seconds,
    pull_bounds,
    startup_seconds,
)
from tests.builders import daemonset, edit, load, nodeclass, pod_spec
from tests.realworld.corpus import real as real_file

CATALOG = load_catalog("us-east-1")
MEMOS = Memos()  # one run's memos, shared by the tests (what the simulator keeps across nodes)
TIMINGS = Timings()
GPU_NODE = {
    "node.kubernetes.io/instance-type": "g5.xlarge",
    "karpenter.sh/nodepool": "gpu",
    "karpenter.sh/capacity-type": "spot",
}
GPU_TAINT = Taint(key="nvidia.com/gpu", effect="NoSchedule")
GFD = "NVIDIA__k8s-device-plugin/deployments/static/gpu-feature-discovery-daemonset.yaml"
VLLM = "vllm/vllm-openai:v0.6.0"


def objects(*docs: dict[str, Any]) -> Manifests:
    result = load(*docs)
    assert result.ok, [str(i) for i in result.errors]
    return result.objects


def plugin_config(
    replicas: int, *, rename: bool = False, name: str = "dp-config"
) -> dict[str, Any]:
    time_slicing: dict[str, Any] = {"resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}
    if rename:
        time_slicing["renameByDefault"] = True
    config = {"version": "v1", "sharing": {"timeSlicing": time_slicing}}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "kube-system"},
        "data": {"any": yaml.safe_dump(config)},
    }


def cluster_policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


def plugin_on_gpu_node(
    *docs: dict[str, Any], addons: tuple[Addon, ...] = (), ami_family: str | None = "AL2023"
) -> DevicePlugin | None:
    manifests = objects(*docs)
    plain = device_plugin_for(
        GPU_NODE,
        [GPU_TAINT],
        objects=manifests,
        addons=addons,
        ami_family=ami_family,
        timings=TIMINGS,
    )
    # The simulator passes its run's memos (each DaemonSet's pod and its runtime-label-free
    # variants made once): asked twice, the same answer as the plain path.
    for _ in range(2):
        memoised = device_plugin_for(
            GPU_NODE,
            [GPU_TAINT],
            objects=manifests,
            addons=addons,
            ami_family=ami_family,
            timings=TIMINGS,
            memos=MEMOS,
        )
        assert memoised == plain
    return plain


# ---- which plugin, when ----------------------------------------------------------------------
def test_no_plugin_in_cluster_means_no_gpu_advertised() -> None:
    plugin = plugin_on_gpu_node(daemonset("aws-node"))
    assert plugin is None
    assert advertised_gpus(1, plugin) == {}


def test_a_plugin_daemonset_advertises_after_its_pod_starts_and_the_plugin_registers() -> None:
    plugin = plugin_on_gpu_node(daemonset())
    assert plugin == DevicePlugin(
        "daemonset/kube-system/nvidia-device-plugin", 35.0, "nvidia.com/gpu", 1
    )
    assert advertised_gpus(4, plugin) == {"nvidia.com/gpu": 4}


def test_gpu_feature_discovery_in_the_plugins_image_advertises_no_gpu() -> None:
    # NVIDIA's static GFD DaemonSet: the device plugin's image, command gpu-feature-discovery.
    real = yaml.safe_load(real_file(GFD).read_text())
    assert plugin_on_gpu_node(real) is None
    gfd = edit(
        daemonset("gpu-feature-discovery"),
        "spec.template.spec.containers",
        [
            {
                "name": "gfd",
                "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                "command": ["/usr/bin/gpu-feature-discovery"],
            }
        ],
    )
    assert plugin_on_gpu_node(gfd) is None
    # The same image running the plugin is the plugin.
    plugin = edit(gfd, "spec.template.spec.containers[0].command", ["nvidia-device-plugin"])
    assert plugin_on_gpu_node(plugin) is not None


def test_plugin_daemonset_without_gpu_taint_toleration_does_not_land() -> None:
    untolerant = edit(daemonset(), "spec.template.spec.tolerations", [])
    assert plugin_on_gpu_node(untolerant) is None
    # The same DaemonSet lands on an untainted GPU node.
    on_untainted = device_plugin_for(
        GPU_NODE, [], objects=objects(untolerant), addons=(), ami_family=None, timings=TIMINGS
    )
    assert on_untainted is not None


def test_a_plugin_daemonset_selecting_other_nodes_does_not_land() -> None:
    elsewhere = edit(
        daemonset(), "spec.template.spec.nodeSelector", {"karpenter.sh/nodepool": "cpu"}
    )
    assert plugin_on_gpu_node(elsewhere) is None


def test_a_plugin_affinity_on_labels_gpu_nodes_get_at_run_time_does_not_keep_it_off() -> None:
    nfd = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "feature.node.kubernetes.io/pci-10de.present",
                                "operator": "In",
                                "values": ["true"],
                            }
                        ]
                    }
                ]
            }
        }
    }
    assert plugin_on_gpu_node(edit(daemonset(), "spec.template.spec.affinity", nfd)) is not None


def test_time_slicing_4_advertises_four_gpus_per_physical_gpu() -> None:
    plugin = plugin_on_gpu_node(daemonset(), plugin_config(4))
    assert plugin is not None
    assert plugin.replicas == 4
    assert advertised_gpus(1, plugin) == {"nvidia.com/gpu": 4}
    assert advertised_gpus(8, plugin) == {"nvidia.com/gpu": 32}


def test_rename_by_default_advertises_the_shared_resource() -> None:
    plugin = plugin_on_gpu_node(daemonset(), plugin_config(4, rename=True))
    assert advertised_gpus(2, plugin) == {"nvidia.com/gpu.shared": 8}


def test_the_node_label_picks_the_config_among_several() -> None:
    two = plugin_config(2, name="a")
    two["data"] = {"two": two["data"]["any"], "eight": plugin_config(8)["data"]["any"]}
    labelled = {**GPU_NODE, "nvidia.com/device-plugin.config": "eight"}
    plugin = device_plugin_for(
        labelled,
        [GPU_TAINT],
        objects=objects(daemonset(), two),
        addons=(),
        ami_family=None,
        timings=TIMINGS,
    )
    assert plugin is not None
    assert plugin.replicas == 8
    # Unlabelled, two configs and no default: the plugin's own default, no sharing.
    assert plugin_on_gpu_node(daemonset(), two) == DevicePlugin(
        "daemonset/kube-system/nvidia-device-plugin", 35.0, "nvidia.com/gpu", 1
    )


def test_the_gpu_operator_advertises_after_its_own_delay_with_its_default_config() -> None:
    policy = cluster_policy(devicePlugin={"config": {"name": "dp-config", "default": "any"}})
    plugin = plugin_on_gpu_node(policy, plugin_config(4))
    assert plugin == DevicePlugin("clusterpolicy/cluster-policy", 120.0, "nvidia.com/gpu", 4)


def test_a_cluster_policy_with_the_device_plugin_disabled_advertises_nothing() -> None:
    assert plugin_on_gpu_node(cluster_policy(devicePlugin={"enabled": False})) is None


def test_gpu_operator_tolerations_set_in_the_policy_replace_its_default() -> None:
    other = cluster_policy(daemonsets={"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    assert plugin_on_gpu_node(other) is None
    assert plugin_on_gpu_node(cluster_policy()) is not None


def test_the_helm_device_plugin_addon_lands_on_a_tainted_gpu_node() -> None:
    addon = Addon("nvidia-device-plugin", time_slicing_replicas=4)
    plugin = plugin_on_gpu_node(addons=(addon,))
    assert plugin == DevicePlugin("addon/nvidia-device-plugin", 35.0, "nvidia.com/gpu", 4)


def test_the_helm_addon_does_not_tolerate_other_taints() -> None:
    dedicated = Taint(key="dedicated", value="llm", effect="NoSchedule")
    plugin = device_plugin_for(
        GPU_NODE,
        [GPU_TAINT, dedicated],
        objects=objects(),
        ami_family=None,
        timings=TIMINGS,
        addons=(Addon("nvidia-device-plugin"),),
    )
    assert plugin is None


def test_the_gpu_operator_addon_renames_when_asked() -> None:
    addon = Addon("gpu-operator", time_slicing_replicas=2, rename_by_default=True)
    plugin = plugin_on_gpu_node(addons=(addon,))
    assert plugin == DevicePlugin("addon/gpu-operator", 120.0, "nvidia.com/gpu.shared", 2)


def test_bottlerocket_nvidia_ships_its_plugin() -> None:
    plugin = plugin_on_gpu_node(ami_family="Bottlerocket")
    assert plugin == DevicePlugin("ami/bottlerocket", 30.0, "nvidia.com/gpu", 1)
    assert advertised_gpus(1, plugin) == {"nvidia.com/gpu": 1}


def test_bottlerocket_time_slicing_comes_from_its_user_data_config() -> None:
    config = DevicePluginConfig.model_validate(yaml.safe_load(plugin_config(3)["data"]["any"]))
    plugin = device_plugin_for(
        GPU_NODE,
        [GPU_TAINT],
        objects=objects(),
        addons=(),
        ami_family="Bottlerocket",
        timings=TIMINGS,
        ami_config=config,
    )
    assert advertised_gpus(1, plugin) == {"nvidia.com/gpu": 3}


def test_overridden_timings_change_the_delay() -> None:
    slow = TIMINGS.with_overrides({"device_plugin": 90.0, "daemonset_start": 10.0})
    plugin = device_plugin_for(
        GPU_NODE,
        [GPU_TAINT],
        objects=objects(daemonset()),
        addons=(),
        ami_family=None,
        timings=slow,
    )
    assert plugin is not None
    assert plugin.delay == 100.0


# ---- DaemonSets ------------------------------------------------------------------------------
def test_daemonsets_land_where_tolerations_and_selectors_allow() -> None:
    plain = edit(daemonset("kube-proxy"), "spec.template.spec.tolerations", [])
    tolerant = daemonset("dcgm-exporter")
    selective = edit(
        daemonset("cpu-only"), "spec.template.spec.nodeSelector", {"karpenter.sh/nodepool": "cpu"}
    )
    sets = objects(plain, tolerant, selective).daemonsets
    assert [d.metadata.name for d in daemonsets_for(GPU_NODE, [GPU_TAINT], sets)] == [
        "dcgm-exporter"
    ]
    assert [d.metadata.name for d in daemonsets_for(GPU_NODE, [], sets)] == [
        "kube-proxy",
        "dcgm-exporter",
    ]


def test_a_prefer_no_schedule_taint_does_not_keep_a_daemonset_off() -> None:
    plain = edit(daemonset("kube-proxy"), "spec.template.spec.tolerations", [])
    soft = Taint(key="spot", effect="PreferNoSchedule")
    assert len(daemonsets_for(GPU_NODE, [soft], objects(plain).daemonsets)) == 1


# ---- image pull ------------------------------------------------------------------------------
def gpu_nodeclass(**ebs: Any) -> EC2NodeClass:
    doc = nodeclass()
    doc["spec"]["blockDeviceMappings"][0]["ebs"].update(ebs)
    (nc,) = objects(doc).nodeclasses
    return nc


def test_raising_gp3_throughput_from_125_to_500_shortens_the_pull() -> None:
    slow = pull_bounds("g5.xlarge", gpu_nodeclass(), CATALOG)
    fast = pull_bounds("g5.xlarge", gpu_nodeclass(throughput=500), CATALOG)
    before = image_pull_seconds(VLLM, slow, {})
    after = image_pull_seconds(VLLM, fast, {})
    # 125 MiB/s: the disk bounds both the 9 GiB download and the 18 GiB extraction.
    assert before == pytest.approx(27 * 1024 / 125)
    assert round(before, 3) == 221.184
    # 500 MiB/s: g5.xlarge's network (2,500 Mbps) bounds the download, its EBS bandwidth
    # (3,500 Mbps) the extraction.
    assert after == pytest.approx(9 * GIB / (2500e6 / 8) + 18 * GIB / (3500e6 / 8))
    assert round(after, 2) == 75.10
    assert round(before - after, 2) == 146.08


def test_pull_bounds_read_the_catalog_and_the_nodeclass() -> None:
    bounds = pull_bounds("g6.xlarge", gpu_nodeclass(throughput=1000), CATALOG)
    assert bounds == PullBounds(
        1000.0, pytest.approx(5000e6 / 8 / 2**20), pytest.approx(2500e6 / 8 / 2**20)
    )


def test_without_a_nodeclass_the_default_gp3_volume_bounds_the_pull() -> None:
    assert pull_bounds("g5.xlarge", None, CATALOG).disk_mib_s == 125


def test_raid0_instance_store_has_no_ebs_bound() -> None:
    doc = nodeclass()
    doc["spec"]["instanceStorePolicy"] = "RAID0"
    (nc,) = objects(doc).nodeclasses
    bounds = pull_bounds("g5.xlarge", nc, CATALOG)  # 250 GB local NVMe
    assert (bounds.disk_mib_s, bounds.ebs_mib_s) == (1000.0, None)


def test_a_type_without_bandwidths_in_the_catalog_has_no_such_bounds() -> None:
    # c3.large: the bundled catalog has neither its network nor its EBS bandwidth.
    assert pull_bounds("c3.large", None, CATALOG) == PullBounds(125, None, None)


def test_scenario_image_sizes_win_and_unknown_images_pull_in_no_time() -> None:
    bounds = PullBounds(100.0, None, None)
    assert image_pull_seconds("ghcr.io/me/model:1", bounds, {"ghcr.io/me/model": (GIB, GIB)}) == (
        pytest.approx(2 * 1024 / 100)
    )
    assert image_pull_seconds("ghcr.io/me/other:1", bounds, {}) == 0.0
    assert image_pull_seconds(VLLM, bounds, {VLLM: (GIB, 0)}) == pytest.approx(10.24)


# ---- start-up --------------------------------------------------------------------------------
def pod_with(annotations: dict[str, str]) -> Pod:
    return Pod.model_validate(
        {"metadata": {"name": "vllm-0", "annotations": annotations}, "spec": pod_spec()}
    )


def test_the_startup_annotation_gives_the_model_load_time() -> None:
    assert startup_seconds(pod_with({"gpucap.dev/startup-seconds": "90"}), TIMINGS) == 90.0
    assert startup_seconds(pod_with({}), TIMINGS.with_overrides({"model_load": 30})) == 30.0


@pytest.mark.parametrize("bad", ["soon", "-1", "nan", "inf"])
def test_a_bad_startup_annotation_names_the_pod_and_the_annotation(bad: str) -> None:
    with pytest.raises(
        ValueError, match=r"pod default/vllm-0: annotation gpucap.dev/startup-seconds"
    ):
        startup_seconds(pod_with({"gpucap.dev/startup-seconds": bad}), TIMINGS)
