"""Placeholders: what a reference is, which fields hold runtime variables, how render fills,
and the loader's grouped warning (`apis/placeholders.py`, `apis/serde.py`)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.placeholders import (
    Occurrence,
    bare_is_placeholder,
    fill_hint,
    group_message,
    is_runtime_field,
    parse_only,
    placeholders,
    render,
    scan,
    substitute,
)
from gpucap.apis.serde import load_text
from tests.builders import nodeclass, to_yaml


# ---- what a reference is ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("${A} and $B", ["A", "B"]),
        ("$${DEV}", []),  # Terraform's escape of `${`
        ("$$DEV", []),  # bash's PID followed by DEV; Kubernetes' and compose's escaped `$`
        ("$$$X", ["X"]),  # an escaped `$`, then a reference
        ("$(POD_IP)", []),  # Kubernetes' own expansion
        ("$$(POD_IP)", []),
        ("${X:-default} ${#ARR[@]} ${ARR[0]}", []),  # shell forms envsubst does not read
        ("price $5", []),
        ("a${B}c", ["B"]),
    ],
)
def test_what_counts_as_a_variable_reference(text: str, names: list[str]) -> None:
    assert placeholders(text) == names


def test_substitute_keeps_dollar_dollar_as_written() -> None:
    assert substitute("$${DEV} ${DEV}", {"DEV": "x"}).text == "$${DEV} x"


@pytest.mark.parametrize(
    ("items", "names"),
    [
        (["A,B"], ["A", "B"]),
        (["A", "B", "A"], ["A", "B"]),
        (["$A ${B}"], ["A", "B"]),  # envsubst's SHELL-FORMAT
        ([" A , B "], ["A", "B"]),
    ],
)
def test_only_takes_names_comma_lists_and_shell_format(items: list[str], names: list[str]) -> None:
    assert parse_only(items) == names


@pytest.mark.parametrize(
    ("item", "named"), [("A,my-var", "my-var"), ("${A", "${A"), ("1A", "1A"), ("$(A)", "$(A)")]
)
def test_only_rejects_and_names_what_is_not_a_variable(item: str, named: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(named)}$"):
        parse_only([item])


def test_only_needs_at_least_one_name() -> None:
    with pytest.raises(ValueError, match=r"^$"):
        parse_only([" , "])


# ---- which fields are runtime fields ---------------------------------------------------------
C = ("spec", "template", "spec", "containers", 0)
RAY_HEAD = ("spec", "rayClusterConfig", "headGroupSpec", "template", "spec")


@pytest.mark.parametrize(
    ("kind", "path", "runtime"),
    [
        ("EC2NodeClass", ("spec", "userData"), True),
        ("EC2NodeClass", ("spec", "role"), False),
        ("NodePool", ("spec", "userData"), False),
        ("Deployment", (*C, "command", 2), True),
        ("Deployment", (*C, "args", 0), True),
        ("Deployment", (*C, "env", 1, "value"), False),  # the kubelet expands only $(VAR)
        ("Deployment", (*C, "env", 1, "name"), False),
        ("Deployment", (*C, "image"), False),
        ("Deployment", (*C, "livenessProbe", "exec", "command", 1), True),
        ("Deployment", (*C, "lifecycle", "preStop", "exec", "command", 2), True),
        ("Pod", ("spec", "initContainers", 0, "args", 0), True),
        ("Deployment", ("spec", "template", "metadata", "annotations", "command"), False),
        ("RayService", ("spec", "serveConfigV2"), True),
        ("RayService", (*RAY_HEAD, "containers", 0, "args", 0), True),
        ("RayService", (*RAY_HEAD, "containers", 0, "env", 0, "value"), False),
        ("RayJob", ("spec", "runtimeEnvYAML"), True),
        ("ConfigMap", ("data", "run.sh"), True),
        ("ConfigMap", ("data", "process_tickets.py"), True),
        ("ConfigMap", ("data", "config.yaml"), False),
        ("ConfigMap", ("metadata", "labels", "run.sh"), False),
        ("Secret", ("data", "run.sh"), False),
    ],
)
def test_runtime_fields_are_user_data_container_commands_configmap_scripts_and_ray_config(
    kind: str, path: tuple[str | int, ...], runtime: bool
) -> None:
    assert is_runtime_field(kind, path) is runtime


def test_a_configmap_entry_starting_with_a_shebang_is_a_script_whatever_its_name() -> None:
    assert is_runtime_field("ConfigMap", ("data", "entrypoint"), "#!/bin/sh\necho $HOME\n")
    assert not is_runtime_field("ConfigMap", ("data", "entrypoint"), "HOME=$HOME\n")


@pytest.mark.parametrize(
    ("kind", "path", "bare"),
    [
        ("EC2NodeClass", ("spec", "role"), True),
        ("NodePool", ("spec", "template", "metadata", "labels", "team"), True),
        ("Deployment", (*C, "image"), True),  # no image reference holds a `$`
        ("Deployment", (*C, "env", 0, "value"), True),  # passed to the program as written
        ("Pod", ("spec", "initContainers", 0, "image"), True),
        ("Deployment", ("metadata", "annotations", "note"), False),  # `costs $5` may be meant
        ("ConfigMap", ("data", "config.yaml"), False),
        ("Deployment", (*C, "env", 0, "name"), False),
    ],
)
def test_a_bare_dollar_name_is_a_placeholder_where_no_literal_dollar_is_meant(
    kind: str, path: tuple[str | int, ...], bare: bool
) -> None:
    assert bare_is_placeholder(kind, path) is bare


def test_scan_tells_field_runtime_and_comment_apart() -> None:
    text = (
        "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\n"
        "# fill ${CLUSTER_NAME} first\n"
        "spec:\n  role: KarpenterNodeRole-${CLUSTER_NAME}\n"
        '  userData: |\n    echo "$HOME"\n'
    )
    assert [(u.ref.name, u.where) for u in scan(text)] == [
        ("CLUSTER_NAME", "comment"),
        ("CLUSTER_NAME", "field"),
        ("HOME", "runtime"),
    ]


def test_text_nested_deeper_than_the_yaml_composer_walks_is_scanned_as_plain_text() -> None:
    # The fuzzer's RecursionError (exit 70 from `gpucap render`): 200,000 brackets around a
    # placeholder are not YAML gpucap can walk, so every reference counts as a field.
    text = "spec:\n  values: " + "[" * 200_000 + "${ZONE}" + "]" * 200_000 + "\n"
    assert [(u.ref.name, u.where) for u in scan(text)] == [("ZONE", "field")]


def test_list_items_are_classified_by_their_own_kind() -> None:
    text = to_yaml(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [{"kind": "EC2NodeClass", "spec": {"userData": "echo $HOME"}}],
        }
    )
    assert [u.where for u in scan(text)] == ["runtime"]


# ---- render ----------------------------------------------------------------------------------
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: ${NAME}  # the name
spec:
  containers:
    - name: c
      image: $IMAGE
      command: ["sh", "-c", "echo $HOME ${NODE_IP} $(POD_IP)"]
      env:
        - name: LD_LIBRARY_PATH
          value: "/opt/lib:$LD_LIBRARY_PATH"
"""


def test_render_only_fills_the_named_variables() -> None:
    done = render([POD], {"NAME": "p", "IMAGE": "img", "HOME": "/home/me"}, only=["NAME"])
    assert done.texts == (POD.replace("${NAME}", "p"),)
    assert done.missing == ((),)
    assert done.left == ()


def test_render_only_fills_a_named_runtime_variable_too() -> None:
    done = render([POD], {"NODE_IP": "10.0.0.1"}, only=["NODE_IP"])
    assert done.texts == (POD.replace("${NODE_IP}", "10.0.0.1"),)


def test_a_variable_named_in_only_without_a_value_is_missing() -> None:
    done = render([POD], {}, only=["IMAGE", "NAME"])
    assert done.missing == (("IMAGE", "NAME"),)
    assert done.texts == (POD,)


def test_set_variables_are_filled_with_only_too() -> None:
    done = render([POD], {"NAME": "p", "IMAGE": "i"}, only=["NAME"], explicit=["IMAGE"])
    assert done.texts == (POD.replace("${NAME}", "p").replace("$IMAGE", "i"),)


def test_unset_variables_in_container_commands_are_left_alone_with_a_warning() -> None:
    done = render([POD], {"NAME": "p", "IMAGE": "i", "LD_LIBRARY_PATH": ""})
    assert done.missing == ((),)
    assert done.left == ("HOME", "NODE_IP")
    assert "echo $HOME ${NODE_IP} $(POD_IP)" in done.texts[0]


def test_a_runtime_variable_is_left_even_when_the_environment_has_it() -> None:
    env = {"NAME": "p", "IMAGE": "i", "HOME": "/home/me", "NODE_IP": "10.0.0.1"}
    done = render([POD], {**env, "LD_LIBRARY_PATH": ""})
    assert "/home/me" not in done.texts[0]
    assert "10.0.0.1" not in done.texts[0]


def test_an_env_value_variable_is_a_placeholder_since_the_kubelet_passes_it_as_written() -> None:
    # Only `$(VAR)` is expanded in env[].value, and no shell reads it: a `$LD_LIBRARY_PATH` there
    # reaches the program as those 16 characters unless the template step fills it.
    assert render([POD], {"NAME": "p", "IMAGE": "i"}).missing == (("LD_LIBRARY_PATH",),)
    done = render([POD], {"NAME": "p", "IMAGE": "i", "LD_LIBRARY_PATH": "/usr/local/cuda"})
    assert '"/opt/lib:/usr/local/cuda"' in done.texts[0]
    assert done.left == ("HOME", "NODE_IP")


def test_a_runtime_variable_given_with_set_is_filled() -> None:
    values = {"NAME": "p", "IMAGE": "i", "HOME": "/h", "LD_LIBRARY_PATH": ""}
    done = render([POD], values, explicit=["HOME"])
    assert "echo /h ${NODE_IP}" in done.texts[0]
    assert done.left == ("NODE_IP",)


def test_unset_variable_outside_runtime_fields_is_missing() -> None:
    done = render([POD], {})
    assert done.missing == (("IMAGE", "LD_LIBRARY_PATH", "NAME"),)


def test_a_configmap_script_is_left_as_written_and_never_missing() -> None:
    cm = to_yaml(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "s"},
            "data": {"run.sh": 'echo "${HOSTNAME} $USER"\n', "app.conf": "host=${HOST}\n"},
        }
    )
    done = render([cm], {"HOSTNAME": "laptop", "USER": "me", "HOST": "h"})
    assert done.missing == ((),)
    assert 'echo "${HOSTNAME} $USER"' in done.texts[0]  # the script's own variables
    assert "host=h" in done.texts[0]  # a config file is a template like any field
    assert done.left == ("HOSTNAME", "USER")


def test_a_name_that_is_a_placeholder_elsewhere_is_filled_in_user_data_too() -> None:
    nc = nodeclass()
    nc["spec"]["role"] = "KarpenterNodeRole-${CLUSTER_NAME}"
    nc["spec"]["userData"] = "#!/bin/bash\n/etc/eks/bootstrap.sh ${CLUSTER_NAME} $HOME\n"
    done = render([to_yaml(nc)], {"CLUSTER_NAME": "prod"})
    assert "bootstrap.sh prod $HOME" in done.texts[0]
    assert done.left == ("HOME",)


def test_placeholders_in_one_file_make_the_name_a_placeholder_in_the_others() -> None:
    user_data = to_yaml({"kind": "EC2NodeClass", "spec": {"userData": "echo ${CLUSTER_NAME}"}})
    role = to_yaml({"kind": "EC2NodeClass", "spec": {"role": "${CLUSTER_NAME}"}})
    assert render([user_data, role], {}).missing == (("CLUSTER_NAME",), ("CLUSTER_NAME",))


def test_a_comment_is_filled_when_the_name_is_a_placeholder_but_never_missing() -> None:
    text = "# cluster ${CLUSTER_NAME}, home $HOME\nkind: X\nname: ${CLUSTER_NAME}\n"
    assert render([text], {"CLUSTER_NAME": "c", "HOME": "/h"}).texts == (
        "# cluster c, home $HOME\nkind: X\nname: c\n",
    )
    only_comment = "# see ${DOCS}\nkind: X\n"
    assert render([only_comment], {}).missing == ((),)


def test_text_that_is_not_yaml_treats_every_variable_as_a_placeholder() -> None:
    helm = "command: [{{ .Values.cmd }}, $HOME]\n  bad: indent\n"
    assert render([helm], {}).missing == (("HOME",),)


def test_kubernetes_dollar_paren_and_escapes_are_never_touched() -> None:
    text = 'kind: Pod\nname: "$(POD_IP) $$(X) $${Y} $$Z ${Q}"\n'
    done = render([text], {"POD_IP": "1", "X": "2", "Y": "3", "Z": "4", "Q": "5"})
    assert done.texts == ('kind: Pod\nname: "$(POD_IP) $$(X) $${Y} $$Z 5"\n',)


# Segments of a text: literal runs without `$`, references, escapes and Kubernetes' `$(...)`.
_NAMES = ["A", "B", "HOME", "CLUSTER_NAME"]
_literal = st.text(
    alphabet=st.characters(blacklist_characters="$", blacklist_categories=("Cs",)), max_size=8
)
_segment = st.one_of(
    _literal.map(lambda s: (s, None)),
    st.sampled_from(_NAMES).map(lambda n: ("${" + n + "}", n)),
    st.sampled_from(_NAMES).map(lambda n: ("$" + n + " ", n)),  # a space ends a bare name
    st.sampled_from(["$$", "$$(A)", "$(B)", "$${A}", "${A:-x}", "$ "]).map(lambda s: (s, None)),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_segment, max_size=12),
    st.sets(st.sampled_from(_NAMES)),
    st.dictionaries(st.sampled_from(_NAMES), st.text(max_size=5)),
)
def test_with_only_every_variable_not_named_is_byte_for_byte_unchanged(
    segments: list[tuple[str, str | None]], only: set[str], values: dict[str, str]
) -> None:
    text = "".join(s for s, _ in segments)
    # Named references with a value become the value (a bare one keeps the space that ended
    # it); every other segment comes out as it went in.
    expected = "".join(
        values[n] + ("" if s.startswith("${") else " ")
        if n is not None and n in only and n in values
        else s
        for s, n in segments
    )
    assert render([text], values, only=only).texts == (expected,)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_render_of_any_text_with_nothing_named_is_the_text(text: str) -> None:
    assert render([text], {"A": "1", "HOME": "/h"}, only=[]).texts == (text,)


# ---- the loader's grouped warning ------------------------------------------------------------
def _occ(i: int, path: str, file: str = "nc.yaml", ref: str = "EC2NodeClass") -> Occurrence:
    return Occurrence(file, f"{file}[{i}]", f"{ref}/n{i}", path)


def test_group_message_counts_fields_and_objects_and_shows_the_first() -> None:
    occ = [_occ(i, p) for i in range(5) for p in ("spec.role", "spec.tags.a", "spec.tags.b")]
    assert group_message("X", occ) == (
        "${X} is not filled in 15 fields of 5 objects: [0] EC2NodeClass/n0 spec.role, "
        "spec.tags.a (+1); [1] EC2NodeClass/n1; [2] EC2NodeClass/n2; and 2 more objects"
    )


def test_group_message_names_the_file_of_objects_in_another_file() -> None:
    occ = [_occ(0, "spec.role"), _occ(3, "spec.role", file="other.yaml")]
    assert group_message("X", occ) == (
        "${X} is not filled in 2 fields of 2 objects in 2 files: [0] EC2NodeClass/n0 spec.role; "
        "other.yaml[3] EC2NodeClass/n3"
    )


def test_fill_hint_quotes_paths_and_shows_stdin_as_dash() -> None:
    assert fill_hint(["my dir/a.yaml", "<stdin>", "my dir/a.yaml"], ["A", "B"]) == (
        "fill these 2 placeholders before applying: "
        "gpucap render 'my dir/a.yaml' - --set A=... --set B=..."
    )


def _nodeclass(**spec: Any) -> dict[str, Any]:
    nc = nodeclass()
    nc["spec"].update(spec)
    return nc


def test_validate_says_one_line_per_variable_and_the_render_command() -> None:
    docs = [
        _nodeclass(role="${ROLE}", tags={"a": "${CLUSTER}", "b": "${CLUSTER}-x"}),
        _nodeclass(role="${ROLE}"),
    ]
    docs[1]["metadata"]["name"] = "second"
    result = load_text(to_yaml(*docs), "nc.yaml")
    assert [str(w) for w in result.warnings] == [
        "nc.yaml: ${ROLE} is not filled in 2 fields of 2 objects: [0] EC2NodeClass/gpu spec.role;"
        " [1] EC2NodeClass/second",
        "nc.yaml: ${CLUSTER} is not filled in 2 fields: [0] EC2NodeClass/gpu spec.tags.a,"
        " spec.tags.b",
        "fill these 2 placeholders before applying: gpucap render nc.yaml"
        " --set ROLE=... --set CLUSTER=...",
    ]
    assert result.warnings[0].line == to_yaml(*docs).splitlines().index("  role: ${ROLE}") + 1


def test_variables_used_only_in_runtime_fields_get_no_warning() -> None:
    result = load_text(to_yaml(_nodeclass(userData="#!/bin/bash\necho ${HOME} $NODE_IP\n")))
    assert result.warnings == []


def test_a_placeholder_also_used_in_user_data_counts_those_fields() -> None:
    nc = _nodeclass(role="${CLUSTER}", userData="bootstrap.sh ${CLUSTER} ${HOME}")
    result = load_text(to_yaml(nc), "nc.yaml")
    assert str(result.warnings[0]) == (
        "nc.yaml: ${CLUSTER} is not filled in 2 fields: [0] EC2NodeClass/gpu spec.role, "
        "spec.userData"
    )
    assert len(result.warnings) == 2  # the variable and the command; nothing about HOME


def test_a_bare_dollar_name_is_a_placeholder_in_karpenter_kinds_not_in_an_annotation() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"note": "costs $PRICE"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    result = load_text(to_yaml(_nodeclass(role="$ROLE"), pod), "in.yaml")
    assert result.warnings[0].message.startswith("${ROLE} is not filled")
    assert len(result.warnings) == 2


def test_terraform_escapes_in_user_data_are_not_placeholders() -> None:
    result = load_text(to_yaml(_nodeclass(userData='DISK_COUNT=$${#DISKS[@]}\necho "$${DEV}"')))
    assert result.warnings == []


def test_a_recursive_yaml_alias_does_not_loop() -> None:
    text = "kind: Pod\na: &x [*x, $HOME]\n"
    assert render([text], {"HOME": "/h"}).texts == ("kind: Pod\na: &x [*x, /h]\n",)


def test_every_document_of_a_long_stream_is_classified() -> None:
    # Node ids of a finished document are reused by the next one; none may be taken as seen.
    docs = [{"kind": "EC2NodeClass", "spec": {"userData": f"echo $V{i}"}} for i in range(60)]
    assert {u.where for u in scan(to_yaml(*docs))} == {"runtime"}


_RUNTIME_NAMES = ["HOME", "NODE_IP", "LD_LIBRARY_PATH"]
_ENV_NAMES = ["TOKEN", "REGION"]


def _text_with(names: list[str]) -> st.SearchStrategy[str]:
    return st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_characters="$", codec="ascii"), max_size=6),
            st.sampled_from(names).map(lambda n: "${" + n + "} "),
            st.sampled_from(names).map(lambda n: "$" + n + " "),
            st.sampled_from(["$$", "$(POD_IP)", "$${DEV}"]),
        ),
        max_size=10,
    ).map("".join)


_script = _text_with(_RUNTIME_NAMES)


@settings(max_examples=150, deadline=None)
@given(user_data=_script, command=_script, env_value=_text_with(_ENV_NAMES))
def test_runtime_variables_come_out_as_written_whatever_the_environment(
    user_data: str, command: str, env_value: str
) -> None:
    nc = _nodeclass(role="KarpenterNodeRole-${CLUSTER_NAME}", userData=user_data)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "command": ["sh", "-c", command],
                    "env": [{"name": "E", "value": env_value}],
                }
            ]
        },
    }
    env = dict.fromkeys([*_RUNTIME_NAMES, *_ENV_NAMES, "CLUSTER_NAME", "POD_IP", "DEV"], "FILLED")
    done = render([to_yaml(nc, pod)], env)
    assert done.missing == ((),)
    out_nc, out_pod = yaml.safe_load_all(done.texts[0])
    assert out_nc["spec"]["role"] == "KarpenterNodeRole-FILLED"
    assert out_nc["spec"]["userData"] == user_data
    container = out_pod["spec"]["containers"][0]
    assert container["command"][2] == command
    # an env value is a template field: every reference filled, escapes and $(VAR) kept
    assert container["env"][0]["value"] == substitute(env_value, env).text
