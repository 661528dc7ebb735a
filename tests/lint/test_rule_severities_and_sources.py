"""What lint prints agrees with what it documents (issue 23): every severity a rule prints is
one it declares (docs/rules.md states each, generated from the same declarations), and no
output names gpucap's internal notes or seed files, only public sources. The rule tests hold
their findings to this in `tests/lint/builders.lint`; here, the real public manifests and
every rule's `--explain`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app
from gpucap.lint.registry import Finding
from gpucap.lint.rules import ALL
from tests.lint.builders import INTERNAL_FILE, check_public
from tests.realworld.corpus import ROOT

runner = CliRunner()
REPOSITORIES = sorted(
    p
    for p in ROOT.iterdir()
    if p.is_dir() and any(f.suffix in (".yaml", ".yml", ".json") for f in p.rglob("*"))
)


@pytest.mark.parametrize("repo", REPOSITORIES, ids=lambda p: p.name)
def test_findings_on_real_manifests_print_only_declared_severities(repo: Path) -> None:
    result = runner.invoke(app, ["lint", "-o", "json", str(repo)])
    assert result.exit_code in (0, 1, 2), result.output
    for f in json.loads(result.stdout)["findings"]:
        check_public(Finding(f["rule"], f["severity"], f["message"]))


@pytest.mark.parametrize("rule", ALL, ids=lambda r: r.id)
def test_explain_names_no_internal_file(rule: object) -> None:
    result = runner.invoke(app, ["lint", "--explain", getattr(rule, "id", "")])
    assert result.exit_code == 0
    assert not INTERNAL_FILE.search(result.stdout), result.stdout


def test_rules_doc_lists_every_severity_a_rule_declares() -> None:
    # docs/rules.md is the generator's output (test_framework checks it is up to date).
    doc = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in ALL:
        section = doc.split(f"## {rule.id}\n", 1)[1].split("\n## ", 1)[0]
        for level in rule.severities:
            assert level in section.lower(), (rule.id, level)
