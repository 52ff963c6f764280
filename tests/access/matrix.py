"""The declared access matrix: for every non-admin route, which roles may use each method.

Keys are routes as the URL resolver spells them, normalised: regex groups become
``<name>``, ``^``/``$`` are dropped, and a DRF format-suffix variant (``.json``) shares
its base route's entry. A route with no entry here fails the matrix test with the exact
key to add, so a new endpoint cannot ship without someone deciding who may use it.

`obj` names the object of provider B (or of another reviewer) that fills the route's
URL parameters; roles in `hidden_from` (and always the provider role, for B's objects)
must get 403/404 for it even when allowed on the endpoint. `public` routes serve
published material to anyone by design; their bodies are still checked for B's
*private* markers. Admin pages have their own table (ADMIN_ACCESS).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ANON, ANALYST, REVIEWER, PUBLISHER, ADMIN, PROVIDER = (
    "anonymous", "analyst", "reviewer", "publisher", "admin", "provider",
)
STAFF = frozenset({ANALYST, REVIEWER, PUBLISHER, ADMIN})
SIGNED_IN = frozenset({*STAFF, PROVIDER})
EVERYONE = frozenset({ANON, *SIGNED_IN})
READERS = frozenset({ANALYST, PUBLISHER, ADMIN})  # staff who read everything
RUNNERS = frozenset({ANALYST, ADMIN})  # staff who run cycles
NOBODY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Entry:
    methods: dict[str, frozenset[str]]
    obj: str | None = None
    kwargs: dict[str, str] = field(default_factory=dict)
    hidden_from: frozenset[str] = NOBODY
    public: bool = False
    provider_owned: bool = True  # obj belongs to provider B (provider role must not get it)
    # A bug the matrix found in code owned elsewhere, on the route's DRF format-suffix
    # variant (``.json``) only: that variant's test is xfail until it is fixed.
    format_defect: str = ""


def _get(roles: frozenset[str], **kw: object) -> Entry:
    return Entry(methods={"GET": roles}, **kw)  # type: ignore[arg-type]


ACCESS: dict[str, Entry] = {
    # --- API roots and schema ----------------------------------------------------------
    "api/v1/": _get(STAFF),
    # The schema describes endpoints, not data; provider users may read it for the replies API.
    "api/schema/": _get(SIGNED_IN),
    "api/docs/": _get(SIGNED_IN),
    "api-auth/login/": Entry(methods={"GET": EVERYONE, "POST": EVERYONE, "PUT": EVERYONE}, public=True),
    "api-auth/logout/": Entry(methods={"POST": EVERYONE}, public=True),
    "healthz": _get(EVERYONE, public=True),
    # --- rubric (the rubric is the published method; staff read, runners write) ------------
    "api/v1/rubric-versions/": _get(STAFF),
    "api/v1/rubric-versions/import/": Entry(methods={"POST": RUNNERS}),
    "api/v1/rubric-versions/<pk>/": Entry(
        methods={"GET": STAFF, "PUT": RUNNERS, "PATCH": RUNNERS}, obj="rubric_version", provider_owned=False
    ),
    "api/v1/rubric-versions/<pk>/clone/": Entry(
        methods={"POST": RUNNERS}, obj="rubric_version", provider_owned=False
    ),
    "api/v1/rubric-versions/<pk>/diff/": _get(STAFF, obj="rubric_version", provider_owned=False),
    "api/v1/rubric-versions/<pk>/export/": _get(STAFF, obj="rubric_version", provider_owned=False),
    "api/v1/rubric-versions/<pk>/freeze/": Entry(
        methods={"POST": RUNNERS}, obj="rubric_version", provider_owned=False
    ),
    "api/v1/criteria/": _get(STAFF),
    "api/v1/criteria/<pk>/": Entry(
        methods={"GET": STAFF, "PUT": RUNNERS, "PATCH": RUNNERS}, obj="criterion", provider_owned=False
    ),
    # --- ratings: providers, clusters, cycles (staff only; providers use the portal) -------
    "api/v1/providers/": _get(STAFF),
    "api/v1/providers/<slug>/": _get(STAFF, obj="b", provider_owned=True),
    "api/v1/clusters/": _get(STAFF),
    "api/v1/clusters/<pk>/": _get(STAFF, obj="b_cluster"),
    "api/v1/cycles/": _get(STAFF),
    "api/v1/cycles/<slug>/": _get(STAFF, obj="cycle_b_only"),
    # Score snapshots and tiers: staff only until published (reports serve the public copy).
    "api/v1/score-snapshots/": _get(STAFF),
    "api/v1/score-snapshots/<pk>/": _get(STAFF, obj="snapshot"),
    "api/v1/tier-assignments/": _get(STAFF),
    "api/v1/tier-assignments/<pk>/": _get(STAFF, obj="b_tier_assignment"),
    # --- probes: runs, findings, tenant accounts (secrets write-only) ----------------------
    "api/v1/probe-runs/": _get(STAFF),
    "api/v1/probe-runs/start/": Entry(methods={"POST": RUNNERS}),
    "api/v1/probe-runs/<pk>/": _get(STAFF, obj="b_probe_run"),
    "api/v1/findings/": _get(STAFF),
    "api/v1/findings/<pk>/": _get(STAFF, obj="b_finding"),
    "api/v1/tenant-accounts/": Entry(methods={"GET": STAFF, "POST": RUNNERS}),
    "api/v1/tenant-accounts/<pk>/": _get(STAFF, obj="b_tenant_account"),
    # --- grades (issue 17): definitions and price observations, staff readers read, runners record ---
    "api/v1/grade-definitions/": _get(READERS),
    "api/v1/grade-definitions/<pk>/": _get(READERS, obj="grade", provider_owned=False),
    "api/v1/grade-definitions/<pk>/export/": _get(READERS, obj="grade", provider_owned=False),
    "api/v1/grade-definitions/<pk>/index/": _get(READERS, obj="grade", provider_owned=False),
    "api/v1/price-observations/": Entry(methods={"GET": READERS, "POST": RUNNERS}),
    "api/v1/price-observations/<pk>/": _get(READERS, obj="b_price_observation"),
    # --- costs: prices (runners write, staff readers read) and a cycle's live costs ----------
    "api/v1/cluster-prices/": Entry(methods={"GET": READERS, "POST": RUNNERS}),
    "api/v1/cluster-prices/<pk>/": Entry(
        methods={"GET": READERS, "PUT": RUNNERS, "PATCH": RUNNERS}, obj="b_price"
    ),
    "api/v1/cycle-costs/<cycle_slug>/": _get(READERS, obj="cycle", provider_owned=False),
    # --- reports API (drafts: staff with report permissions) ------------------------------
    "api/v1/reports/": Entry(methods={"GET": frozenset({ANALYST, PUBLISHER, ADMIN}),
                                      "POST": frozenset({ANALYST, PUBLISHER, ADMIN})}),
    "api/v1/reports/<pk>/": _get(frozenset({ANALYST, PUBLISHER, ADMIN}), obj="b_report"),
    # correct/withdraw: analysts pass the API check and are refused by the service (400 on an
    # empty body, 403 with a valid one); only publishers publish.
    "api/v1/reports/<pk>/correct/": Entry(methods={"POST": frozenset({ANALYST, PUBLISHER, ADMIN})}, obj="b_report"),
    "api/v1/reports/<pk>/fact-check/": Entry(methods={"POST": frozenset({ANALYST, PUBLISHER, ADMIN})},
                                             obj="b_report"),
    "api/v1/reports/<pk>/publish/": Entry(methods={"POST": frozenset({PUBLISHER, ADMIN})}, obj="b_report"),
    "api/v1/reports/<pk>/withdraw/": Entry(methods={"POST": frozenset({ANALYST, PUBLISHER, ADMIN})},
                                           obj="b_report"),
    # --- reviews ---------------------------------------------------------------------------
    "api/v1/agreement/<cycle_slug>/": _get(READERS, obj="cycle", provider_owned=False),
    "api/v1/conflicts/": Entry(methods={"GET": STAFF, "POST": frozenset({ANALYST, REVIEWER, ADMIN})}),
    "api/v1/conflicts/<pk>/": _get(STAFF, obj="b_conflict", hidden_from=frozenset({REVIEWER})),
    "api/v1/assignments/": Entry(methods={"GET": STAFF, "POST": RUNNERS}),
    "api/v1/assignments/<pk>/": _get(STAFF, obj="b_assignment_other", hidden_from=frozenset({REVIEWER})),
    "api/v1/assignments/<pk>/submit/": Entry(
        methods={"POST": frozenset({REVIEWER})}, obj="b_assignment_other", hidden_from=frozenset({REVIEWER})
    ),
    "api/v1/reconciliations/": Entry(methods={"GET": READERS, "POST": RUNNERS}),
    "api/v1/reconciliations/<pk>/": _get(READERS, obj="b_reconciliation"),
    "api/v1/overrides/": Entry(methods={"GET": READERS, "POST": frozenset({PUBLISHER})}),
    "api/v1/overrides/<pk>/": _get(READERS, obj="b_override"),
    "api/v1/overrides/<pk>/approve/": Entry(methods={"POST": frozenset({PUBLISHER})}, obj="b_override"),
    "api/v1/overrides/<pk>/reject/": Entry(methods={"POST": frozenset({PUBLISHER})}, obj="b_override"),
    "api/v1/feedback-imports/": Entry(methods={"GET": READERS, "POST": RUNNERS}),
    "api/v1/feedback-imports/<pk>/": _get(READERS, obj="b_feedback_import"),
    "api/v1/interview-notes/": Entry(methods={"GET": READERS, "POST": RUNNERS}),
    "api/v1/interview-notes/<pk>/": _get(READERS, obj="b_interview"),
    "api/v1/replies/": Entry(methods={"GET": frozenset({*READERS, PROVIDER}), "POST": frozenset({PROVIDER})}),
    "api/v1/replies/<pk>/": _get(frozenset({*READERS, PROVIDER}), obj="b_reply"),
    "api/v1/replies/<pk>/respond/": Entry(methods={"POST": READERS}, obj="b_reply"),
    "api/v1/audit-events/": _get(READERS),
    "api/v1/audit-events/<pk>/": _get(READERS, obj="audit_event", provider_owned=False),
    # --- provider portal ---------------------------------------------------------------------
    "portal/": _get(frozenset({PROVIDER})),
    "portal/login/": Entry(methods={"GET": EVERYONE, "POST": EVERYONE, "PUT": EVERYONE}, public=True),
    "portal/logout/": Entry(methods={"POST": EVERYONE}, public=True),
    "portal/cycles/<cycle_slug>/": _get(frozenset({PROVIDER}), obj="cycle_b_only"),
    "portal/cycles/<cycle_slug>/replies/": Entry(methods={"POST": frozenset({PROVIDER})}, obj="cycle_b_only"),
    # A provider user's own API tokens; B's token id is a 404 for provider A.
    "portal/tokens/": Entry(methods={"GET": frozenset({PROVIDER}), "POST": frozenset({PROVIDER})}),
    "portal/tokens/<pk>/rotate/": Entry(methods={"POST": frozenset({PROVIDER})}, obj="b_api_token"),
    "portal/tokens/<pk>/revoke/": Entry(methods={"POST": frozenset({PROVIDER})}, obj="b_api_token"),
    # --- public report pages (published material only; drafts are 404 for everyone) ---------
    "": _get(EVERYONE, public=True),
    "llms.txt": _get(EVERYONE, public=True),
    "reports/": _get(EVERYONE, public=True),
    "reports/<pk>/": _get(NOBODY, obj="b_report", public=True),
    "reports/<pk>/report.json": _get(NOBODY, obj="b_report", public=True),
    "reports/<pk>/report.pdf": _get(NOBODY, obj="b_report", public=True),
    "reports/<pk>/<table>.csv": _get(NOBODY, obj="b_report", kwargs={"table": "tiers"}, public=True),
    "reports/<pk>/providers/<slug>/": _get(NOBODY, obj="b_report", kwargs={"slug": "bravo"}, public=True),
    "reports/<pk>/providers/<slug>.txt": _get(NOBODY, obj="b_report", kwargs={"slug": "bravo"}, public=True),
    "reports/<pk>/charts/<chart>/<slug>.svg": _get(
        NOBODY, obj="b_report", kwargs={"chart": "tiers", "slug": "bravo"}, public=True
    ),
    "reports/<pk>/costs/": _get(NOBODY, obj="b_report", public=True),
    "reports/<pk>/cost-curve.svg": _get(NOBODY, obj="b_report", public=True),
    # The world's rubric is a draft: its methodology page is not public yet.
    "methodology/<name>/<version>/": _get(
        NOBODY, obj="rubric_version", kwargs={"name": "opgrade", "version": "__rubric_version__"}, public=True,
        provider_owned=False,
    ),
    "api/public/reports/": _get(EVERYONE, public=True),
    "api/public/reports/<pk>/": _get(NOBODY, obj="b_report", public=True),
    # --- the cycle workbench (admin pages of workbench/): readers see all of a cycle, runners
    # act, reviewers get only their own assignments there, provider accounts never get in ----
    "admin/workbench/": _get(STAFF),
    "admin/workbench/<slug>/": _get(STAFF, obj="cycle", provider_owned=False),
    "admin/workbench/<slug>/probes/": Entry(methods={"POST": RUNNERS}, obj="cycle", provider_owned=False),
    "admin/workbench/<slug>/tiers/": Entry(
        methods={"GET": READERS, "POST": RUNNERS}, obj="cycle", provider_owned=False
    ),
    "admin/workbench/<slug>/report/": Entry(methods={"POST": RUNNERS}, obj="cycle", provider_owned=False),
    "admin/workbench/<slug>/feedback/": Entry(
        methods={"GET": READERS, "POST": RUNNERS}, obj="cycle", provider_owned=False
    ),
    "admin/workbench/<slug>/reviews/": Entry(
        methods={"GET": READERS, "POST": RUNNERS}, obj="cycle", provider_owned=False
    ),
    "admin/workbench/reports/<pk>/preview/": _get(READERS, obj="b_report"),
    # cluster onboarding (issue 15.3): readers see the overview and the evidence checklist; only
    # runners open the steps (forms) and act; reviewers and provider accounts never get in
    "admin/workbench/clusters/<pk>/onboard/": _get(READERS, obj="b_cluster"),
    "admin/workbench/clusters/<pk>/onboard/evidence/": _get(READERS, obj="b_cluster"),
    **{
        f"admin/workbench/clusters/<pk>/onboard/{step}/": Entry(
            methods={"GET": RUNNERS, "POST": RUNNERS}, obj="b_cluster"
        )
        for step in ("access", "tenants", "hostkeys", "settings", "check")
    },
}


@dataclass(frozen=True)
class AdminEntry:
    """Which roles may open a model's admin changelist, and whose rows they see."""

    view: frozenset[str]
    # roles that see only their own rows: the seeded object (another user's) is not theirs
    own_rows_only: frozenset[str] = NOBODY


_STAFF_VIEW = AdminEntry(view=frozenset({ANALYST, PUBLISHER, ADMIN}))
_ADMIN_ONLY = AdminEntry(view=frozenset({ADMIN}))

ADMIN_ACCESS: dict[str, AdminEntry] = {
    "auth.group": _ADMIN_ONLY,
    # django-axes: login attempts and lockouts (admins unlock accounts here).
    "axes.accessattempt": _ADMIN_ONLY,
    "axes.accessfailurelog": _ADMIN_ONLY,
    "axes.accesslog": _ADMIN_ONLY,
    "auth.user": _ADMIN_ONLY,
    "django_celery_beat.clockedschedule": _STAFF_VIEW,
    "django_celery_beat.crontabschedule": _STAFF_VIEW,
    "django_celery_beat.intervalschedule": _STAFF_VIEW,
    "django_celery_beat.periodictask": _STAFF_VIEW,
    "django_celery_beat.solarschedule": _STAFF_VIEW,
    "rubric.rubricversion": _STAFF_VIEW,
    "rubric.area": _STAFF_VIEW,
    "rubric.criterion": AdminEntry(view=frozenset({ANALYST, REVIEWER, PUBLISHER, ADMIN})),
    "providers.provider": _STAFF_VIEW,
    "providers.cluster": _STAFF_VIEW,
    "providers.cycle": _STAFF_VIEW,
    # Reviewers must not open doc reviews here: that list would show their peers' scores.
    "ratings.docreview": _STAFF_VIEW,
    "ratings.customerfeedback": _STAFF_VIEW,
    "ratings.scoresnapshot": _STAFF_VIEW,
    "ratings.tierassignment": _STAFF_VIEW,
    # Probe access (credentials are write-only in these pages; never rendered).
    "probes.clusteraccess": _STAFF_VIEW,
    "probes.tenantaccount": _STAFF_VIEW,
    "probes.hostkeypin": _STAFF_VIEW,
    "probes.hostcapin": _STAFF_VIEW,  # pinned only through the ClusterAccess action (tests/probes/test_host_ca_pin.py)
    "probes.probeschedule": _STAFF_VIEW,
    "probes.proberun": _STAFF_VIEW,
    "probes.finding": _STAFF_VIEW,
    "costs.clusterprice": _STAFF_VIEW,
    "grades.gradedefinition": _STAFF_VIEW,
    "grades.priceobservation": _STAFF_VIEW,
    "reports.report": _STAFF_VIEW,
    "reports.reportsource": _STAFF_VIEW,
    "reviews.providermembership": _STAFF_VIEW,
    "reviews.conflictofinterest": AdminEntry(
        view=frozenset({ANALYST, REVIEWER, PUBLISHER, ADMIN}), own_rows_only=frozenset({REVIEWER})
    ),
    "reviews.reviewassignment": AdminEntry(
        view=frozenset({ANALYST, REVIEWER, PUBLISHER, ADMIN}), own_rows_only=frozenset({REVIEWER})
    ),
    "reviews.reconciliation": _STAFF_VIEW,
    "ratings.scoreoverride": _STAFF_VIEW,
    "reviews.rightofreply": _STAFF_VIEW,
    "reviews.interviewnote": _STAFF_VIEW,
    "reviews.feedbackimport": _STAFF_VIEW,
    "reviews.auditevent": _STAFF_VIEW,
    # API tokens: prefix, owner and dates only (never the token or its digest); admins only.
    "reviews.apitoken": _ADMIN_ONLY,
}
