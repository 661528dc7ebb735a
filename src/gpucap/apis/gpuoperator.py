"""The NVIDIA GPU Operator's ClusterPolicy (`nvidia.com/v1`) and the device plugin's config file.

What gpucap needs from them: whether a device plugin will run (so nodes advertise
`nvidia.com/gpu` and Karpenter can initialize them), the MIG strategy, and time-slicing: a
node with N physical GPUs advertises `N x replicas` of the resource (or a renamed
`<name>.shared` resource when `renameByDefault` is true). The config file format is the
device plugin's `version: v1` config (NVIDIA/k8s-device-plugin `api/config/v1`), carried in a
ConfigMap whose key is the config name the ClusterPolicy's `devicePlugin.config.default` picks.
Called by `apis/serde.py` (ClusterPolicy) and by the lint rules and the kubelet model, which read
a ConfigMap's configs with `device_plugin_configs`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError

from gpucap.apis.core import ConfigMap, Toleration
from gpucap.apis.errors import format_path, translate
from gpucap.apis.gpu import NVIDIA_GPU
from gpucap.apis.meta import KubeModel, ObjectMeta
from gpucap.apis.yamltext import load_one

__all__ = [
    "DEVICE_PLUGIN_CONFIG_LABEL",
    "ClusterPolicy",
    "DevicePluginConfig",
    "DevicePluginConfigError",
    "choose_config",
    "device_plugin_configs",
]

MIGStrategy = Literal["none", "single", "mixed"]
# The node label that names the device-plugin config a node gets (the GPU Operator and the
# NVIDIA Helm chart read it; a NodePool's template sets it).
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"


class ReplicatedResource(KubeModel):
    name: StrictStr
    replicas: Annotated[StrictInt, Field(ge=1)]
    rename: StrictStr | None = None
    devices: Any = None


class TimeSlicing(KubeModel):
    rename_by_default: StrictBool = False
    fail_requests_greater_than_one: StrictBool = False
    resources: list[ReplicatedResource] = Field(default_factory=list)


class Sharing(KubeModel):
    time_slicing: TimeSlicing | None = None
    mps: TimeSlicing | None = None


class Flags(KubeModel):
    mig_strategy: MIGStrategy = "none"
    fail_on_init_error: StrictBool | None = None


class DevicePluginConfig(KubeModel):
    version: Literal["v1"]
    flags: Flags = Field(default_factory=Flags)
    sharing: Sharing | None = None

    def replicas_for(self, resource: str = NVIDIA_GPU) -> int:
        """How many schedulable units one physical device of `resource` becomes (1 = unshared)."""
        if self.sharing is None:
            return 1
        for policy in (self.sharing.time_slicing, self.sharing.mps):
            if policy is None:
                continue
            for r in policy.resources:
                if r.name == resource:
                    return r.replicas
        return 1

    def advertised_resource(self, resource: str = NVIDIA_GPU) -> str:
        """The resource name shared devices are advertised under (`.shared` when renamed)."""
        if self.sharing is None:
            return resource
        for policy in (self.sharing.time_slicing, self.sharing.mps):
            if policy is None:
                continue
            for r in policy.resources:
                if r.name == resource:
                    if r.rename:
                        return r.rename
                    return f"{resource}.shared" if policy.rename_by_default else resource
        return resource


class DevicePluginConfigError(ValueError):
    """A ConfigMap entry that looks like a device-plugin config but is not a valid one."""

    def __init__(self, key: str, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.key = key
        self.field = field
        self.message = message


def _looks_like_device_plugin_config(doc: object) -> bool:
    return isinstance(doc, dict) and "version" in doc and ("sharing" in doc or "flags" in doc)


# The top-level keys of a device-plugin config, at the start of a line: how an entry that does
# not parse is still recognized as one (the device plugin, and so the GPU Operator, refuses it,
# and the node advertises no GPUs: its `replicas` mean nothing).
_CONFIG_VERSION = re.compile(r"^version\s*:", re.M)
_CONFIG_BODY = re.compile(r"^(sharing|flags)\s*:", re.M)


def _looks_like_broken_config(text: str) -> bool:
    return bool(_CONFIG_VERSION.search(text)) and bool(_CONFIG_BODY.search(text))


def _yaml_problem(err: Exception) -> str:
    """One line: what the parser found and where in the entry."""
    if isinstance(err, yaml.MarkedYAMLError) and err.problem and err.problem_mark is not None:
        mark = err.problem_mark
        return f"{err.problem} (line {mark.line + 1}, column {mark.column + 1})"
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def device_plugin_configs(config_map: ConfigMap) -> dict[str, DevicePluginConfig]:
    """The device-plugin configs a ConfigMap carries, by data key; other keys are skipped.

    Raises DevicePluginConfigError for an entry that is meant as one (it has `version` and
    `sharing` or `flags`) but does not validate, or is not valid YAML at all.
    """
    configs: dict[str, DevicePluginConfig] = {}
    for key in sorted(config_map.data):
        text = config_map.data[key]
        try:
            # Bounded like every YAML gpucap reads (an alias bomb in a ConfigMap too).
            doc = load_one(text, f"data.{key}")
        except (yaml.YAMLError, ValueError) as err:
            if _looks_like_broken_config(text):
                problem = _yaml_problem(err)
                raise DevicePluginConfigError(key, "", f"not valid YAML: {problem}") from err
            continue
        if not _looks_like_device_plugin_config(doc):
            continue
        try:
            configs[key] = DevicePluginConfig.model_validate(doc)
        except ValidationError as err:
            path, message = translate(err.errors(include_url=False)[0], DevicePluginConfig)
            raise DevicePluginConfigError(key, format_path(path), message) from err
    return configs


class DevicePluginConfigRef(KubeModel):
    name: StrictStr | None = None
    default: StrictStr | None = None


class DevicePluginSpec(KubeModel):
    enabled: StrictBool = True
    config: DevicePluginConfigRef | None = None


class ComponentSpec(KubeModel):
    enabled: StrictBool = True


class MIGSpec(KubeModel):
    strategy: MIGStrategy = "single"


class DaemonsetsSpec(KubeModel):
    tolerations: list[Toleration] = Field(default_factory=list)
    priority_class_name: StrictStr | None = None


class ClusterPolicySpec(KubeModel):
    device_plugin: DevicePluginSpec = Field(default_factory=DevicePluginSpec)
    driver: ComponentSpec = Field(default_factory=ComponentSpec)
    toolkit: ComponentSpec = Field(default_factory=ComponentSpec)
    mig: MIGSpec = Field(default_factory=MIGSpec)
    mig_manager: ComponentSpec = Field(default_factory=ComponentSpec)
    daemonsets: DaemonsetsSpec = Field(default_factory=DaemonsetsSpec)


class ClusterPolicy(KubeModel):
    api_version: Literal["nvidia.com/v1"] = "nvidia.com/v1"
    kind: Literal["ClusterPolicy"] = "ClusterPolicy"
    metadata: ObjectMeta
    spec: ClusterPolicySpec = Field(default_factory=ClusterPolicySpec)


def choose_config(
    configs: Sequence[tuple[str, str]], *, label: str | None, policy: ClusterPolicy | None
) -> tuple[int, str] | None:
    """Which device-plugin config a node gets: the index into `configs` ((ConfigMap name, key)
    of every config in the input) and how it was chosen ("label": the node's
    DEVICE_PLUGIN_CONFIG_LABEL; "policy-default": the ClusterPolicy's
    `devicePlugin.config.default`; "only": the only config in the input), or None (the plugin's
    built-in default: no sharing). With a ClusterPolicy running the plugin, only its
    `devicePlugin.config` ConfigMap counts. Called by lint (SHR rules) and the kubelet model."""
    if policy is not None:
        ref = policy.spec.device_plugin.config
        if ref is None or not ref.name:
            return None
        key = label or ref.default
        if not key:
            return None
        how = "label" if label else "policy-default"
        for i, (name, k) in enumerate(configs):
            if name == ref.name and k == key:
                return i, how
        return None
    if label:
        for i, (_, k) in enumerate(configs):
            if k == label:
                return i, "label"
    if len(configs) == 1:
        return 0, "only"
    return None
