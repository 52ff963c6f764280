"""The demo's cast: three providers on three testbed profiles, and the human evidence about them.

Pure data, no Django: who the sample providers are, which testbed profile stands for each, and
what two documentation reviewers would plausibly score each provider on every ``doc_review``
criterion of the default rubric. The scores follow the profiles: ``exemplary`` (Aurora) documents
well and holds a current attestation, ``leaky`` (Borealis) documents little and holds none (so its
security-attestation gate caps it at Silver), ``flaky`` (Cirrus) sits in between, with weak
reliability documentation. The two reviewers differ by at most one point, as careful reviewers
of the same public pages do, so no third reviewer is needed. Customer feedback lives in
``data/sample_feedback.csv`` (imported through the reviews CSV service).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
FEEDBACK_CSV = DATA_DIR / "sample_feedback.csv"


@dataclass(frozen=True)
class DemoProvider:
    name: str
    slug: str
    testbed: str  # testbed name without prefix: 1-10 lowercase letters/digits with the prefix
    profile: str
    website: str
    region: str


PROVIDERS: tuple[DemoProvider, ...] = (
    DemoProvider("Aurora Compute", "aurora-compute", "aurora", "exemplary", "https://aurora-compute.example", "eu-north"),
    DemoProvider("Borealis Cloud", "borealis-cloud", "boreal", "leaky", "https://borealis-cloud.example", "ca-east"),
    DemoProvider("Cirrus GPU", "cirrus-gpu", "cirrus", "flaky", "https://cirrus-gpu.example", "us-west"),
)

# criterion key -> (first reviewer's score, second reviewer's score) per provider slug, 0-4.
DOC_SCORES: dict[str, dict[str, tuple[int, int]]] = {
    "aurora-compute": {
        "onboarding_documentation": (4, 4), "update_process": (3, 4), "sla_with_credits": (4, 3),
        "tested_rollback_path": (3, 3), "break_fix_process": (4, 4), "incident_reports": (3, 4),
        "support_response_time": (4, 4), "managed_dashboards": (4, 3), "active_health_checks": (4, 4),
        "security_attestation": (4, 4), "pentest_fabric": (3, 3), "fabric_isolation": (4, 3),
        "identity_and_audit_logs": (3, 4),
    },
    "borealis-cloud": {
        "onboarding_documentation": (2, 2), "update_process": (1, 1), "sla_with_credits": (1, 2),
        "tested_rollback_path": (0, 1), "break_fix_process": (1, 1), "incident_reports": (0, 0),
        "support_response_time": (2, 1), "managed_dashboards": (1, 2), "active_health_checks": (0, 1),
        "security_attestation": (1, 0), "pentest_fabric": (0, 0), "fabric_isolation": (1, 1),
        "identity_and_audit_logs": (1, 2),
    },
    "cirrus-gpu": {
        "onboarding_documentation": (3, 3), "update_process": (2, 3), "sla_with_credits": (2, 2),
        "tested_rollback_path": (2, 1), "break_fix_process": (2, 2), "incident_reports": (1, 2),
        "support_response_time": (3, 2), "managed_dashboards": (3, 3), "active_health_checks": (2, 2),
        "security_attestation": (3, 3), "pentest_fabric": (2, 2), "fabric_isolation": (3, 3),
        "identity_and_audit_logs": (3, 2),
    },
}

# What a reviewer quotes: one page per criterion on the provider's (fictional, .example) docs site.
DOC_PAGES: dict[str, tuple[str, str]] = {
    "onboarding_documentation": ("docs/getting-started", "Your cluster is ready when you can log in and run sinfo."),
    "update_process": ("docs/maintenance", "Driver and firmware updates are announced in the maintenance calendar."),
    "sla_with_credits": ("legal/sla", "Service credits apply when monthly node availability falls below target."),
    "tested_rollback_path": ("docs/maintenance#rollback", "Every image update ships with a rollback procedure."),
    "break_fix_process": ("docs/support/break-fix", "Report a faulty node through the API; we drain and replace it."),
    "incident_reports": ("status/history", "Post-incident reviews are published for every major incident."),
    "support_response_time": ("docs/support", "Priority tickets receive a first response from an engineer."),
    "managed_dashboards": ("docs/monitoring", "Each tenant gets dashboards for node, job and GPU metrics."),
    "active_health_checks": ("docs/monitoring/health-checks", "Nodes run health checks between jobs."),
    "security_attestation": ("trust", "Our attestation report is available to customers under NDA."),
    "pentest_fabric": ("trust/pentest", "An external firm tests tenant isolation on the fabric."),
    "fabric_isolation": ("docs/networking", "Tenants are separated on the fabric by partition keys."),
    "identity_and_audit_logs": ("docs/security/audit-logs", "Administrative access is logged and kept."),
}

NOTES = {4: "Complete and current.", 3: "Good, a few gaps.", 2: "Partial.", 1: "Mentioned, no substance.", 0: "Absent."}


def citation(provider: DemoProvider, criterion_key: str) -> list[dict[str, str]]:
    """The one citation a demo reviewer gives: a page of the provider's docs and a quote from it."""
    page, quote = DOC_PAGES.get(criterion_key, ("docs", "See the provider documentation."))
    return [{"url": f"{provider.website}/{page}", "quote": quote}]
