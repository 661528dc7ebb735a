"""The same object (kind, namespace, name) given more than once: the later one wins, as
`kubectl apply` of the files in order would make it, and gpucap says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpucap.apis.serde import effective, load_paths, load_text
from gpucap.cli.main import app
from tests.builders import deployment, edit, nodeclass, nodepool, to_yaml

runner = CliRunner()


def write(path: Path, *docs: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_yaml(*docs))
    return str(path)


def test_later_file_wins_for_the_same_object(tmp_path: Path) -> None:
    first = write(tmp_path / "a.yaml", nodepool("default", limits={"nvidia.com/gpu": "2"}))
    second = write(tmp_path / "b.yaml", nodepool("default", limits={"nvidia.com/gpu": "8"}))
    result = load_paths([first, second])
    (pool,) = result.objects.nodepools
    assert str(pool.spec.limits["nvidia.com/gpu"]) == "8"
    (winner,) = result.objects.items
    assert winner.source.file == second
    assert winner.replaces is not None
    assert winner.replaces.source.file == first
    # the order of the arguments decides, not the file names
    (pool,) = load_paths([second, first]).objects.nodepools
    assert str(pool.spec.limits["nvidia.com/gpu"]) == "2"


def test_a_directory_is_applied_in_sorted_file_order(tmp_path: Path) -> None:
    write(tmp_path / "z" / "pool.yaml", nodepool("default", limits={"nvidia.com/gpu": "9"}))
    write(tmp_path / "a.yaml", nodepool("default", limits={"nvidia.com/gpu": "1"}))
    (pool,) = load_paths([str(tmp_path)]).objects.nodepools
    assert str(pool.spec.limits["nvidia.com/gpu"]) == "9"  # a.yaml, then z/pool.yaml


def test_the_winner_takes_the_place_of_the_first_version(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", deployment("x", replicas=1), deployment("y", replicas=1))
    b = write(tmp_path / "b.yaml", deployment("x", replicas=2))
    pods = load_paths([a, b]).objects.pods
    assert [p.metadata.name for p in pods] == ["x-0", "x-1", "y-0"]


def test_the_same_name_in_another_namespace_or_kind_is_another_object() -> None:
    docs = (
        deployment("vllm"),
        edit(deployment("vllm"), "metadata.namespace", "ml"),
        edit(edit(deployment("vllm"), "kind", "StatefulSet"), "spec.replicas", 1),
    )
    result = load_text(to_yaml(*docs))
    assert len(result.objects.items) == 3
    assert not [i for i in result.issues if i.rule == "DUPLICATE"]


def test_a_later_item_of_a_list_wins_too() -> None:
    text = to_yaml(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [nodepool("default"), nodepool("default", limits={"nvidia.com/gpu": "4"})],
        }
    )
    result = load_text(text, "list.yaml")
    (pool,) = result.objects.nodepools
    assert str(pool.spec.limits["nvidia.com/gpu"]) == "4"
    (warning,) = [i for i in result.issues if i.rule == "DUPLICATE"]
    assert str(warning) == (
        "list.yaml[0].items[1] NodePool/default: replaces the same object in list.yaml[0].items[0] "
        "(the later one wins, as `kubectl apply` of both would)"
    )


def test_validate_and_plan_warn_on_stderr_and_plan_notes_it(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", nodepool("gpu"), nodeclass("gpu"))
    b = write(tmp_path / "b.yaml", nodepool("gpu", limits={"nvidia.com/gpu": "8"}))
    validated = runner.invoke(app, ["validate", a, b])
    assert validated.exit_code == 0
    assert f"{b}[0] NodePool/gpu: replaces the same object in {a}[0]" in validated.stderr
    planned = runner.invoke(app, ["plan", "-o", "json", a, b])
    assert planned.exit_code == 0, planned.stderr
    assert "replaces the same object" in planned.stderr
    notes = json.loads(planned.stdout)["notes"]
    assert f"NodePool/gpu: the version in {b}[0] replaces the one in {a}[0]" in notes[0]


def test_lint_sees_only_the_winning_nodepool(tmp_path: Path) -> None:
    files = [
        write(tmp_path / f"{n}.yaml", nodepool("default"), nodeclass("gpu"))
        for n in ("a", "b", "c")
    ]
    linted = runner.invoke(app, ["lint", "-o", "json", *files])
    findings = json.loads(linted.stdout)["findings"]
    assert findings
    assert not any("default, default" in f["message"] for f in findings)
    pool_findings = [f for f in findings if f["object"] == "NodePool/default"]
    assert pool_findings
    assert {f["file"] for f in pool_findings} == {files[2]}
    assert len([f for f in pool_findings if f["rule"] == "GPU001"]) == 1
    assert not any(f["rule"] == "SCHEMA001" and "replaces" in f["message"] for f in findings)


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=8), st.data())
def test_effective_keeps_one_version_per_object_the_last_at_the_first_place(
    names_: list[str], data: st.DataObject
) -> None:
    """Law: one manifest per object; it is the last version; objects keep first-seen order; the
    `replaces` chain lists every earlier version, in order."""
    limits = [data.draw(st.integers(1, 9)) for _ in names_]
    docs = [
        nodepool(n, limits={"nvidia.com/gpu": str(v)}) for n, v in zip(names_, limits, strict=True)
    ]
    manifests = load_text(to_yaml(*docs)).manifests if docs else []
    out = effective(manifests)
    assert [m.obj.name for m in out] == list(dict.fromkeys(names_))
    for m in out:
        versions = [i for i, n in enumerate(names_) if n == m.obj.name]
        assert str(m.obj.spec.limits["nvidia.com/gpu"]) == str(limits[versions[-1]])
        assert [v.source.index for v in m.history] == versions
