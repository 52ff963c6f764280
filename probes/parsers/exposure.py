"""Foreign tenant data exposure: what tenant A's bounded file-system scan reported, judged.

``tenant_data_exposure`` runs, as tenant A on a node, a fixed bash script
(:data:`probes.catalog.tenant_data_exposure.SCAN_SCRIPT`) over the provider's log, spool,
scratch, shared and temp locations. It prints one tab-separated record per line::

    root    open|denied|absent    PATH          # each location: entered, refused, not there
    control planted|unwritable    ROOT          # A's own control files written in a writable root
    victim  R|N   TYPE  MODE  PATH              # an entry owned by B or naming B: readable by A or not
    denied  PATH                                # a directory find could not enter
    hit     PATH  PATTERN                       # PATH (plain, or decompressed) contains PATTERN
    stat    files N  bytes N  partial N         # what was read
    incomplete  REASON                          # a bound (time, files) was hit
    done

The judgement is pure: a file holding one of B's canary nonces or B's user name, and any entry
owned by B or named after B that A can read, is an exposure. A's own control nonce must be found in
every root A could write its control files to (plain and gzip), else the scan did not look
(``controls_missing``), and a scan that hit a bound or never printed ``done`` is incomplete:
both end in ``error``, never ``pass``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from probes.parsers import ParseError

MAX_LISTED = 50


@dataclass(frozen=True)
class Exposure:
    path: str
    why: str  # "canary <nonce>", "names <user>", "owned by <user>", "path names <user>"


@dataclass(frozen=True)
class ExposureScan:
    roots: dict[str, str] = field(default_factory=dict)  # path -> open | denied | absent
    controls_planted: tuple[str, ...] = ()
    controls_found: tuple[str, ...] = ()
    exposures: tuple[Exposure, ...] = ()
    denied_victim: tuple[str, ...] = ()  # B's entries A stat'ed and could not read
    denied_dirs: tuple[str, ...] = ()
    denied_count: int = 0
    files: int = 0
    bytes: int = 0
    partial: int = 0
    incomplete: tuple[str, ...] = ()
    done: bool = False

    @property
    def controls_missing(self) -> tuple[str, ...]:
        return tuple(r for r in self.controls_planted if r not in self.controls_found)

    @property
    def complete(self) -> bool:
        return self.done and not self.incomplete and not self.controls_missing

    def evidence(self) -> dict[str, object]:
        """Every location as checked, denied or absent, what was exposed, and what was read."""
        return {
            "roots": dict(self.roots),
            "controls": {
                r: ("MISSING" if r in self.controls_missing else "found") for r in self.controls_planted
            },
            "exposed": [f"{e.path} ({e.why})" for e in self.exposures[:MAX_LISTED]],
            "exposed_count": len(self.exposures),
            "victim_entries_denied": list(self.denied_victim[:MAX_LISTED]),
            "denied_dirs": list(self.denied_dirs[:MAX_LISTED]),
            "denied_count": self.denied_count,
            "files_read": self.files,
            "bytes_read": self.bytes,
            "files_read_partially": self.partial,
            "incomplete": list(self.incomplete),
        }


def parse_exposure_scan(
    text: str, *, victim_user: str, victim_nonces: Iterable[str], control_nonce: str
) -> ExposureScan:
    """Read the scan's records and judge them (see the module docstring)."""
    nonces = {n for n in victim_nonces if n}
    if not victim_user or not control_nonce:
        raise ParseError("a victim user and a control nonce are needed")
    roots: dict[str, str] = {}
    planted: list[str] = []
    control_hits: set[str] = set()
    exposures: dict[str, Exposure] = {}
    denied_victim: list[str] = []
    denied: list[str] = []
    files = size = partial = 0
    incomplete: list[str] = []
    done = False
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("\t")
        kind = parts[0]
        if kind == "root" and len(parts) == 3:
            roots[parts[2]] = parts[1]
        elif kind == "control" and len(parts) == 3:
            if parts[1] == "planted":
                planted.append(parts[2])
        elif kind == "victim" and len(parts) == 5:
            _, readable, _kind, _mode, path = parts
            if readable == "R":
                why = (
                    f"path names {victim_user}"
                    if victim_user in path.rsplit("/", 1)[-1] or f"/{victim_user}/" in path
                    else f"owned by {victim_user}"
                )
                exposures.setdefault(path, Exposure(path, why))
            else:
                denied_victim.append(path)
        elif kind == "denied" and len(parts) == 2:
            denied.append(parts[1])
        elif kind == "hit" and len(parts) == 3:
            path, pattern = parts[1], parts[2]
            if pattern == control_nonce:
                control_hits.add(path)
                continue
            if "/.opgrade-ctl-" in path:
                continue
            if pattern in nonces:
                exposures[path] = Exposure(path, f"canary {pattern}")
            elif pattern == victim_user:
                exposures.setdefault(path, Exposure(path, f"names {victim_user}"))
        elif kind == "stat" and len(parts) == 7:
            try:
                files, size, partial = int(parts[2]), int(parts[4]), int(parts[6])
            except ValueError as exc:
                raise ParseError(f"bad stat line {line!r}") from exc
        elif kind == "incomplete" and len(parts) >= 2:
            incomplete.append(" ".join(parts[1:]))
        elif kind == "done":
            done = True
        elif kind in ("me", "note"):
            continue
        else:
            raise ParseError(f"not a scan record: {line[:200]!r}")
    # a root's control is found when the scan read both its plain and its gzip control file
    found = {
        r
        for r in planted
        if {
            f"{r.rstrip('/')}/.opgrade-ctl-{control_nonce}.txt",
            f"{r.rstrip('/')}/.opgrade-ctl-{control_nonce}.gz",
        }
        <= control_hits
    }
    return ExposureScan(
        roots=roots,
        controls_planted=tuple(dict.fromkeys(planted)),
        controls_found=tuple(sorted(found)),
        exposures=tuple(sorted(exposures.values(), key=lambda e: e.path)),
        denied_victim=tuple(denied_victim),
        denied_dirs=tuple(denied[:MAX_LISTED]),
        denied_count=len(denied),
        files=files,
        bytes=size,
        partial=partial,
        incomplete=tuple(incomplete),
        done=done,
    )
