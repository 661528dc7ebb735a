"""Running the rules: load problems become SCHEMA findings, every enabled rule runs over the
context, `# gpucap: ignore=ID` comments and the configuration are applied, findings come out
sorted by file, line and rule.

Suppression comments (in the manifest file):
- on the offending line, or on the line just above it: `# gpucap: ignore=NP001` (several ids
  separated by commas; `ignore=all` for every rule);
- anywhere in a file: `# gpucap: ignore-file=NP001`.
Called by `gpucap lint`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpucap.apis.errors import format_path
from gpucap.apis.reading import InputError, read_path
from gpucap.apis.serde import Issue
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding, Rule, Severity
from gpucap.lint.rules import ALL

__all__ = ["LintResult", "issue_findings", "run"]

_IGNORE = re.compile(r"#\s*gpucap:\s*ignore(-file)?=([A-Za-z0-9_,\- ]+)")
_LINE = re.compile(r"line (\d+)\b")


@dataclass(slots=True)
class LintResult:
    findings: list[Finding]
    suppressed: int = 0
    rules_run: list[str] = field(default_factory=list)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)


def issue_findings(issues: Iterable[Issue]) -> list[Finding]:
    """Loader issues as findings: invalid manifests (SCHEMA001), placeholders (SCHEMA002) and
    ignored kinds (SCHEMA003)."""
    out = []
    severity: Severity
    for issue in issues:
        if issue.rule == "PLACEHOLDER":
            rule, severity = "SCHEMA002", "info"
        elif issue.rule == "IGNORED":
            rule, severity = "SCHEMA003", "info"
        else:
            rule, severity = "SCHEMA001", ("error" if issue.severity == "error" else "warning")
        source = issue.source
        if source is None and rule == "SCHEMA001" and severity == "error":
            out.append(_file_finding(issue.message))
            continue
        out.append(
            Finding(
                rule,
                severity,
                issue.message,
                file=source.file if source else None,
                line=issue.line,
                object_ref=issue.object_ref,
                path=format_path(issue.path),
            )
        )
    return out


def _file_finding(message: str) -> Finding:
    """A problem with a whole file (invalid YAML, unreadable): the loader names the file at the
    head of its one-line message (`f.yaml: line 2 column 1: invalid YAML: ...`); the finding
    carries it as its file, and the line when the message gives one, so that text, JSON and
    SARIF place it like any other finding."""
    start = 0
    while (cut := message.find(": ", start)) > 0:
        head = message[:cut]
        if os.path.isfile(head) or head == "<stdin>":
            rest = message[cut + 2 :]
            m = _LINE.match(rest)
            line = int(m.group(1)) if m else None
            return Finding("SCHEMA001", "error", rest, file=head, line=line)
        start = cut + 2
    return Finding("SCHEMA001", "error", message)


class _Suppressions:
    def __init__(self) -> None:
        self._files: dict[str, tuple[list[str], set[str]]] = {}

    def _load(self, file: str) -> tuple[list[str], set[str]]:
        if file not in self._files:
            try:
                # Bounded and non-blocking like the first read: a FIFO read again is empty.
                lines = read_path(file).splitlines()
            except InputError:
                lines = []
            whole: set[str] = set()
            for line in lines:
                for m in _IGNORE.finditer(line):
                    if m.group(1):
                        whole |= _ids(m.group(2))
            self._files[file] = (lines, whole)
        return self._files[file]

    def suppressed(self, f: Finding) -> bool:
        if f.file is None:
            return False
        lines, whole = self._load(f.file)
        if f.rule in whole or "all" in whole:
            return True
        if f.line is None:
            return False
        for n in (f.line, f.line - 1):
            if 1 <= n <= len(lines):
                for m in _IGNORE.finditer(lines[n - 1]):
                    ids = _ids(m.group(2))
                    if not m.group(1) and (f.rule in ids or "all" in ids):
                        return True
        return False


def _ids(text: str) -> set[str]:
    return {part.strip() for part in text.split(",") if part.strip()}


def run(
    ctx: LintContext,
    config: LintConfig,
    *,
    issues: Sequence[Issue] = (),
    rules: Sequence[Rule[LintContext]] | None = None,
) -> LintResult:
    rules = list(rules) if rules is not None else list(ALL)
    enabled = [r for r in rules if config.enabled(r)]
    by_id = {r.id: r for r in rules}
    findings: list[Finding] = []
    for f in issue_findings(issues):
        findings.append(f)
    for r in enabled:
        level = config.severity_of(r)
        for f in r.check(ctx):
            findings.append(f.with_severity(level) if f.severity == r.severity else f)
    suppressions = _Suppressions()
    kept, dropped = [], 0
    for f in findings:
        known = by_id.get(f.rule)
        if known is not None and not config.enabled(known):
            dropped += 1
            continue
        if suppressions.suppressed(f):
            dropped += 1
            continue
        kept.append(f)
    kept.sort(key=lambda f: (f.file or "", f.line or 0, f.rule, f.message))
    return LintResult(kept, dropped, [r.id for r in enabled])
