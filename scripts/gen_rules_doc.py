"""Generate docs/rules.md from the lint rules themselves (ids, names, severities, whys, fixes,
sources). Run `python scripts/gen_rules_doc.py` after changing a rule; a test fails when the
committed file is stale (`--check` prints the difference and exits 1)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpucap.lint.rules import ALL  # noqa: E402

TARGET = ROOT / "docs" / "rules.md"


def render() -> str:
    rules = list(ALL)
    lines = [
        "# gpucap lint rules",
        "",
        "Generated from the rules by `scripts/gen_rules_doc.py`; do not edit by hand.",
        "`gpucap lint --explain ID` prints the same text; `gpucap lint --list-rules` lists them.",
        "Severities: error (will not work; `gpucap lint` exits 1), warning (likely cost or",
        "availability incident), info (advice). A rule prints its own severity unless its",
        "section names the case where it prints another. Configure with",
        "`[tool.gpucap.lint]` (select, ignore, severity) or suppress one finding with",
        "`# gpucap: ignore=ID` on or above the offending line.",
        "",
        "| id | name | severity | checks |",
        "| --- | --- | --- | --- |",
    ]
    for r in rules:
        levels = ", ".join(r.severities)
        lines.append(f"| [{r.id}](#{r.id.lower()}) | `{r.name}` | {levels} | {r.summary} |")
    for r in rules:
        lines += [
            "",
            f"## {r.id}",
            "",
            f"`{r.name}` ({r.severity})",
            "",
            f"**Checks:** {r.summary}",
            "",
            *(f"**{level.capitalize()}** when {case}.\n" for level, case in r.other),
            f"**Why:** {r.why}",
            "",
            f"**Fix:** {r.fix}",
            "",
            f"**Source:** {r.source}",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    text = render()
    if "--check" in sys.argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            sys.exit("docs/rules.md is stale: run python scripts/gen_rules_doc.py")
        return
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(list(ALL))} rules)")


if __name__ == "__main__":
    main()
