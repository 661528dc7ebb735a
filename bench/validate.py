"""`gpucap validate` benchmark: loading and validating a `kind: List` of N realistic pods.

Run: `python bench/validate.py [--pods 1000] [--repeat 3] [--write FILE]`. Each pod looks like
what `kubectl get pods -o json` gives for a GPU model server (security contexts, probes, env,
volumes, affinity, topology spread, tolerations, status), so the schema walk sees every level a
real pod has. Times `load_text` (parse, schema, models, rules) and the whole CLI command
(`python -m gpucap validate FILE`, a new process: start-up included), best of `--repeat`.
Not a unit test; record the figures in the issue note.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gpucap.apis.serde import load_text

SRC = Path(__file__).resolve().parent.parent / "src"


def pod(i: int) -> dict[str, Any]:
    """One pod as the API server returns it (spec with defaults filled in, and status)."""
    name = f"vllm-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "inference",
            "labels": {"app": "vllm", "pod-template-hash": "5d8f9c7b6"},
            "annotations": {"prometheus.io/scrape": "true"},
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-11-30T10:00:00Z",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "vllm-5d8f9c7b6",
                    "uid": "11111111-1111-1111-1111-111111111111",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "karpenter.k8s.aws/instance-family",
                                        "operator": "In",
                                        "values": ["g5", "g6"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "vllm"}},
                }
            ],
            "volumes": [
                {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
                {
                    "name": "token",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                    },
                },
            ],
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "args": ["--model", "Qwen/Qwen2.5-1.5B-Instruct", "--port", "8000"],
                    "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
                    "env": [
                        {"name": "HF_HOME", "value": "/cache"},
                        {
                            "name": "POD_IP",
                            "valueFrom": {
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}
                            },
                        },
                    ],
                    "resources": {
                        "requests": {"cpu": "3", "memory": "12Gi"},
                        "limits": {"nvidia.com/gpu": "1", "memory": "12Gi"},
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/health", "port": 8000, "scheme": "HTTP"},
                        "periodSeconds": 10,
                        "failureThreshold": 3,
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/health", "port": "http"},
                        "initialDelaySeconds": 120,
                    },
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": "2026-11-30T10:00:01Z",
                }
            ],
            "qosClass": "Burstable",
        },
    }


def pod_list(n: int) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod(i) for i in range(n)]})


def best(repeat: int, run: Any) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", type=Path, help="also write the List JSON to this file")
    args = parser.parse_args()
    text = pod_list(args.pods)
    if args.write:
        args.write.write_text(text, encoding="utf-8")

    def load() -> None:
        result = load_text(text, "pods.json")
        assert result.ok, [str(i) for i in result.errors[:3]]
        assert len(result.manifests) == args.pods

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pods.json"
        path.write_text(text, encoding="utf-8")

        env = {**os.environ, "PYTHONPATH": str(SRC)}

        def cli() -> None:
            done = subprocess.run(
                [sys.executable, "-m", "gpucap", "validate", str(path)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            assert done.returncode == 0, done.stderr[:500]

        load_s = best(args.repeat, load)
        cli_s = best(args.repeat, cli)
    print(f"{'pods':>6}  {'load_text s':>11}  {'gpucap validate s':>17}")
    print(f"{args.pods:>6}  {load_s:>11.3f}  {cli_s:>17.3f}")


if __name__ == "__main__":
    main()
