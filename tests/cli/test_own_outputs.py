"""gpucap's own outputs (`plan -o yaml|json`, `simulate -o json`, `lint -o json`) saved in a
manifests folder are read without a word; another unknown kind is still reported as ignored."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"
STORY = Path(__file__).resolve().parents[1] / "sim" / "stories" / "spot-ice.yaml"
runner = CliRunner()


def _save(folder: Path, name: str, *args: str) -> None:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.stderr
    (folder / name).write_text(result.stdout)


def test_gpucaps_own_outputs_in_a_manifests_folder_are_read_silently(tmp_path: Path) -> None:
    (tmp_path / "vllm.yaml").write_text((WORKSHOP / "vllm.yaml").read_text())
    _save(tmp_path, "plan.yaml", "plan", str(tmp_path / "vllm.yaml"), "-o", "yaml")
    _save(tmp_path, "plan.json", "plan", str(tmp_path / "vllm.yaml"), "-o", "json")
    _save(tmp_path, "lint.json", "lint", str(tmp_path / "vllm.yaml"), "-o", "json")
    _save(tmp_path, "run.json", "simulate", str(STORY), "-o", "json")
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""


def test_a_kind_gpucap_does_not_write_nor_read_is_still_reported(tmp_path: Path) -> None:
    (tmp_path / "svc.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n"
    )
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert "ignored kinds gpucap does not use: Service" in result.stderr
