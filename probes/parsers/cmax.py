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
from collections.abc import Mapping
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
