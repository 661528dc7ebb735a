"""Every finding a rule makes in these tests is held to what lint documents (issue 23): a
severity its rule declares (`Rule.severities`, which docs/rules.md and `--list-rules` print)
and a message that names no internal note or seed file (`builders.check_public`)."""

from __future__ import annotations

import pytest

from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding
from tests.lint.builders import check_public


@pytest.fixture(autouse=True)
def _findings_are_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    made = LintContext.finding

    def checked(self: LintContext, *args: object, **kwargs: object) -> Finding:
        f = made(self, *args, **kwargs)  # type: ignore[arg-type]
        check_public(f)
        return f

    monkeypatch.setattr(LintContext, "finding", checked)
