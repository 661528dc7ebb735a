"""Lint findings as text (`file:line: ID severity message`, grouped by file), JSON, and SARIF
2.1.0 for code-scanning tools (GitHub code scanning, GitLab, ...). Pure; called by the CLI.

Text comes as a list of lines, for the CLI's `Terminal` to escape line by line (a finding that
quotes a name with a newline in it stays one line); JSON and SARIF are escaped by `json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gpucap import __version__
from gpucap.lint.registry import Finding, Rule
from gpucap.lint.runner import LintResult

__all__ = [
    "format_json",
    "format_sarif",
    "format_text",
    "rule_help",
    "summary_line",
    "text_line",
]

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def format_text(result: LintResult) -> list[str]:
    """One line per finding, in order, then the summary line."""
    return [*(text_line(f) for f in result.findings), summary_line(result)]


def text_line(f: Finding) -> str:
    """`file:line: ID severity Object: field.path: message`: the field path as `validate` and
    `-o json` give it (a bare "required field is missing" names no field without it)."""
    where = f"{f.object_ref}: " if f.object_ref else ""
    field = f"{f.path}: " if f.path else ""
    return f"{f.location}: {f.rule} {f.severity} {where}{field}{f.message}"


def summary_line(result: LintResult) -> str:
    """`1 error(s), 2 warning(s), 0 info` (`; N suppressed` when the config suppressed some)."""
    errors, warnings, infos = (result.count(s) for s in ("error", "warning", "info"))
    summary = f"{errors} error(s), {warnings} warning(s), {infos} info"
    if result.suppressed:
        summary += f"; {result.suppressed} suppressed"
    return summary


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity,
        "message": f.message,
        "file": f.file,
        "line": f.line,
        "object": f.object_ref,
        "path": f.path or None,
    }


def format_json(result: LintResult) -> str:
    doc = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "LintReport",
        "findings": [_finding_json(f) for f in result.findings],
        "summary": {
            "errors": result.count("error"),
            "warnings": result.count("warning"),
            "info": result.count("info"),
            "suppressed": result.suppressed,
        },
    }
    return json.dumps(doc, indent=2) + "\n"


def rule_help(rule: Rule[Any]) -> list[str]:
    """`gpucap lint --explain ID`: everything about one rule, a paragraph per line."""
    return [
        f"{rule.id} {rule.name} ({rule.severity})",
        "",
        f"Checks: {rule.summary}",
        *(f"Prints {level} when {case}." for level, case in rule.other),
        "",
        f"Why: {rule.why}",
        "",
        f"Fix: {rule.fix}",
        "",
        f"Source: {rule.source}",
    ]


def format_sarif(result: LintResult, rules: Sequence[Rule[Any]]) -> str:
    """A SARIF 2.1.0 log with one run, every rule described, one result per finding."""
    catalog = list(rules)
    index = {r.id: i for i, r in enumerate(catalog)}
    results = []
    for f in result.findings:
        entry: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.object_ref}: {f.message}" if f.object_ref else f.message},
        }
        if f.file is not None:
            region: dict[str, Any] = {"startLine": f.line} if f.line else {}
            location: dict[str, Any] = {"artifactLocation": {"uri": f.file}}
            if region:
                location["region"] = region
            entry["locations"] = [{"physicalLocation": location}]
        results.append(entry)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpucap",
                        "version": __version__,
                        "informationUri": "https://github.com/gpucap/gpucap",
                        "rules": [
                            {
                                "id": r.id,
                                "name": r.name,
                                "shortDescription": {"text": r.summary},
                                "fullDescription": {"text": r.why},
                                "help": {"text": f"{r.why} Fix: {r.fix}"},
                                "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
                                "properties": {"source": r.source},
                            }
                            for r in catalog
                        ],
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"
