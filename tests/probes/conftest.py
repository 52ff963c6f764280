"""Fixtures for the probe tests: real OpenSSH sshd instances on loopback (see tests/sshd.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.sshd import Sshd, keygen, sshd_available, start_sshd


@pytest.fixture(scope="session")
def user_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated ed25519 user key pair (private at the path, public at .pub)."""
    if not sshd_available():
        pytest.fail("the OpenSSH server (sshd) is missing: run scripts/install-testbed.sh as root (`make test` does)")
    return keygen(tmp_path_factory.mktemp("userkey") / "id_ed25519", comment="opgrade-tenant")


@pytest.fixture
def sshd_factory(tmp_path: Path, user_key: Path) -> Iterator[Callable[..., Sshd]]:
    """Start real sshd processes on demand; every one is stopped by pid when the test ends."""
    started: list[Sshd] = []

    def start(**kwargs: object) -> Sshd:
        directory = tmp_path / f"sshd{len(started)}"
        kwargs.setdefault("authorized_public_keys", [user_key.with_suffix(".pub")])
        server = start_sshd(directory, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def sshd(sshd_factory: Callable[..., Sshd]) -> Sshd:
    return sshd_factory()
