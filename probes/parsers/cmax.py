"""SemiAnalysis's ``cmax audit`` results (``audit.values.json``, schema_version 1) as Opgrade findings.

``clustermax`` 0.2.1 writes the values file the report is rendered from. The security profile
fills ``audit_data.securityVersions`` (one entry per component: ``status`` pass/fail/unknown/
not_applicable against ClusterMAX's published minimum) and ``audit_data.security`` (kernel,
BMC/IPMI, CVE exposure checks). This module flattens those into :class:`CmaxCheck` rows with a
normalised status, and computes ``pass_ratio`` = passes / (passes + fails + warnings): checks that
were skipped, not applicable or could not be assessed are excluded, as the domain's outcome
table excludes "could not measure".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from probes.parsers import ParseError

SCHEMA_VERSION = 1
_STATUS = {
    "pass": "pass",
    "ok": "pass",
    "passed": "pass",
    "not-exposed": "pass",
    "patched": "pass",
    "fail": "fail",
    "failed": "fail",
    "exposed": "fail",
    "vulnerable": "fail",
    "warn": "warn",
    "warning": "warn",
    "unknown": "unknown",
    "": "unknown",
    "not_applicable": "not_applicable",
    "not-applicable": "not_applicable",
    "n/a": "not_applicable",
    "skipped": "not_applicable",
}
# Checks a failure of which is critical in ClusterMAX's own grading.
CRITICAL_CHECKS = frozenset({"security.guestKernel.newerInstalled", "security.bmcIpmi.exposed"})


@dataclass(frozen=True)
class CmaxCheck:
    check_id: str
    status: str  # pass | fail | warn | unknown | not_applicable
    observed: str
    critical: bool = False


@dataclass(frozen=True)
class CmaxAudit:
    schema_version: int
    hostname: str
    audit_type: str
    checks: tuple[CmaxCheck, ...]

    def count(self, status: str) -> int:
        return sum(1 for c in self.checks if c.status == status)

    @property
    def pass_ratio(self) -> float | None:
        decided = self.count("pass") + self.count("fail") + self.count("warn")
        return None if decided == 0 else self.count("pass") / decided

    @property
    def critical_failures(self) -> tuple[CmaxCheck, ...]:
        return tuple(c for c in self.checks if c.critical and c.status == "fail")


def _status(raw: Any) -> str:
    return _STATUS.get(str(raw).strip().lower(), "unknown")


def _bool_check(check_id: str, bad: Any, observed: str) -> CmaxCheck:
    status = "unknown" if bad is None else ("fail" if bad else "pass")
    return CmaxCheck(check_id, status, observed, critical=check_id in CRITICAL_CHECKS)


def parse_audit_values(body: str | bytes) -> CmaxAudit:
    try:
        doc = json.loads(body)
    except (TypeError, ValueError) as exc:
        raise ParseError(f"audit.values.json is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("schema_version") != SCHEMA_VERSION:
        raise ParseError(
            f"unsupported audit.values.json schema_version {doc.get('schema_version') if isinstance(doc, dict) else None!r}"
        )
    data: Mapping[str, Any] = doc.get("audit_data") or {}
    audit = data.get("audit") or {}
    checks: list[CmaxCheck] = []
    for component, entry in sorted((data.get("securityVersions") or {}).items()):
        if not isinstance(entry, dict) or "status" not in entry:
            continue  # floorsMetadata and other bookkeeping
        observed = f"observed {entry.get('version', 'unknown')}; minimum {entry.get('minimum', '?')}"
        checks.append(CmaxCheck(f"securityVersions.{component}.status", _status(entry["status"]), observed))
    security = data.get("security") or {}
    kernel = security.get("guestKernel") or {}
    if kernel:
        checks.append(
            _bool_check(
                "security.guestKernel.newerInstalled",
                kernel.get("newerInstalled"),
                f"running {kernel.get('running')}; newest installed {kernel.get('newestInstalled')}",
            )
        )
    bmc = security.get("bmcIpmi") or {}
    if bmc:
        checks.append(
            _bool_check(
                "security.bmcIpmi.exposed",
                bmc.get("exposed"),
                f"user access {bmc.get('userAccess')}; sudo access {bmc.get('sudoAccess')}",
            )
        )
    for name in ("fragnesia", "januscape", "vmscape", "qemuCve20243446"):
        entry = security.get(name)
        if isinstance(entry, dict) and "status" in entry:
            checks.append(
                CmaxCheck(
                    f"security.{name}.status",
                    _status(entry["status"]),
                    f"{entry.get('cve', '')} status {entry['status']}".strip(),
                )
            )
    return CmaxAudit(
        schema_version=doc["schema_version"],
        hostname=str(audit.get("hostname", "")),
        audit_type=str(audit.get("type", "")),
        checks=tuple(checks),
    )


# -- cmax's own per-check verdicts (the full audit), mapped to Opgrade's rubric ---------------------

_CMAX_OUTCOME = {
    "pass": "pass",
    "fail": "fail",
    "warning": "warn",
    "warn": "warn",
    "skipped": "not_applicable",
}


@dataclass(frozen=True)
class CheckMapping:
    """Where one cmax check lands in Opgrade: the rubric criterion asking the same question (or
    none: unmapped), whether it concerns the GPU/fabric stack, and whether ClusterMAX grades its
    failure critical."""

    criterion: str | None
    gpu: bool = False
    critical: bool = False


@dataclass(frozen=True)
class GradedCheck:
    check_id: str
    title: str
    category: str
    cmax_status: str  # as cmax graded it: pass | fail | warning | skipped
    outcome: str  # Opgrade's: pass | fail | warn | not_applicable
    criterion: str  # rubric criterion key, or "unmapped"
    observed: str
    critical: bool = False
    note: str = ""

    def as_evidence(self) -> dict[str, Any]:
        row = {
            "id": self.check_id,
            "category": self.category,
            "cmax": self.cmax_status,
            "outcome": self.outcome,
            "criterion": self.criterion,
            "observed": self.observed[:160],
        }
        if self.critical:
            row["critical"] = True
        if self.note:
            row["note"] = self.note
        return row


_RANK = {"skipped": 0, "pass": 1, "warning": 2, "warn": 2, "fail": 3}


def grade_checks(
    bodies: str | bytes | Sequence[str | bytes], mapping: Mapping[str, CheckMapping], *, gpu_cluster: bool
) -> tuple[GradedCheck, ...]:
    """``{"checks": [{id, title, category, status, observed}, ...]}`` (cmax's ``evaluate`` output,
    see probes/catalog/_cmax_checks.py) -> one graded row per check. Several runs' outputs (the
    full audit and the security profile) merge per check: a decided verdict beats a skip, and of
    two decided ones the worse stands.

    A GPU/fabric check on a cluster without GPUs is not_applicable whatever cmax said (cmax sees
    the host's toolkit or reports "unknown" there); a check Opgrade's mapping does not know yet is
    kept and marked ``unmapped`` with a note, never dropped.
    """
    merged: dict[str, dict[str, Any]] = {}
    for body in [bodies] if isinstance(bodies, str | bytes) else bodies:
        try:
            rows = json.loads(body)["checks"]
        except (TypeError, ValueError, KeyError) as exc:
            raise ParseError(f"not cmax's per-check verdicts: {exc}") from exc
        if not isinstance(rows, list):
            raise ParseError("cmax checks: 'checks' is not a list")
        for row in rows:
            if not isinstance(row, dict) or "id" not in row or "status" not in row:
                raise ParseError(f"cmax checks: malformed row {row!r:.120}")
            status = str(row["status"]).lower()
            if status not in _CMAX_OUTCOME:
                raise ParseError(f"cmax checks: unknown status {status!r} for {row['id']}")
            seen = merged.get(str(row["id"]))
            if seen is None or _RANK[status] > _RANK[str(seen["status"]).lower()]:
                merged[str(row["id"])] = row
    out = []
    for row in merged.values():
        check_id, status = str(row["id"]), str(row["status"]).lower()
        known = mapping.get(check_id)
        outcome, note = _CMAX_OUTCOME[status], ""
        if known is None:
            note = "not in Opgrade's mapping (probes/thresholds/cmax_checks.yaml): a check newer than it"
        elif known.gpu and not gpu_cluster:
            outcome, note = "not_applicable", "GPU/fabric check on a cluster without GPUs"
        out.append(
            GradedCheck(
                check_id=check_id,
                title=str(row.get("title", "")),
                category=str(row.get("category", "")),
                cmax_status=status,
                outcome=outcome,
                criterion=(known.criterion if known and known.criterion else "unmapped"),
                observed=str(row.get("observed", "")),
                critical=bool(known and known.critical and outcome == "fail"),
                note=note,
            )
        )
    return tuple(sorted(out, key=lambda c: c.check_id))


def pass_ratio(checks: tuple[GradedCheck, ...]) -> float | None:
    """Passes over the checks cmax passed or failed; None when it decided none. cmax's warnings
    (a version it could not read, a setting that needs the provider's attestation) are kept
    per check but are neither a pass nor a fail."""
    decided = [c for c in checks if c.outcome in ("pass", "fail")]
    return None if not decided else sum(c.outcome == "pass" for c in decided) / len(decided)
