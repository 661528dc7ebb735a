"""What `gpucap lint` says about the real files of issue 21's classes 6, 7 and 10: GPU Feature
Discovery beside (not instead of) the device plugin, Bottlerocket EC2NodeClasses selected by
AMI id or name, and an instance type that exists but is not offered in the linted region."""

from __future__ import annotations

from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.realworld.corpus import real

runner = CliRunner()


def lint(*names: str, region: str = "us-east-1") -> tuple[int, list[str]]:
    """Exit code and the finding lines of `gpucap lint` on the named real files."""
    args = ["lint", "--region", region, *(str(real(n)) for n in names)]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, result.stdout.splitlines()[:-1]


CHATBOT_POOL = "aws-samples__eks-workshop-v2/manifests/modules/aiml/chatbot/nodepool.yaml"


def test_np009_a_workshop_trainium_pool_linted_for_eu_west_1_says_where_trn1_is_offered() -> None:
    # The workshop's pool lists trn1.2xlarge and inf2.xlarge; the bundled data offers trn1 in
    # three US regions and not in eu-west-1: a region to change, not a typo.
    _, lines = lint(CHATBOT_POOL, region="eu-west-1")
    (np009,) = [ln for ln in lines if " NP009 " in ln]
    assert (
        "trn1.2xlarge is not offered in eu-west-1; it is in us-east-1, us-east-2, us-west-2"
    ) in np009
    assert "did you mean" not in np009
    _, home = lint(CHATBOT_POOL)
    assert not [ln for ln in home if " NP009 " in ln]
