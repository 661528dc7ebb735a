"""gpucap on the manifests people actually have: public files from 11 repositories, unchanged.

Every file under this directory is byte-identical to a file of a public repository at a pinned
commit (`PROVENANCE.yaml` says which, with the license and what the file is); the one exception,
an example taken from a docs page, says so in `extracted:` and in its name. Files an upstream
example applies together form a *group* (`group:` in PROVENANCE.yaml) and are run together, in
sorted order, as `kubectl apply -f <dir>` would read them.

The commands of this module run as users run them, through the `gpucap` console-script entry
point in a subprocess, from an empty working directory (so no `.gpucap.toml` or `pyproject.toml`
of this repository configures lint) and with a minimal environment (so no variable of the
developer's shell fills a placeholder). All the command lines the tests need are declared at
import time and run once, in parallel batches (one interpreter per batch), by the `ran` fixture;
each test then reads its results. A few are also run as separate `python -m gpucap` processes and
must print exactly the same. The other modules here (test_lint, test_validate, test_placeholders,
test_workloads, test_plan) run in process (CliRunner or the loader), mostly because they add a
config file, a cluster or a pod written by the test next to the real files.

Each test states what gpucap must say about its files. Where gpucap said something else before
issue 8 fixed it, a "Before issue 8:" comment keeps what it said, so the test shows what changed.

The classes of issue 8 and the tests on real files that cover them (`test_the_class_table_names_
existing_tests` checks every name below; the unit tests on minimal inputs live with the code's
other tests):

| class | tests (module: test) |
| --- | --- |
| device plugin outside the input | test_realworld: test_data_on_eks_gpu_pool_without_a_device_plugin_manifest_lints_without_errors, test_data_on_eks_gpu_pool_with_nvidias_device_plugin_has_no_gpu001, test_gpu_operator_sample_on_eks_accelerated_ami_is_an_error_for_driver_and_toolkit; test_lint: test_karpenter_blueprints_gpu_pool_lints_clean_with_the_plugin_installed_by_helm, test_declaring_the_helm_installed_plugin_silences_gpu001, test_the_static_nvidia_daemonset_reaches_the_blueprints_gpu_pool |
| AMIs with their own plugin; Bottlerocket userData time-slicing | test_realworld: test_gpu_slices_bottlerocket_brings_the_device_plugin_so_no_gpu001_error, test_automode_nodepool_gets_no_gpu001_error, test_gpu_slices_userdata_time_slicing_counts_for_the_gpu_limit; test_lint: test_bottlerocket_time_slicing_blueprint_brings_its_plugin_and_counts_its_replicas, test_auto_mode_gpu_blueprint_brings_its_plugin |
| CPU pools are not GPU pools (NP010) | test_realworld: test_large_instances_pool_is_not_linted_as_a_gpu_pool, test_large_instances_pool_puts_a_cpu_pod_on_a_non_gpu_type; test_lint: test_karpenter_large_instances_example_is_not_a_gpu_pool, test_karpenter_general_purpose_example_says_nothing_about_gpus |
| GPUs from a NodeOverlay (g6f) | test_lint: test_karpenter_docs_g6f_overlay_pool_gets_the_gpu_rules |
| static NodePools, lint and plan | test_realworld: test_static_nodepool_gets_no_consolidation_warning_nor_gpu_limit_request, test_static_nodepool_replicas_show_as_capacity; test_lint: test_static_gpu_pool_blueprint_gets_no_consolidation_or_gpu_limit_warning; test_plan: test_static_nodepool_nodes_take_pods, test_a_static_nodepool_keeps_its_nodes_without_any_pod |
| `--help` of every command | not file-based: tests/cli/test_help.py |
| strict field validation | test_realworld: test_gpu_nvidia_example_misspelled_security_context_field_is_rejected; test_validate: test_karpenters_gpu_workload_example_is_rejected_for_its_misspelt_privilege_escalation, test_karpenters_gpu_workload_example_fails_validate_with_exit_2_and_one_line |
| v1alpha5 / v1beta1 rejected | test_realworld: test_v1alpha5_provisioner_and_awsnodetemplate_are_rejected_with_their_replacements, test_v1alpha5_provisioner_is_a_lint_error, test_v1beta1_nodepool_and_ec2nodeclass_are_rejected; test_validate: test_a_v1alpha5_provisioner_and_its_aws_node_template_are_errors_naming_their_v1_replacements, test_v1beta1_nodepool_and_ec2nodeclass_are_errors_naming_their_v1_versions |
| placeholder warnings grouped | test_realworld: test_data_on_eks_placeholder_warnings_are_one_line_per_variable; test_placeholders: test_data_on_eks_nodeclasses_give_one_warning_per_variable_and_the_command, test_static_gpu_nodeclass_bare_dollar_placeholders_are_warned_about, test_lint_shows_the_grouped_placeholder_findings |
| render `--only` and runtime variables | test_realworld: test_rayserve_vllm_render_only_fills_the_token_and_keeps_ld_library_path, test_data_on_eks_render_fills_the_cluster_and_leaves_userdata_variables, test_lws_vllm_render_needs_the_token_of_its_container_env_value; test_placeholders: test_ray_service_render_only_fills_the_token_and_keeps_ld_library_path, test_ray_service_render_without_only_fills_ld_library_path_of_env_values_as_envsubst, test_ebs_resize_user_data_script_is_no_placeholder_and_renders_byte_for_byte |
| plan passes (subtractMax) | test_realworld: test_od_spot_split_one_pass_leaves_spot_pods_pending_for_the_limit, test_od_spot_split_later_passes_place_the_pods_the_limit_held_back |
| no NodePool at all | test_realworld: test_a_gpu_pod_without_any_nodepool_says_no_nodepools_found, test_rayserve_vllm_head_and_worker_wait_for_a_nodepool; test_plan: test_no_nodepools_found |
| same-name object in two files | test_realworld: test_two_files_defining_ec2nodeclass_default_keep_the_later_one |
| KubeRay / LeaderWorkerSet / JobSet expansion | test_realworld: test_gpu_world_workloads_expand_into_their_pods, test_kuberay_rayjob_pods_are_planned, test_data_on_eks_rayservice_plans_its_gpu_worker_on_the_gpu_pool; test_workloads: test_kuberay_stable_diffusion_rayservice_packs_head_and_gpu_worker_on_one_node, test_lws_vllm_405b_plans_two_groups_of_two_8_gpu_nodes, test_jobset_pytorch_resnet_plans_four_worker_pods, test_jobset_exclusive_placement_on_a_gke_label_stays_pending_on_eks |
| Windows price note | test_realworld: test_windows_plan_notes_that_the_price_is_the_linux_rate; test_plan: test_windows_nodes_are_priced_at_the_linux_rate_with_a_note |
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import gpucap
from tests.realworld.corpus import PROVENANCE, ROOT, group


@dataclass(frozen=True)
class Invocation:
    """One `gpucap` command line: the arguments before the files, and the files."""

    args: tuple[str, ...]
    files: tuple[str, ...]


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def warnings(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("warning:")]

    def errors(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]


INVOCATIONS: list[Invocation] = []
GROUPS_USED: set[str] = set()


def _declare(args: tuple[str, ...], files: tuple[str, ...]) -> Invocation:
    inv = Invocation(args, files)
    if inv not in INVOCATIONS:
        INVOCATIONS.append(inv)
    GROUPS_USED.update(f["group"] for f in PROVENANCE if f["file"] in files)
    return inv


def validate(files: tuple[str, ...]) -> Invocation:
    return _declare(("validate",), files)


def lint(files: tuple[str, ...]) -> Invocation:
    return _declare(("lint", "-o", "json"), files)


def plan(files: tuple[str, ...]) -> Invocation:
    return _declare(("plan", "-o", "json"), files)


def plan_passes(files: tuple[str, ...], passes: int) -> Invocation:
    return _declare(("plan", "-o", "json", "--passes", str(passes)), files)


def render(files: tuple[str, ...], *options: str) -> Invocation:
    return _declare(("render", *options), files)


def _env(cwd: Path) -> dict[str, str]:
    # The subprocess imports the gpucap this test imported (a checkout run with PYTHONPATH=src
    # or an installed wheel), whatever its working directory.
    package_root = str(Path(gpucap.__file__).resolve().parents[1])
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), "PYTHONPATH": package_root}


def _argv(inv: Invocation) -> list[str]:
    return [*inv.args, *(str(ROOT / f) for f in inv.files)]


def _result(code: int, stdout: str, stderr: str) -> Result:
    prefix = f"{ROOT}{os.sep}"  # show paths as PROVENANCE names them
    return Result(code, stdout.replace(prefix, ""), stderr.replace(prefix, ""))


def run_cli(inv: Invocation, cwd: Path) -> Result:
    """`python -m gpucap ARGS FILES` in its own interpreter, exactly as a user runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "gpucap", *_argv(inv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_env(cwd),
        check=False,
        timeout=120,
    )
    return _result(proc.returncode, proc.stdout, proc.stderr)


# Many command lines through the console-script entry point (`gpucap.cli.main:main`) in one
# interpreter: starting Python and importing gpucap costs about as much as a lint, so a fresh
# interpreter per command line would double the time. `test_batched_runs_match_the_real_command`
# checks that a batch prints exactly what separate `python -m gpucap` runs print.
_BATCH = """
import contextlib, io, json, sys
from gpucap.cli.main import main

results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["gpucap", *argv]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    results.append([code, out.getvalue(), err.getvalue()])
json.dump(results, sys.__stdout__)
"""


def run_batch(invocations: list[Invocation], cwd: Path) -> list[Result]:
    proc = subprocess.run(
        [sys.executable, "-c", _BATCH],
        input=json.dumps([_argv(i) for i in invocations]),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_env(cwd),
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return [_result(*r) for r in json.loads(proc.stdout)]


class Ran:
    """The results of every declared gpucap invocation, run up front in parallel batches."""

    def __init__(self, cwd: Path, invocations: list[Invocation]) -> None:
        self.cwd = cwd
        workers = max(2, os.cpu_count() or 2)
        batches = [invocations[i::workers] for i in range(workers) if invocations[i::workers]]
        with ThreadPoolExecutor(max_workers=len(batches)) as pool:
            done = pool.map(lambda batch: run_batch(batch, cwd), batches)
        self.results: dict[Invocation, Result] = {}
        for batch, results in zip(batches, done, strict=True):
            self.results.update(zip(batch, results, strict=True))

    def __getitem__(self, inv: Invocation) -> Result:
        # Every invocation is declared at import (the block at the end of this module), so that
        # they all run up front, in parallel.
        assert inv in self.results, f"declare {inv} at the end of the module"
        return self.results[inv]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    return Ran(tmp_path_factory.mktemp("realworld-cwd"), INVOCATIONS)


def findings(result: Result) -> list[dict[str, Any]]:
    assert result.code in (0, 1), result.stderr
    found: list[dict[str, Any]] = result.json()["findings"]
    return found


def rules(result: Result, severity: str | None = None) -> list[str]:
    return sorted(f["rule"] for f in findings(result) if severity in (None, f["severity"]))


def pending(result: Result) -> dict[str, str]:
    assert result.code == 0, result.stderr
    return {u["pod"]: u["reason"] for u in result.json()["unschedulable"]}


# --- the groups -------------------------------------------------------------------------------

GPU_SLICES = group("karpenter-blueprints/gpu-slices")
OVERLAY_TARGETED = group("karpenter-blueprints/overlay-targeted")
STATIC = group("karpenter-blueprints/static")
OD_SPOT_SPLIT = group("karpenter-blueprints/od-spot-split")
AUTOMODE = group("karpenter-blueprints/automode-gpu")
KP = "aws__karpenter-provider-aws/examples"
GPU_NVIDIA = group("karpenter-provider-aws/gpu-nvidia-workload")
NEURON = group("karpenter-provider-aws/neuron-workload")
LARGE_INFLATE = group("karpenter-provider-aws/large-instances+inflate")
WINDOWS_INFLATE = (
    *group("karpenter-provider-aws/windows-2022+inflate"),
    f"{KP}/workloads/inflate.yaml",
)
SAME_NAME = group("karpenter-provider-aws/same-name-default")
BOTTLEROCKET = group("karpenter-provider-aws/bottlerocket")
V1ALPHA5 = group("karpenter-provider-aws/v1alpha5")
V1BETA1 = group("karpenter-provider-aws/v1beta1")
DOEKS = group("data-on-eks/karpenter+rayservice")
DOEKS_POOLS = tuple(f for f in DOEKS if "/manifests/karpenter/" in f)
DOEKS_NODECLASSES = tuple(f for f in DOEKS if f.endswith("/ec2nodeclass.yaml"))
RAYSERVE_VLLM = group("ai-on-eks/rayserve-vllm")
NVIDIA_SMI_POD = group("ai-on-eks/nvidia-smi-pod")
VERIFY_GPU = group("ai-on-eks/verify-gpu")
LWS_TRN1 = group("ai-on-eks/lws-trn1")
DEVICE_PLUGIN = group("nvidia/device-plugin")
DEVICE_PLUGIN_CPUMANAGER = group("nvidia/device-plugin-cpumanager")
DEVICE_PLUGIN_PRIVILEGED = group("nvidia/device-plugin-privileged")
GPU_OPERATOR = group("nvidia/gpu-operator")
WORKSHOP = group("eks-workshop/karpenter")
WORKSHOP_NEURON = group("eks-workshop/chatbot-neuron")
BLUEPRINTS = group("eks-blueprints/karpenter")
MULTI_NODE_VLLM = group("eks-blueprints/multi-node-vllm")
CONTAINER_CACHE = group("eks-blueprints/ml-container-cache")
KUBERAY_LLM = group("kuberay/llm-serve")
KUBERAY_BATCH = group("kuberay/batch-inference")
LWS_VLLM = group("lws/vllm-gpu")

DOEKS_RENDER = ("--set", "CLUSTER_NAME=doeks", "--set", "KARPENTER_NODE_IAM_ROLE_NAME=node-role")
RAYSERVE_RENDER = ("--only", "HUGGING_FACE_HUB_TOKEN", "--set", "HUGGING_FACE_HUB_TOKEN=aGY=")


# --- provenance -------------------------------------------------------------------------------


def test_provenance_lists_exactly_the_files_present_with_pinned_commits() -> None:
    present = {
        p.relative_to(ROOT).as_posix()
        for p in ROOT.rglob("*")
        if p.is_file() and p.parent != ROOT and "__pycache__" not in p.parts
    }
    listed = [f["file"] for f in PROVENANCE]
    assert len(listed) == len(set(listed)), "a file is listed twice"
    assert set(listed) == present
    keys = {"file", "repo", "path", "commit", "url", "license", "group", "what"}
    for f in PROVENANCE:
        assert set(f) in (keys, keys | {"extracted"}), f
        assert re.fullmatch(r"[0-9a-f]{40}", f["commit"]), f
        upstream = f"{f['repo'].replace('/', '__')}/{f['path']}"
        if "extracted" in f:
            # Not a file upstream: taken from the page at `path`; its name says so.
            assert f["extracted"].strip(), f
            assert re.fullmatch(re.escape(upstream) + r"\.[a-z0-9-]+\.yaml", f["file"]), f
        else:
            assert f["file"] == upstream, f
        assert f["url"] == f"https://github.com/{f['repo']}/blob/{f['commit']}/{f['path']}", f
        assert f["license"] in {"Apache-2.0", "MIT-0"}, f
        assert f["what"].strip(), f


def test_the_corpus_spans_at_least_ten_repositories() -> None:
    assert len({f["repo"] for f in PROVENANCE}) >= 10


def test_the_class_table_names_existing_tests() -> None:
    table = [line for line in (__doc__ or "").splitlines() if line.startswith("| ")][2:]
    assert len(table) == 15  # the classes of issue 8
    for row in table:
        _, cell = row.removeprefix("| ").removesuffix(" |").split(" | ")
        for part in cell.split("; "):
            module, names = part.split(": ", 1)
            if module == "not file-based":
                assert (ROOT.parents[1] / names).is_file(), names
                continue
            source = (ROOT / f"{module}.py").read_text()
            for name in names.split(", "):
                assert f"def {name}(" in source, (module, name)


def test_every_group_is_run_by_some_test() -> None:
    # Groups run through the batched runner are in GROUPS_USED; the other test modules of this
    # directory run theirs in process (CliRunner, with files they write next to the real ones)
    # and name each file they read as PROVENANCE names it.
    others = "\n".join(
        p.read_text() for p in ROOT.glob("test_*.py") if p.name != Path(__file__).name
    )
    named = {f["group"] for f in PROVENANCE if f'"{f["file"]}"' in others}
    assert {f["group"] for f in PROVENANCE} <= GROUPS_USED | named


def test_no_command_prints_a_traceback_and_every_exit_status_is_documented(
    ran: Ran,
) -> None:
    for inv, result in ran.results.items():
        assert "Traceback" not in result.stderr, inv
        assert result.code in (0, 1, 2), (inv, result.stderr)


@pytest.mark.parametrize(
    "inv",
    [
        pytest.param(lint(GPU_SLICES), id="lint"),
        pytest.param(plan(DOEKS), id="plan"),
        pytest.param(validate(V1BETA1), id="validate-rejected"),
        pytest.param(render(LWS_VLLM), id="render"),
    ],
)
def test_batched_runs_match_the_real_command(ran: Ran, inv: Invocation, tmp_path: Path) -> None:
    assert run_cli(inv, tmp_path) == ran[inv]


# --- karpenter-blueprints: node-overlay GPU slices (Bottlerocket, userData time-slicing) -------


def test_gpu_slices_validate_all_seven_objects(ran: Ran) -> None:
    result = ran[validate(GPU_SLICES)]
    assert result.code == 0
    assert result.stdout.splitlines()[-1] == "7 objects valid, 0 warning(s)"


def test_gpu_slices_overlays_put_the_four_one_gpu_pods_on_one_node(
    ran: Ran,
) -> None:
    result = ran[plan(GPU_SLICES)]
    assert pending(result) == {}
    [claim] = result.json()["nodeClaims"]
    assert claim["nodePool"] == "gpu-slices"
    assert claim["labels"]["karpenter.k8s.aws/instance-gpu-count"] == "1"
    assert claim["pods"] == [f"default/workload-gpu-slices-{i}" for i in range(4)]
    assert any("feature gate" in n for n in result.json()["notes"])


def test_gpu_slices_bottlerocket_brings_the_device_plugin_so_no_gpu001_error(
    ran: Ran,
) -> None:
    # Before issue 8: exit 1, GPU001 error on NodePool/gpu-slices ("no NVIDIA device plugin ... in the input").
    result = ran[lint(GPU_SLICES)]
    assert "GPU001" not in rules(result, "error")
    assert result.code == 0


def test_gpu_slices_userdata_time_slicing_counts_for_the_gpu_limit(
    ran: Ran,
) -> None:
    # Before issue 8: no TS finding; the 4 replicas set in the EC2NodeClass userData TOML are not seen.
    # Required: TS002 (limit nvidia.com/gpu 40 counts advertised GPUs, 4 per physical GPU);
    # not TS001, since NodeOverlays tell Karpenter the capacity.
    found = rules(ran[lint(GPU_SLICES)])
    assert "TS002" in found
    assert "TS001" not in found


# --- karpenter-blueprints: NodeOverlays targeting one pool by name ------------------------------


def test_targeted_overlays_make_a_generation_8_type_the_cheapest(
    ran: Ran,
) -> None:
    result = ran[plan(OVERLAY_TARGETED)]
    assert pending(result) == {}
    [claim] = result.json()["nodeClaims"]
    assert claim["nodePool"] == "team-alpha"
    assert claim["pods"] == ["default/workload-team-alpha-0"]
    # generations 5, 6, 7 cost 45/30/15% more; without the overlays c6a.large (gen 6) wins
    assert claim["labels"]["karpenter.k8s.aws/instance-generation"] == "8"
    assert any("EC2NodeClass default is not in the input" in n for n in result.json()["notes"])


def test_targeted_overlays_lint_clean(ran: Ran) -> None:
    result = ran[lint(OVERLAY_TARGETED)]
    assert result.code == 0
    assert findings(result) == []


# --- karpenter-blueprints: static GPU NodePool --------------------------------------------------


def test_static_nodepool_validates(ran: Ran) -> None:
    result = ran[validate(STATIC)]
    assert result.code == 0
    assert (
        "NodePool/gpu-static: requirements [capacity-type In spot,on-demand instance-type In g6e.8xlarge]"
        in result.stdout
    )
    assert result.stdout.splitlines()[-1] == "2 objects valid, 3 warning(s)"


def test_static_nodepool_gets_no_consolidation_warning_nor_gpu_limit_request(
    ran: Ran,
) -> None:
    # Before issue 8: DIS001 (consolidation) and NP003 ("limits only nodes, not nvidia.com/gpu") warnings;
    # Karpenter does not consolidate static pools and the CRD forbids a resource limit there.
    found = rules(ran[lint(STATIC)])
    assert "DIS001" not in found
    assert "NP003" not in found


def test_static_nodepool_replicas_show_as_capacity(ran: Ran) -> None:
    # Before issue 8: "No new nodes" and nothing about the one g6e.8xlarge the static controller keeps.
    doc = ran[plan(STATIC)].json()
    assert "g6e.8xlarge" in json.dumps(doc["nodeClaims"] + doc["existingNodes"])


# --- karpenter-blueprints: on-demand/spot split (NodePool limits over several passes) ----------


EXCEED_SPOT_LIMIT = 'nodepool "node-spot": all available instance types exceed limits for nodepool'


def test_od_spot_split_one_pass_leaves_spot_pods_pending_for_the_limit(ran: Ran) -> None:
    # Karpenter reserves the largest option of each new NodeClaim (subtractMax) against
    # node-spot's memory limit of 500Gi: its first spot NodeClaim may still become an r6a.16xlarge
    # (about 474Gi once the VM memory overhead is taken off), which leaves the later ones only
    # small types, then none, until the claims launch as the small type they turn out to be.
    result = ran[plan_passes(OD_SPOT_SPLIT, 1)]
    waiting = pending(result)
    assert waiting
    assert all(reason.startswith(EXCEED_SPOT_LIMIT) for reason in waiting.values()), waiting
    assert any(n.startswith("stopped after 1 pass") for n in result.json()["notes"])


def test_od_spot_split_later_passes_place_the_pods_the_limit_held_back(ran: Ran) -> None:
    # Karpenter's next provisioning loops count the launched NodeClaims at the instance type
    # they became, which frees the limit for the pods left pending.
    single = ran[plan_passes(OD_SPOT_SPLIT, 1)]
    doc = ran[plan(OD_SPOT_SPLIT)].json()
    assert pending(ran[plan(OD_SPOT_SPLIT)]) == {}
    assert doc["summary"]["pods"] == 10
    assert [c for c in doc["nodeClaims"] if c["pass"] == 1] == single.json()["nodeClaims"]
    later = [c for c in doc["nodeClaims"] if c["pass"] > 1]
    assert sorted(p for c in later for p in c["pods"]) == sorted(pending(single))
    assert {c["nodePool"] for c in later} >= {"node-spot"}
    assert doc["summary"]["passes"] == max(c["pass"] for c in doc["nodeClaims"]) >= 2


# --- karpenter-blueprints: EKS Auto Mode GPU NodePool -------------------------------------------


def test_automode_nodepool_is_valid_and_its_node_class_is_not_called_wrong(
    ran: Ran,
) -> None:
    # Before: a warning that eks.amazonaws.com/NodeClass "would never become Ready", which is
    # wrong on the Auto Mode cluster this blueprint is for.
    result = ran[validate(AUTOMODE)]
    assert result.code == 0
    assert result.warnings() == ["warning: ignored kinds gpucap does not use: NodeClass"]


def test_automode_nodepool_gets_no_gpu001_error(ran: Ran) -> None:
    # Before issue 8: exit 1, GPU001 error; Auto Mode nodes run the NVIDIA device plugin themselves.
    result = ran[lint(AUTOMODE)]
    assert "GPU001" not in rules(result, "error")
    assert result.code == 0


# --- karpenter-provider-aws examples ------------------------------------------------------------


def test_gpu_nvidia_example_misspelled_security_context_field_is_rejected(
    ran: Ran,
) -> None:
    # Before issue 8: exit 0, "1 object valid"; kubectl apply rejects the unknown field.
    result = ran[validate(GPU_NVIDIA)]
    assert result.code == 2
    [line] = result.errors()
    assert re.search(
        r"gpu-nvidia\.yaml\[0\] Deployment/\S*gpu-nvidia: "
        r"spec\.template\.spec\.containers\[0\]\.securityContext\.allowPrivilegedEscalation: unknown field",
        line,
    ), line
    assert "allowPrivilegeEscalation" in line  # the field it meant


def test_neuron_example_is_valid_and_plans_nothing_at_zero_replicas(
    ran: Ran,
) -> None:
    assert ran[validate(NEURON)].stdout.startswith(
        f"{NEURON[0]}[0] Deployment/default/neuron: 0 pods; per pod requests aws.amazon.com/neuron=1"
    )
    assert findings(ran[lint(NEURON)]) == []
    assert ran[plan(NEURON)].json()["summary"]["nodeClaims"] == 0


def test_large_instances_pool_puts_a_cpu_pod_on_a_non_gpu_type(
    ran: Ran,
) -> None:
    # Karpenter's exotic-instance filter: GPU types only when nothing else fits.
    result = ran[plan(LARGE_INFLATE)]
    assert pending(result) == {}
    [claim] = result.json()["nodeClaims"]
    assert claim["nodePool"] == "large-instances"
    assert claim["pods"] == ["default/inflate-0"]
    assert not any("gpu" in k for k in claim["labels"])


def test_large_instances_pool_is_not_linted_as_a_gpu_pool(ran: Ran) -> None:
    # Before issue 8: exit 1; GPU001 error and DIS001, DIS002, NP003, NP001, STG001 warnings written for a
    # "GPU NodePool". Required: at most one info finding that the pool can launch GPU types.
    result = ran[lint(LARGE_INFLATE)]
    assert result.code == 0
    serious = [f for f in findings(result) if f["severity"] != "info"]
    assert {f["rule"] for f in serious} <= {"AMI001"}
    about_gpus = [f for f in findings(result) if "GPU" in f["message"] and f["rule"] != "AMI001"]
    assert len(about_gpus) <= 1
    assert all(f["severity"] == "info" for f in about_gpus)


def test_windows_pool_launches_a_windows_node_for_an_unselective_pod(
    ran: Ran,
) -> None:
    result = ran[plan(WINDOWS_INFLATE)]
    [claim] = result.json()["nodeClaims"]
    assert claim["nodePool"] == "windows2022"
    assert claim["labels"]["kubernetes.io/os"] == "windows"
    assert ran[lint(WINDOWS_INFLATE)].code == 0


def test_windows_plan_notes_that_the_price_is_the_linux_rate(
    ran: Ran,
) -> None:
    # Before issue 8: notes are empty; the $0.0765/hour shown is c6a.large's Linux on-demand price.
    notes = ran[plan(WINDOWS_INFLATE)].json()["notes"]
    assert any("windows" in n.lower() and "linux" in n.lower() for n in notes), notes


def test_two_files_defining_ec2nodeclass_default_keep_the_later_one(
    ran: Ran,
) -> None:
    # Before issue 8: both EC2NodeClass default are kept and AMI001 is reported on each file.
    amis = [f for f in findings(ran[lint(SAME_NAME)]) if f["rule"] == "AMI001"]
    assert [f["file"] for f in amis] == [f"{KP}/v1/spot.yaml"]


def test_bottlerocket_example_lints_with_only_the_latest_alias_warning(
    ran: Ran,
) -> None:
    result = ran[lint(BOTTLEROCKET)]
    assert result.code == 0
    assert rules(result, "warning") == ["AMI001"]
    assert set(rules(result)) <= {"AMI001", "SCHEMA002"}


def test_v1alpha5_provisioner_and_awsnodetemplate_are_rejected_with_their_replacements(
    ran: Ran,
) -> None:
    # Before issue 8: exit 0, "0 objects valid", "ignored kinds gpucap does not use: AWSNodeTemplate, Provisioner".
    result = ran[validate(V1ALPHA5)]
    assert result.code == 2
    errors = result.errors()
    assert len(errors) == 2, errors
    assert any(
        "Provisioner" in e and "karpenter.sh/v1alpha5" in e and "NodePool" in e for e in errors
    )
    assert any("AWSNodeTemplate" in e and "EC2NodeClass" in e for e in errors)


def test_v1alpha5_provisioner_is_a_lint_error(ran: Ran) -> None:
    # Before issue 8: exit 0 with one SCHEMA003 info.
    result = ran[lint(V1ALPHA5)]
    assert result.code == 1
    assert rules(result, "error") == ["SCHEMA001", "SCHEMA001"]


def test_v1beta1_nodepool_and_ec2nodeclass_are_rejected(ran: Ran) -> None:
    result = ran[validate(V1BETA1)]
    assert result.code == 2
    assert result.errors() == [
        f"error: {V1BETA1[0]}[0] NodePool/general-purpose: apiVersion: NodePool karpenter.sh/v1beta1 is not served by Karpenter v1 (v1.1 removed the v1beta1 APIs): write it as NodePool karpenter.sh/v1; see Karpenter's v1 migration guide https://karpenter.sh/v1.0/upgrading/v1-migration/",
        f"error: {V1BETA1[0]}[1] EC2NodeClass/default: apiVersion: EC2NodeClass karpenter.k8s.aws/v1beta1 is not served by Karpenter v1 (v1.1 removed the v1beta1 APIs): write it as EC2NodeClass karpenter.k8s.aws/v1; see Karpenter's v1 migration guide https://karpenter.sh/v1.0/upgrading/v1-migration/",
    ]
    assert rules(ran[lint(V1BETA1)], "error") == ["SCHEMA001", "SCHEMA001"]
    assert ran[plan(V1BETA1)].code == 2


# --- data-on-eks: the shared Karpenter manifests and a RayService -------------------------------


def test_data_on_eks_pools_validate(ran: Ran) -> None:
    result = ran[validate(DOEKS)]
    assert result.code == 0
    assert (
        "nodepool-gpu-g6.yaml[0] NodePool/gpu: requirements [capacity-type In on-demand,spot arch In amd64 instance-category In g instance-family In g5,g6,g6e,g7e"
        in result.stdout
    )


def test_data_on_eks_placeholder_warnings_are_one_line_per_variable(
    ran: Ran,
) -> None:
    # Before issue 8: 25 placeholder warnings (one per field) before anything else.
    warnings = ran[validate(DOEKS_NODECLASSES)].warnings()
    for var in ("CLUSTER_NAME", "KARPENTER_NODE_IAM_ROLE_NAME"):
        assert len([w for w in warnings if "${" + var + "}" in w]) == 1, warnings
    assert len(warnings) < 10
    assert any("gpucap render" in w for w in warnings)


def test_data_on_eks_gpu_pool_without_a_device_plugin_manifest_lints_without_errors(
    ran: Ran,
) -> None:
    # Before issue 8: exit 1 on GPU001; data-on-eks installs the device plugin with Helm (terraform).
    result = ran[lint(DOEKS)]
    assert [f for f in findings(result) if f["rule"] == "GPU001" and f["severity"] != "info"] == []
    assert result.code == 0
    assert "NP001" in rules(result, "warning")  # the GPU pool has no taint: still said


def test_data_on_eks_gpu_pool_with_nvidias_device_plugin_has_no_gpu001(
    ran: Ran,
) -> None:
    result = ran[lint((*DOEKS_POOLS, *DEVICE_PLUGIN))]
    assert "GPU001" not in rules(result)
    assert result.code == 0


def test_gpu_operator_sample_on_eks_accelerated_ami_is_an_error_for_driver_and_toolkit(
    ran: Ran,
) -> None:
    result = ran[lint((*DOEKS_POOLS, *GPU_OPERATOR))]
    assert result.code == 1
    gpu004 = [f for f in findings(result) if f["rule"] == "GPU004"]
    assert sorted(f["path"].split(".")[1] for f in gpu004) == ["driver", "toolkit"]
    assert all(f["severity"] == "error" for f in gpu004)


def test_data_on_eks_rayservice_plans_its_gpu_worker_on_the_gpu_pool(
    ran: Ran,
) -> None:
    # Before issue 8: "ignored kinds gpucap does not use: RayService" and "No new nodes".
    doc = ran[plan(DOEKS)].json()
    assert doc["unschedulable"] == []
    assert doc["summary"]["pods"] == 2  # the head and one worker
    assert any(
        c["nodePool"] == "gpu" and c["launch"]["instanceType"] in {"g6e.2xlarge", "g6e.4xlarge"}
        for c in doc["nodeClaims"]
    )


def test_data_on_eks_render_fills_the_cluster_and_leaves_userdata_variables(
    ran: Ran,
) -> None:
    # Before issue 8: exit 2, "missing variable(s): AVAILABILITY_ZONE, CORES, DEV, ..." from userData scripts.
    result = ran[render(DOEKS_NODECLASSES, *DOEKS_RENDER)]
    assert result.code == 0, result.stderr
    assert 'role: "node-role"' in result.stdout
    assert 'Name: "doeks-node"' in result.stdout
    assert "--volume-ids $VOLUME_ID" in result.stdout  # bash, left as written
    assert len(result.warnings()) == 1


# --- ai-on-eks ----------------------------------------------------------------------------------


def test_rayserve_vllm_render_only_fills_the_token_and_keeps_ld_library_path(
    ran: Ran,
) -> None:
    # Before issue 8: "No such option: --only" (exit 2); without it, "missing variable(s): LD_LIBRARY_PATH".
    source = (ROOT / RAYSERVE_VLLM[0]).read_text()
    result = ran[render(RAYSERVE_VLLM, *RAYSERVE_RENDER)]
    assert result.code == 0, result.stderr
    assert "hf-token: aGY=" in result.stdout
    assert result.stdout.count("$LD_LIBRARY_PATH") == source.count("$LD_LIBRARY_PATH") == 3


def test_rayserve_vllm_head_and_worker_wait_for_a_nodepool(ran: Ran) -> None:
    # Before issue 8: RayService ignored, 0 pods.
    waiting = pending(ran[plan(RAYSERVE_VLLM)])
    assert len(waiting) == 2
    assert set(waiting.values()) == {"no dynamic nodepools found"}


@pytest.mark.parametrize(
    ("files", "pod"),
    [
        (NVIDIA_SMI_POD, "nvidia-smi-ns/nvidia-smi-al2-karpenter"),
        (VERIFY_GPU, "jupyterhub/verify-gpu-0"),
        (CONTAINER_CACHE, "default/cached"),
    ],
    ids=["ai-on-eks nvidia-smi pod", "ai-on-eks verify-gpu", "eks-blueprints pod-cached"],
)
def test_a_gpu_pod_without_any_nodepool_says_no_nodepools_found(
    ran: Ran, files: tuple[str, ...], pod: str
) -> None:
    # Before issue 8: "nodepool requirements filtered out all available instance types".
    assert pending(ran[plan(files)]) == {pod: "no dynamic nodepools found"}


def test_gpu_pods_without_any_nodepool_are_valid_and_pending(
    ran: Ran,
) -> None:
    for files, pod in (
        (NVIDIA_SMI_POD, "nvidia-smi-ns/nvidia-smi-al2-karpenter"),
        (VERIFY_GPU, "jupyterhub/verify-gpu-0"),
        (CONTAINER_CACHE, "default/cached"),
    ):
        assert ran[validate(files)].code == 0
        assert findings(ran[lint(files)]) == [] or rules(ran[lint(files)]) == ["SCHEMA003"]
        assert list(pending(ran[plan(files)])) == [pod]


# --- LeaderWorkerSet / RayJob / RayService without a NodePool ------------------------------------


@pytest.mark.parametrize(
    ("files", "pods"),
    [
        (LWS_TRN1, 4),  # 1 group of size 4
        (MULTI_NODE_VLLM, 4),  # 1 group of size 4
        (LWS_VLLM, 4),  # 2 groups of size 2
        (KUBERAY_LLM, 2),  # head + 1 worker
    ],
    ids=[
        "ai-on-eks lws trn1",
        "eks-blueprints multi-node-vllm",
        "lws vllm GPU",
        "kuberay llm-serve",
    ],
)
def test_gpu_world_workloads_expand_into_their_pods(
    ran: Ran, files: tuple[str, ...], pods: int
) -> None:
    # Before issue 8: the kind is ignored with a warning and the plan has no pod at all.
    waiting = pending(ran[plan(files)])
    assert len(waiting) == pods
    assert set(waiting.values()) == {"no dynamic nodepools found"}


def test_kuberay_rayjob_pods_are_planned(ran: Ran) -> None:
    # Before issue 8: "ignored kinds gpucap does not use: RayJob"; the 4-GPU head is never planned.
    waiting = pending(ran[plan(KUBERAY_BATCH)])
    assert waiting
    assert set(waiting.values()) == {"no dynamic nodepools found"}


def test_lws_vllm_render_needs_the_token_of_its_container_env_value(ran: Ran) -> None:
    # Before issue 8: exit 2, "missing variable(s): HF_TOKEN". Issue 8 left it as written (env
    # values were runtime fields); issue 21: the kubelet passes `$HF_TOKEN` in an env value as
    # written (only `$(VAR)` is expanded), so vLLM would get those 9 characters as its token.
    # It is the user's to fill: exit 2 again, naming it.
    result = ran[render(LWS_VLLM)]
    assert result.code == 2
    assert result.errors() == [f"error: {LWS_VLLM[0]}: missing variable(s): HF_TOKEN"]
    filled = ran[render(LWS_VLLM, "--set", "HF_TOKEN=hf_x")]
    assert filled.code == 0, filled.stderr
    assert filled.stdout.count("value: hf_x") == 2
    assert "$(LWS_GROUP_SIZE)" in filled.stdout  # Kubernetes' own syntax, never envsubst's
    assert filled.warnings() == []


# --- NVIDIA ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "ref"),
    [
        (DEVICE_PLUGIN, "DaemonSet/kube-system/nvidia-device-plugin-daemonset"),
        (DEVICE_PLUGIN_CPUMANAGER, "DaemonSet/kube-system/nvidia-device-plugin-daemonset"),
        (DEVICE_PLUGIN_PRIVILEGED, "DaemonSet/nvidia-device-plugin/nvidia-device-plugin-daemonset"),
    ],
    ids=["static", "compat-with-cpumanager", "privileged-with-service-account"],
)
def test_nvidia_device_plugin_daemonsets_are_read_and_lint_clean(
    ran: Ran, files: tuple[str, ...], ref: str
) -> None:
    result = ran[validate(files)]
    assert result.code == 0
    assert f"{ref}: per node requests nothing; tolerates nvidia.com/gpu" in result.stdout
    assert ran[lint(files)].code == 0


def test_gpu_operator_sample_clusterpolicy_is_read(ran: Ran) -> None:
    result = ran[validate(GPU_OPERATOR)]
    assert result.code == 0
    assert "ClusterPolicy/gpu-cluster-policy: device plugin enabled" in result.stdout
    assert findings(ran[lint(GPU_OPERATOR)]) == []


# --- EKS workshop and EKS blueprints (CPU and Neuron pools) --------------------------------------


@pytest.mark.parametrize("files", [WORKSHOP, BLUEPRINTS], ids=["eks-workshop", "eks-blueprints"])
def test_cpu_examples_validate_and_get_no_gpu_finding(ran: Ran, files: tuple[str, ...]) -> None:
    result = ran[validate(files)]
    assert result.code == 0
    assert re.search(r"^3 objects valid", result.stdout.splitlines()[-1])
    linted = ran[lint(files)]
    assert linted.code == 0
    assert set(rules(linted)) <= {"AMI001", "SCHEMA002"}
    assert ran[plan(files)].json()["summary"]["pods"] == 0  # inflate is at 0 replicas


def test_workshop_neuron_chatbot_plans_one_inf2_node(ran: Ran) -> None:
    result = ran[plan(WORKSHOP_NEURON)]
    assert pending(result) == {}
    [claim] = result.json()["nodeClaims"]
    assert (claim["nodePool"], claim["launch"]["instanceType"], claim["pods"]) == (
        "neuron",
        "inf2.xlarge",
        ["vllm/mistral-0"],
    )
    linted = ran[lint(WORKSHOP_NEURON)]
    assert linted.code == 0
    assert not any(r.startswith(("GPU", "TS", "MIG")) for r in rules(linted))


# --- "gpucap lint exits 0 on the good examples of each real repository" (issue 8, done when) ----


def _lint_ok(files: tuple[str, ...]) -> Any:
    return pytest.param(files, id=files[0].split("/")[0] + ":" + "/".join(files[0].split("/")[-2:]))


@pytest.mark.parametrize(
    "files",
    [
        _lint_ok(GPU_SLICES),  # before issue 8: GPU001 error
        _lint_ok(OVERLAY_TARGETED),
        _lint_ok(STATIC),  # before issue 8: GPU001 error
        _lint_ok(AUTOMODE),  # before issue 8: GPU001 error
        _lint_ok(LARGE_INFLATE),  # before issue 8: GPU001 error
        _lint_ok(BOTTLEROCKET),
        _lint_ok(DOEKS),  # before issue 8: GPU001 error
        _lint_ok(RAYSERVE_VLLM),
        _lint_ok(DEVICE_PLUGIN),
        _lint_ok(GPU_OPERATOR),
        _lint_ok(WORKSHOP),
        _lint_ok(WORKSHOP_NEURON),
        _lint_ok(BLUEPRINTS),
        _lint_ok(MULTI_NODE_VLLM),
        _lint_ok(KUBERAY_LLM),
        _lint_ok(LWS_VLLM),
    ],
)
def test_lint_exits_zero_on_the_good_examples(ran: Ran, files: tuple[str, ...]) -> None:
    result = ran[lint(files)]
    assert result.code == 0, [f for f in findings(result) if f["severity"] == "error"]


# --- every invocation above, declared at import so the `ran` fixture runs them in parallel ------

for _files in (GPU_SLICES, OVERLAY_TARGETED, STATIC, NEURON, LARGE_INFLATE, WINDOWS_INFLATE, DOEKS):
    plan(_files)
plan(OD_SPOT_SPLIT)
plan_passes(OD_SPOT_SPLIT, 1)
for _files in (NVIDIA_SMI_POD, VERIFY_GPU, CONTAINER_CACHE, RAYSERVE_VLLM, LWS_TRN1):
    plan(_files)
for _files in (MULTI_NODE_VLLM, LWS_VLLM, KUBERAY_LLM, KUBERAY_BATCH, WORKSHOP_NEURON, V1BETA1):
    plan(_files)
for _files in (WORKSHOP, BLUEPRINTS):
    plan(_files)
for _files in (GPU_SLICES, STATIC, AUTOMODE, GPU_NVIDIA, NEURON, V1ALPHA5, V1BETA1, DOEKS):
    validate(_files)
for _files in (DOEKS_NODECLASSES, NVIDIA_SMI_POD, VERIFY_GPU, CONTAINER_CACHE, GPU_OPERATOR):
    validate(_files)
for _files in (
    DEVICE_PLUGIN,
    DEVICE_PLUGIN_CPUMANAGER,
    DEVICE_PLUGIN_PRIVILEGED,
    WORKSHOP,
    BLUEPRINTS,
):
    validate(_files)
for _files in (GPU_SLICES, OVERLAY_TARGETED, STATIC, AUTOMODE, NEURON, LARGE_INFLATE, BOTTLEROCKET):
    lint(_files)
for _files in (WINDOWS_INFLATE, SAME_NAME, V1ALPHA5, V1BETA1, DOEKS, RAYSERVE_VLLM, GPU_OPERATOR):
    lint(_files)
for _files in (
    NVIDIA_SMI_POD,
    VERIFY_GPU,
    CONTAINER_CACHE,
    DEVICE_PLUGIN,
    DEVICE_PLUGIN_CPUMANAGER,
):
    lint(_files)
for _files in (DEVICE_PLUGIN_PRIVILEGED, WORKSHOP, WORKSHOP_NEURON, BLUEPRINTS, MULTI_NODE_VLLM):
    lint(_files)
for _files in (
    KUBERAY_LLM,
    LWS_VLLM,
    (*DOEKS_POOLS, *DEVICE_PLUGIN),
    (*DOEKS_POOLS, *GPU_OPERATOR),
):
    lint(_files)
render(DOEKS_NODECLASSES, *DOEKS_RENDER)
render(RAYSERVE_VLLM, *RAYSERVE_RENDER)
render(LWS_VLLM)
render(LWS_VLLM, "--set", "HF_TOKEN=hf_x")
