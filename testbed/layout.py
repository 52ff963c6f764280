"""Names, addresses and on-disk places of one testbed, and its state file.

Everything a testbed creates is named from its name and its subnet octet, so ``down`` can
find it again: the bridge ``tbr<octet>``, host-side veths ``tb<octet>c`` (controller),
``tb<octet>l`` (login) and ``tb<octet>n<slot>`` (nodes), all within the kernel's 15
characters; network namespaces ``opgtb-<name>-ctl|login|n<slot>``; tenant users
``<name>-tenant-a``, ``<name>-tenant-b``; and files under ``/var/lib/opgrade-testbed/<name>``.

The state file (``state.json`` there) records the resolved profile, addresses, tenants and
the pid of every process started, so ``down`` can undo an ``up`` even after a crash. It is
written atomically and read-modify-written under an flock.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.errors import TestbedError

BASE_DIR = Path(os.environ.get("OPGRADE_TESTBED_DIR", "/var/lib/opgrade-testbed"))
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,9}$")
NETNS_PREFIX = "opgtb-"
TENANT_IDS = ("a", "b")
FIRST_NODE_HOST = 11  # node slot k lives at 10.200.<octet>.(10 + k)


def name_validate(name: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        raise TestbedError(
            f"invalid testbed name {name!r}: use 1-10 lowercase letters/digits, starting with a letter"
        )
    return name


def octet_preferred(name: str) -> int:
    """A stable third octet in 1..250 for ``name``; collisions are resolved at allocation."""
    return zlib.crc32(name.encode()) % 250 + 1


@dataclass(frozen=True)
class Layout:
    name: str
    octet: int

    @property
    def root(self) -> Path:
        return BASE_DIR / self.name

    @property
    def subnet(self) -> str:
        return f"10.200.{self.octet}.0/24"

    def addr(self, host: int) -> str:
        return f"10.200.{self.octet}.{host}"

    @property
    def host_addr(self) -> str:
        return self.addr(1)

    @property
    def ctl_addr(self) -> str:
        return self.addr(2)

    @property
    def login_addr(self) -> str:
        return self.addr(3)

    def node_addr(self, slot: int) -> str:
        return self.addr(FIRST_NODE_HOST - 1 + slot)

    @property
    def bridge(self) -> str:
        return f"tbr{self.octet}"

    @property
    def netns_ctl(self) -> str:
        return f"{NETNS_PREFIX}{self.name}-ctl"

    @property
    def netns_login(self) -> str:
        return f"{NETNS_PREFIX}{self.name}-login"

    def netns_node(self, slot: int) -> str:
        return f"{NETNS_PREFIX}{self.name}-n{slot}"

    @property
    def veth_ctl(self) -> str:
        return f"tb{self.octet}c"

    @property
    def veth_login(self) -> str:
        return f"tb{self.octet}l"

    def veth_node(self, slot: int) -> str:
        return f"tb{self.octet}n{slot}"

    @staticmethod
    def node_name(slot: int) -> str:
        return f"node{slot}"

    def tenant_user(self, tenant_id: str) -> str:
        return f"{self.name}-tenant-{tenant_id}"

    def home(self, user: str) -> Path:
        return self.root / "home" / user

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def slurm_conf(self) -> Path:
        return self.root / "slurm" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge-run" / "munge.socket"

    @property
    def secrets(self) -> Path:
        return self.root / "secrets"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def tenant_log_dir(self, user: str) -> Path:
        return self.logs / "tenants" / user

    @property
    def faults(self) -> Path:
        return self.root / "faults"


# ---------------------------------------------------------------- state file


def state_path(name: str) -> Path:
    return BASE_DIR / name / "state.json"


def state_read(name: str) -> dict[str, Any] | None:
    path = state_path(name)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise TestbedError(f"state file {path} is corrupt: {exc}; run `down {name}`") from exc


def state_write(name: str, state: dict[str, Any]) -> None:
    path = state_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(state, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


@contextmanager
def state_lock(name: str) -> Iterator[None]:
    """Exclusive lock for a read-modify-write of the state of ``name``."""
    lock = BASE_DIR / f".{name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def state_update(name: str) -> Iterator[dict[str, Any]]:
    """Yield the state of ``name`` for changes and write it back, under the lock."""
    with state_lock(name):
        state = state_read(name)
        if state is None:
            raise TestbedError(f"testbed {name!r} has no state file")
        yield state
        state_write(name, state)


@contextmanager
def global_lock() -> Iterator[None]:
    """Serialises subnet allocation between concurrent ``up`` calls."""
    BASE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(BASE_DIR, 0o755)  # noqa: S103 - tenants must traverse to their homes
    with open(BASE_DIR / ".global.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def testbed_names() -> list[str]:
    if not BASE_DIR.is_dir():
        return []
    return sorted(p.name for p in BASE_DIR.iterdir() if p.is_dir() and NAME_RE.fullmatch(p.name))


def octet_allocate(name: str, existing_links: set[str]) -> int:
    """Pick the octet for ``name``: its preferred one unless another testbed or a link has it."""
    taken = set()
    for other in testbed_names():
        if other == name:
            continue
        st = state_read(other) if state_path(other).exists() else None
        if st and "octet" in st:
            taken.add(int(st["octet"]))
    start = octet_preferred(name)
    for i in range(250):
        octet = (start - 1 + i) % 250 + 1
        if octet not in taken and f"tbr{octet}" not in existing_links:
            return octet
    raise TestbedError("no free /24 left in 10.200.0.0/16")
