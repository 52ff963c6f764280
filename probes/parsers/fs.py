"""File permissions as a tenant sees them: ``stat`` lines and what reading another tenant's files gave.

``home_isolation`` and the SSH half of ``tenant_log_isolation`` run, as tenant A, a fixed
``stat -c '%a|%U|%G|%F|%n' PATH...`` and then try to list/read tenant B's canary. The mode
tells whether the directory is open to others; the read attempt is the ground truth (ACLs or
root-squashed NFS can make a 0755 directory unreadable, and a 0700 one readable).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from probes.parsers import ParseError


@dataclass(frozen=True)
class PathStat:
    path: str
    mode: int
    owner: str
    group: str
    kind: str

    @property
    def others_can_read(self) -> bool:
        return bool(self.mode & 0o004)

    @property
    def others_can_enter(self) -> bool:
        return bool(self.mode & 0o001)

    @property
    def group_can_read(self) -> bool:
        return bool(self.mode & 0o040)

    @property
    def world_writable(self) -> bool:
        return bool(self.mode & 0o002)


@dataclass(frozen=True)
class StatResult:
    stats: tuple[PathStat, ...]
    errors: tuple[str, ...]  # "stat: cannot statx ..." lines: missing or unreadable paths


_STAT_ERR = re.compile(r"^stat: cannot stat")


def parse_stat(text: str) -> StatResult:
    """Parse ``stat -c '%a|%U|%G|%F|%n' PATH...`` (stderr merged is fine)."""
    stats, errors = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        if _STAT_ERR.match(line):
            errors.append(line.strip())
            continue
        parts = line.split("|", 4)
        if len(parts) != 5 or not re.fullmatch(r"[0-7]{3,4}", parts[0]):
            raise ParseError(f"not a stat -c '%a|%U|%G|%F|%n' line: {line!r}")
        stats.append(
            PathStat(path=parts[4], mode=int(parts[0], 8), owner=parts[1], group=parts[2], kind=parts[3])
        )
    return StatResult(stats=tuple(stats), errors=tuple(errors))


_LS_LD = re.compile(
    r"^(?P<perm>[dlcbps-][rwxsStT-]{9})[.+@]?\s+\d+\s+(?P<owner>\S+)\s+(?P<group>\S+)\s+.*?\s(?P<path>/\S*)$"
)


def parse_ls_ld(text: str) -> tuple[PathStat, ...]:
    """Parse ``ls -ld PATH...`` lines into the same shape as :func:`parse_stat`."""
    out = []
    for line in text.splitlines():
        match = _LS_LD.match(line.strip())
        if not match:
            continue
        perm = match["perm"]
        mode = 0
        for i, ch in enumerate(perm[1:]):
            if ch not in "-ST":
                mode |= 1 << (8 - i)
        kind = {"d": "directory", "-": "regular file", "l": "symbolic link"}.get(perm[0], "other")
        out.append(
            PathStat(path=match["path"], mode=mode, owner=match["owner"], group=match["group"], kind=kind)
        )
    if not out and text.strip():
        raise ParseError("no ls -ld lines")
    return tuple(out)


_DENIED = re.compile(r"Permission denied|Operation not permitted", re.IGNORECASE)


@dataclass(frozen=True)
class ReadAttempt:
    """What a read of foreign files showed: the nonce seen (a leak) and/or permission denials."""

    nonce_seen: bool
    denied: bool
    lines_with_nonce: tuple[str, ...]


def parse_read_attempt(text: str, nonce: str) -> ReadAttempt:
    """Scan the output of ``ls``/``cat``/``grep`` run as a foreign tenant for ``nonce``."""
    if not nonce:
        raise ValueError("empty nonce")
    lines = tuple(line for line in text.splitlines() if nonce in line and not _DENIED.search(line))
    return ReadAttempt(nonce_seen=bool(lines), denied=bool(_DENIED.search(text)), lines_with_nonce=lines)


def open_paths(stats: Iterable[PathStat]) -> tuple[PathStat, ...]:
    """Directories other users can list or enter (the home-isolation bar is 0700/0750-like)."""
    return tuple(s for s in stats if s.others_can_read or s.others_can_enter or s.world_writable)
