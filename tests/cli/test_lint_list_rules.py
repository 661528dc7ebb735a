"""`gpucap lint --list-rules` and case-insensitive `--explain` (issue 23), through the app."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpucap.cli.main import app
from gpucap.lint.rules import ALL


def test_list_rules_prints_every_rule_with_its_severity() -> None:
    result = CliRunner().invoke(app, ["lint", "--list-rules"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["ID", "SEVERITY", "NAME"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert set(rows) == {r.id for r in ALL}
    for rule in ALL:
        assert rows[rule.id] == [",".join(rule.severities), rule.name]


def test_list_rules_as_json_is_a_list_of_objects() -> None:
    result = CliRunner().invoke(app, ["lint", "--list-rules", "-o", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [row["id"] for row in rows] == [r.id for r in ALL]
    assert all(set(row) == {"id", "severity", "severities", "name", "summary"} for row in rows)


def test_explain_ids_are_case_insensitive() -> None:
    lower = CliRunner().invoke(app, ["lint", "--explain", "gpu001"])
    upper = CliRunner().invoke(app, ["lint", "--explain", "GPU001"])
    assert lower.exit_code == 0, lower.output
    assert lower.output == upper.output
    assert lower.output.startswith("GPU001 ")


def test_explain_of_an_unknown_id_is_bad_input() -> None:
    result = CliRunner().invoke(app, ["lint", "--explain", "gpu999"])
    assert result.exit_code == 2


def test_no_rule_cites_an_internal_file() -> None:
    # Users see only public sources: no design notes (*.md other than Karpenter's public
    # docs) and no seed files (issue 23).
    for rule in ALL:
        text = "\n".join([rule.summary, rule.why, rule.fix, rule.source])
        for internal in ("landscape.md", "contract.md", "karpenter-disruption.md", "seed"):
            assert internal not in text, (rule.id, internal)
