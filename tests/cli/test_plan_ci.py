"""`plan` for CI and for the question "why is it pending": `--fail-on-pending` exits 1 after
the plan when a pod stays pending; `--explain NAME` finds a pod by name in any namespace; a pod
a NodePool limit holds is explained with the limit, the use and who uses it."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ROOT / "src" / "gpucap" / "data" / "examples" / "workshop"
EXAMPLES = ROOT / "examples"
runner = CliRunner()


def test_fail_on_pending_exits_1_after_printing_the_plan() -> None:
    args = ["plan", str(WORKSHOP), str(EXAMPLES / "two-gpu-pod.yaml")]
    plain = runner.invoke(app, args)
    failing = runner.invoke(app, [*args, "--fail-on-pending"])
    assert plain.exit_code == 0
    assert failing.exit_code == 1
    assert failing.stdout == plain.stdout
    assert "default/big" in failing.stdout


def test_fail_on_pending_exits_0_when_every_pod_is_placed() -> None:
    result = runner.invoke(app, ["plan", str(WORKSHOP), "--fail-on-pending", "-o", "json"])
    assert result.exit_code == 0, result.stderr


def test_explain_of_a_pod_held_by_a_limit_says_the_limit_the_use_and_who_uses_it() -> None:
    result = runner.invoke(
        app,
        [
            "plan",
            str(EXAMPLES / "g6-limit-8.yaml"),
            str(EXAMPLES / "llm-3-replicas.yaml"),
            "--passes",
            "1",
            "--explain",
            "llm-1",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert (
        "  NodePool gpu (weight 0): held by its limits: limit nvidia.com/gpu 8: 8 in use by gpu-1"
        in result.stdout.splitlines()
    )
    assert "usable" not in result.stdout


def _pods(tmp_path: Path, *namespaces: str) -> str:
    docs = [
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: web, namespace: {ns}}}\n"
        "spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]}\n"
        for ns in namespaces
    ]
    f = tmp_path / "pods.yaml"
    f.write_text("---\n".join(docs))
    return str(f)


def test_explain_without_a_namespace_finds_the_only_pod_of_that_name(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["plan", str(WORKSHOP), _pods(tmp_path, "shop"), "--explain", "web"]
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("pod shop/web: ")


def test_explain_without_a_namespace_names_the_candidates_when_several_have_it(
    tmp_path: Path,
) -> None:
    result = runner.invoke(
        app, ["plan", str(WORKSHOP), _pods(tmp_path, "shop", "default"), "--explain", "web"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "error: --explain web: pods named web in 2 namespaces: default/web, shop/web; "
        "give namespace/name"
    )
