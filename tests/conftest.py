"""Shared fixtures: an AWS environment isolated from the developer's, and moto's server.

`aws_isolated_env` clears every `AWS_*` variable and points the config files nowhere, so no
test reads real credentials, profiles or regions (and IMDS is off). `moto_server` starts one
`ThreadedMotoServer` on a free port for the whole session (imported lazily: only the tests that
ask for it pay for it); `moto_env` is, for one test module, an isolated environment pointed at
that server through `AWS_ENDPOINT_URL` with dummy credentials; `moto` resets moto's state
before a test.

Hypothesis runs without its per-example deadline: the laws say what is true, never how fast
(speed is measured end to end by `bench/`), and on a loaded machine the deadline only made
laws fail at random (`test_the_order_of_taints_and_labels_never_changes_the_hash` took 484 ms
once, 17 ms when replayed).
"""

from __future__ import annotations

import os
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("gpucap", deadline=None)
settings.load_profile("gpucap")


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _isolate(mp: pytest.MonkeyPatch, config_dir: Path) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            mp.delenv(name)
    mp.setenv("AWS_CONFIG_FILE", str(config_dir / "no-aws-config"))
    mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(config_dir / "no-aws-credentials"))
    mp.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws_isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS configuration at all: no credentials, profile, region or endpoint."""
    _isolate(monkeypatch, tmp_path)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """The URL of a moto server shared by the session's tests."""
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 -- 0.3 s; only moto tests pay

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def moto_env(moto_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """For a whole test module: AWS configuration pointing at moto (`AWS_ENDPOINT_URL`) with
    dummy credentials; yields the server's URL. Module-scoped so that clients built from it
    (building one parses botocore's JSON models, ~0.2 s) can be shared by the module's tests."""
    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, tmp_path_factory.mktemp("aws"))
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_ENDPOINT_URL", moto_server)
        yield moto_server


@pytest.fixture
def moto(moto_env: str) -> str:
    """moto with its state reset for this test; returns the server's URL."""
    request = urllib.request.Request(f"{moto_env}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass
    return moto_env
