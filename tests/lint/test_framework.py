"""The lint framework: config, suppression comments, output formats (SARIF valid against the
2.1.0 schema), exit codes, --explain, and the rules doc kept in step with the rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.nodepool import NodePool
from gpucap.cli.main import app
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint import rules as rule_modules
from gpucap.lint.config import ConfigError, LintConfig, load_config
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding, Registry, rule_sort_key
from gpucap.lint.rules import ALL
from tests.builders import edit, load, nodeclass, nodepool, to_yaml

ROOT = Path(__file__).resolve().parents[2]
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
runner = CliRunner()

# A GPU pool whose only device plugin is switched off: GPU001 at error level.
NO_PLUGIN_POOL = to_yaml(
    edit(nodepool(), "spec.template.spec.nodeClassRef.name", "gpu"),
    nodeclass("gpu"),
    {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {
            "devicePlugin": {"enabled": False},
            "driver": {"enabled": False},
            "toolkit": {"enabled": False},
        },
    },
)


def write(tmp_path: Path, text: str, name: str = "pool.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def test_errors_exit_1_and_print_file_line_id_severity(tmp_path: Path) -> None:
    f = write(tmp_path, NO_PLUGIN_POOL)
    result = runner.invoke(app, ["lint", str(f)])
    assert result.exit_code == 1, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if " GPU001 " in ln)
    assert line.startswith(f"{f}:")
    assert " GPU001 error NodePool/gpu: " in line


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["lint", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2


def test_json_output_lists_findings_with_stable_keys(tmp_path: Path) -> None:
    f = write(tmp_path, NO_PLUGIN_POOL)
    result = runner.invoke(app, ["lint", "-o", "json", str(f)])
    doc = json.loads(result.stdout)
    assert doc["kind"] == "LintReport"
    gpu001 = next(x for x in doc["findings"] if x["rule"] == "GPU001")
    assert set(gpu001) == {"rule", "severity", "message", "file", "line", "object", "path"}
    assert doc["summary"]["errors"] >= 1


def test_sarif_output_is_valid_sarif_2_1_0(tmp_path: Path) -> None:
    f = write(tmp_path, NO_PLUGIN_POOL)
    result = runner.invoke(app, ["lint", "-o", "sarif", str(f)])
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SARIF_SCHEMA)
    run = doc["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"GPU001", "SCHEMA001"}
    res = next(r for r in run["results"] if r["ruleId"] == "GPU001")
    assert res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == str(f)
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1


def test_an_ignore_comment_on_the_line_above_suppresses_the_finding(tmp_path: Path) -> None:
    text = NO_PLUGIN_POOL.replace(
        "    spec:\n      nodeClassRef",
        "    spec:\n      # gpucap: ignore=GPU001\n      nodeClassRef",
        1,
    )
    text = text.replace(
        "      requirements:", "      # gpucap: ignore=GPU001\n      requirements:", 1
    )
    f = write(tmp_path, text)
    result = runner.invoke(app, ["lint", str(f)])
    assert " GPU001 " not in result.stdout
    assert "suppressed" in result.stdout.splitlines()[-1]


def test_an_ignore_file_comment_suppresses_the_rule_everywhere(tmp_path: Path) -> None:
    f = write(tmp_path, "# gpucap: ignore-file=GPU001\n" + NO_PLUGIN_POOL)
    result = runner.invoke(app, ["lint", str(f)])
    assert " GPU001 " not in result.stdout


def test_config_can_ignore_select_and_regrade_rules(tmp_path: Path) -> None:
    f = write(tmp_path, NO_PLUGIN_POOL)
    cfg = write(
        tmp_path, '[tool.gpucap.lint]\nseverity = { GPU001 = "warning" }\n', "pyproject.toml"
    )
    regraded = runner.invoke(app, ["lint", str(f), "--config", str(cfg)])
    assert " GPU001 warning " in regraded.stdout
    assert regraded.exit_code == 0
    strict = runner.invoke(app, ["lint", str(f), "--config", str(cfg), "--strict"])
    assert strict.exit_code == 1
    cfg2 = write(tmp_path, '[lint]\nignore = ["GPU"]\n', ".gpucap.toml")
    ignored = runner.invoke(app, ["lint", str(f), "--config", str(cfg2)])
    assert " GPU001 " not in ignored.stdout


def test_the_cluster_key_declares_what_the_cluster_runs(tmp_path: Path) -> None:
    cfg = write(tmp_path, '[tool.gpucap.lint]\ncluster = ["gpu-operator"]\n', "pyproject.toml")
    assert load_config(cfg, ALL).cluster == frozenset({"gpu-operator"})
    pool = write(
        tmp_path,
        to_yaml(edit(nodepool(), "spec.template.spec.nodeClassRef.name", "gpu"), nodeclass("gpu")),
    )
    undeclared = runner.invoke(app, ["lint", str(pool)])
    assert " GPU001 info " in undeclared.stdout
    assert undeclared.exit_code == 0
    declared = runner.invoke(app, ["lint", str(pool), "--config", str(cfg)])
    assert " GPU001 " not in declared.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[lint]\nignore = ["XYZ999"]\n', "[lint].ignore: unknown rule 'XYZ999'"),
        (
            '[lint]\nseverity = { GPU001 = "fatal" }\n',
            "[lint].severity.GPU001: 'fatal' is not one of error, warning, info",
        ),
        ("[lint]\nselct = []\n", "[lint]: unknown key 'selct'"),
        (
            '[lint]\ncluster = "nvidia-device-plugin"\n',
            "[lint].cluster: expected a list of component names",
        ),
        (
            '[lint]\ncluster = ["nvidia-device-plugins"]\n',
            "[lint].cluster: unknown component 'nvidia-device-plugins'",
        ),
    ],
)
def test_a_bad_config_is_one_line_and_exit_2(tmp_path: Path, text: str, message: str) -> None:
    cfg = write(tmp_path, text, ".gpucap.toml")
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(cfg, ALL)
    result = runner.invoke(
        app, ["lint", str(write(tmp_path, NO_PLUGIN_POOL)), "--config", str(cfg)]
    )
    assert result.exit_code == 2


def test_explain_prints_the_rule(tmp_path: Path) -> None:
    result = runner.invoke(app, ["lint", "--explain", "GPU001"])
    assert result.exit_code == 0
    assert result.stdout.startswith("GPU001 gpu-pool-without-device-plugin (error)")
    assert "Why:" in result.stdout
    assert "Fix:" in result.stdout
    unknown = runner.invoke(app, ["lint", "--explain", "NOPE1"])
    assert unknown.exit_code == 2


def test_every_rule_has_an_id_name_why_fix_and_source() -> None:
    rules = ALL
    assert len({r.id for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)
    for r in rules:
        assert r.summary
        assert r.why
        assert r.fix
        assert r.source
        assert r.severity in ("error", "warning", "info")


def test_the_rules_doc_is_generated_from_the_rules() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_rules_doc.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_default_config_enables_every_rule() -> None:
    assert all(LintConfig().enabled(r) for r in ALL)


def test_rules_all_holds_every_family_registry_in_id_order() -> None:
    families = [getattr(rule_modules, name).RULES for name in rule_modules.__all__ if name != "ALL"]
    assert sorted(r.id for f in families for r in f.rules) == sorted(r.id for r in ALL)
    assert [r.id for r in ALL] == sorted((r.id for r in ALL), key=rule_sort_key)
    # By family, then by number: NP2 before NP10, which a plain string sort would invert.
    assert [r.id for r in ALL if r.category == "NP"][8:10] == ["NP009", "NP010"]
    assert rule_sort_key("NP2") < rule_sort_key("NP10")


def test_a_rule_id_registered_twice_is_refused() -> None:
    def check(_: LintContext) -> list[Finding]:
        return []

    first: Registry[LintContext] = Registry()
    second: Registry[LintContext] = Registry()
    for registry in (first, second):
        registry.rule("X001", "x", "info", summary="s", why="w", fix="f", source="s")(check)
    with pytest.raises(ValueError, match="rule X001 registered twice"):
        Registry.joined(first, second)
    with pytest.raises(ValueError, match="rule X001 registered twice"):
        first.rule("X001", "y", "info", summary="s", why="w", fix="f", source="s")(check)


def test_of_kind_gives_the_objects_of_one_api_class_in_input_order() -> None:
    loaded = load(nodepool("a"), nodeclass("gpu"), nodepool("b"))
    ctx = LintContext(loaded.manifests, load_catalog("us-east-1"))
    assert [np.metadata.name for np in ctx.of_kind(NodePool)] == ["a", "b"]
    assert [nc.metadata.name for nc in ctx.of_kind(EC2NodeClass)] == ["gpu"]
    located = ctx.located(NodePool)
    assert [m for m, _ in located] == [loaded.manifests[0], loaded.manifests[2]]
    assert all(m.obj is np for m, np in located)


# A NodePool without its nodeClassRef: a schema error whose message alone names no field.
NO_NODECLASS_REF = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g5"]
"""


def test_text_output_names_the_field_path_as_validate_does(tmp_path: Path) -> None:
    f = write(tmp_path, NO_NODECLASS_REF)
    result = runner.invoke(app, ["lint", str(f)])
    assert result.exit_code == 1, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"{f}:7: SCHEMA001 error NodePool/gpu: spec.template.spec.nodeClassRef: "
        "required field is missing"
    )


def test_a_rule_finding_in_text_carries_its_field_path_like_json(tmp_path: Path) -> None:
    f = write(tmp_path, NO_PLUGIN_POOL)
    text = runner.invoke(app, ["lint", str(f)]).stdout
    doc = json.loads(runner.invoke(app, ["lint", "-o", "json", str(f)]).stdout)
    gpu001 = next(x for x in doc["findings"] if x["rule"] == "GPU001")
    assert gpu001["path"]
    assert f" GPU001 error NodePool/gpu: {gpu001['path']}: {gpu001['message']}" in text


def _dir_with_one_unparsable_file(tmp_path: Path) -> tuple[Path, Path, Path]:
    bad = write(tmp_path, "a: [\n", "a-broken.yaml")
    good = write(tmp_path, NO_NODECLASS_REF, "b-pool.yaml")
    return tmp_path, bad, good


def test_an_unparsable_file_in_a_directory_is_reported_and_the_others_are_linted(
    tmp_path: Path,
) -> None:
    folder, bad, good = _dir_with_one_unparsable_file(tmp_path)
    result = runner.invoke(app, ["lint", str(folder)])
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{bad}:2: SCHEMA001 error line 2 column 1: invalid YAML")
    assert lines[1].startswith(f"{good}:7: SCHEMA001 error NodePool/gpu: ")
    assert lines[-1] == "2 error(s), 0 warning(s), 0 info"


def test_an_unparsable_file_is_a_json_and_sarif_finding_with_its_file(tmp_path: Path) -> None:
    folder, bad, good = _dir_with_one_unparsable_file(tmp_path)
    result = runner.invoke(app, ["lint", "-o", "json", str(folder)])
    assert result.exit_code == 2
    found = {(x["file"], x["line"]) for x in json.loads(result.stdout)["findings"]}
    assert found == {(str(bad), 2), (str(good), 7)}
    sarif = runner.invoke(app, ["lint", "-o", "sarif", str(folder)])
    assert sarif.exit_code == 2
    doc = json.loads(sarif.stdout)
    jsonschema.validate(doc, SARIF_SCHEMA)
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
    ]
    assert uris == [str(bad), str(good)]


def test_input_of_which_nothing_could_be_read_still_stops_with_one_line(tmp_path: Path) -> None:
    bad = write(tmp_path, "a: [\n", "broken.yaml")
    result = runner.invoke(app, ["lint", str(bad)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {bad}: line 2 column 1: invalid YAML")


def test_placeholders_named_without_a_file_stay_info_and_exit_clean_of_bad_input() -> None:
    # The grouped placeholder note has no source either: it is not a file that failed to load.
    workshop = ROOT / "src" / "gpucap" / "data" / "examples" / "workshop"
    result = runner.invoke(app, ["lint", "-o", "json", str(workshop)])
    assert result.exit_code == 1  # AMI002 on the unfilled alias, not bad input
    notes = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "SCHEMA002"]
    assert notes
    assert {f["severity"] for f in notes} == {"info"}
