"""`simulate --runs N --ray [ADDRESS]` where Ray cannot run, and the option itself (issue 26):
each refusal one line and exit 2, never a traceback. No Ray is needed here: where the engine
is reached, a stand-in `ray` module says what Ray would (not installed, or a cluster that does
not answer); the real engine is tests/runtime/test_ray_executor.py's."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from gpucap.cli.options import with_optional_values
from tests.cli.test_simulate_cli import gpucap

STORIES = Path(__file__).resolve().parents[1] / "sim" / "stories"
INTERRUPT = str(STORIES / "interrupt.yaml")


def test_without_ray_installed_ray_is_one_line_and_exit_2(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, out, err = gpucap(["simulate", INTERRUPT, "--runs", "2", "--ray"], capsys, monkeypatch)
    assert (code, out, err) == (
        2,
        "",
        ["error: --ray: Ray is not installed: pip install 'gpucap[ray]'"],
    )


class Unreachable(types.ModuleType):
    """A `ray` whose cluster does not answer, as Ray Client says after its timeout."""

    def __init__(self) -> None:
        super().__init__("ray")
        self.shutdowns = 0

    def is_initialized(self) -> bool:
        return False

    def init(self, **options: Any) -> None:
        raise ConnectionError("ray client connection timeout\n(and a second line of detail)")

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_cluster_that_does_not_answer_is_one_line_and_exit_2(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = Unreachable()
    monkeypatch.setitem(sys.modules, "ray", fake)
    args = ["simulate", INTERRUPT, "--runs", "2", "--ray", "ray://head.example:10001"]
    code, out, err = gpucap(args, capsys, monkeypatch)
    assert (code, out, err) == (
        2,
        "",
        ["error: --ray ray://head.example:10001: cannot reach Ray: ray client connection timeout"],
    )
    assert fake.shutdowns == 1  # what a failed init left behind is let go


def test_auto_without_a_cluster_says_where_ray_looks(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", Unreachable())
    code, _, err = gpucap(
        ["simulate", INTERRUPT, "--runs", "2", "--ray", "auto"], capsys, monkeypatch
    )
    assert (code, err) == (
        2,
        [
            "error: --ray auto: no Ray cluster found: set RAY_ADDRESS, or run on a node of the "
            "cluster (a KubeRay head pod)"
        ],
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ray"], "error: --ray: runs on Ray only with --runs N"),
        (
            ["--runs", "2", "--ray", "ray://head"],
            "error: --ray: 'ray://head' is not a Ray address (local, auto or ray://HOST:PORT)",
        ),
        (
            ["--runs", "2", "--ray", "head:6379"],
            "error: --ray: 'head:6379' is not a Ray address (local, auto or ray://HOST:PORT)",
        ),
        (
            ["--runs", "2", "--workers", "4", "--ray", "auto"],
            "error: --workers: the cluster at --ray auto runs on its own CPUs; --workers sets "
            "the CPUs of a local Ray (--ray alone)",
        ),
    ],
)
def test_what_ray_cannot_go_with_is_one_line_and_exit_2(
    extra: list[str], message: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = gpucap(["simulate", INTERRUPT, *extra], capsys, monkeypatch)
    assert (code, out, err) == (2, "", [message])


@pytest.mark.parametrize(
    ("given", "read"),
    [
        (["s.yaml", "--runs", "3", "--ray"], ["s.yaml", "--runs", "3", "--ray", "local"]),
        (["--ray", "s.yaml", "--runs", "3"], ["--ray", "local", "s.yaml", "--runs", "3"]),
        (["--ray", "--runs", "3"], ["--ray", "local", "--runs", "3"]),
        (["--ray", "auto", "s.yaml"], ["--ray", "auto", "s.yaml"]),
        (["--ray", "ray://h:10001"], ["--ray", "ray://h:10001"]),
        (["--ray", "ray://h"], ["--ray", "ray://h"]),  # meant as an address: refused as one
        (["--ray=auto"], ["--ray=auto"]),
        (["--", "--ray"], ["--", "--ray"]),
    ],
)
def test_ray_without_an_address_is_a_local_ray(given: list[str], read: list[str]) -> None:
    assert with_optional_values(given) == read


def test_the_help_shows_the_address_as_optional(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = gpucap(["simulate", "--help"], capsys, monkeypatch)
    assert code == 0
    assert "--ray [ADDRESS]" in out
