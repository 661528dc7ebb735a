"""Real files planned and linted outside us-east-1 (issue 21 item 4): the EKS workshop's Neuron
NodePool and vLLM Deployment in us-east-2, where the bundled catalog now has prices, and in a
region it has none for. Provenance in this directory's PROVENANCE.yaml."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.realworld.corpus import group, real

runner = CliRunner()
CHATBOT = [str(real(f)) for f in group("eks-workshop/chatbot-neuron")]


def test_the_workshop_neuron_pool_plans_an_inf2_node_in_us_east_2() -> None:
    result = runner.invoke(app, ["plan", "-o", "json", "--region", "us-east-2", *CHATBOT])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (claim,) = doc["nodeClaims"]
    launch = claim["launch"]
    # instances.vantage.sh's us-east-2 on-demand price; the pool asks for on-demand only.
    assert (launch["instanceType"], launch["capacityType"], launch["pricePerHour"]) == (
        "inf2.xlarge",
        "on-demand",
        0.7582,
    )
    assert launch["zone"] in ("us-east-2a", "us-east-2b", "us-east-2c")
    assert doc["unschedulable"] == []


def test_the_workshop_neuron_pool_lints_clean_of_np009_in_us_east_2() -> None:
    result = runner.invoke(app, ["lint", "--region", "us-east-2", *CHATBOT])
    assert result.exit_code in (0, 1), result.stderr
    assert " NP009 " not in result.stdout


def test_the_workshop_neuron_pool_in_a_region_without_prices_is_one_line() -> None:
    # Refused before the files are read: not even their placeholder warnings are printed.
    for command in ("plan", "lint"):
        result = runner.invoke(app, [command, "--region", "ca-west-1", *CHATBOT])
        assert (result.exit_code, result.stdout) == (2, "")
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: --region ca-west-1: the catalog prices no instance type")
