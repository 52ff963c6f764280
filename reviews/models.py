"""The human-evidence workflow: who may do what, documentation review, overrides, replies.

Two of Opgrade's three evidence streams are human, so this app makes human work
trustworthy:

* **Roles.** Users hold one of five roles (Django groups, see `config.access`). A
  provider user is an outside account tied to exactly one provider by `ProviderMembership`.
* **Documentation review.** A `ReviewAssignment` asks one reviewer for a 0-4 score (with
  citations) of one criterion for one provider in one cycle. Two blind slots (first and
  second) per cycle x provider x criterion; a gap of 2+ points opens a third slot. A
  declared `ConflictOfInterest` (reviewer x provider) blocks assignment. A
  `Reconciliation` records the value used for scoring and keeps links to the raw reviews.
* **Overrides.** A publisher may propose a score override (``ratings.ScoreOverride``, the
  row the engine reads) with a written justification and evidence; a *different* publisher
  must approve it (four eyes, also a DB constraint). The workflow is here, the row in ratings.
* **Provider voice.** `RightOfReply` is a provider's comment on a fact in the draft
  report; `InterviewNote` is an analyst's record of a customer interview.
* **Audit.** Every change to these models, and to rubric and ratings rows (registered
  at the bottom of this module), gets a django-simple-history record; `AuditEvent`
  flattens all of them into one who/when/before/after list for the admin.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from reviews.history import foreign_history_register

SCORE_MIN = 0
SCORE_MAX = 4
DISAGREEMENT_POINTS = 2  # |first - second| >= this sends the criterion to a third reviewer
ALPHA_FLAG_BELOW = 0.667  # Krippendorff's conventional floor for tentative conclusions


class ProviderMembership(models.Model):
    """Ties an external (provider-role) user to the ONE provider they may see."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_membership"
    )
    provider = models.ForeignKey("providers.Provider", on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["provider__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} @ {self.provider}"


class ConflictOfInterest(models.Model):
    """A reviewer's declared conflict with a provider: they are never assigned to it."""

    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conflicts_of_interest"
    )
    provider = models.ForeignKey("providers.Provider", on_delete=models.CASCADE, related_name="conflicts_of_interest")
    declared_at = models.DateTimeField(auto_now_add=True)
    note = models.TextField(blank=True, help_text="What the conflict is (employment, shares, family...).")
    history = HistoricalRecords()

    class Meta:
        ordering = ["-declared_at"]
        verbose_name = "conflict of interest"
        verbose_name_plural = "conflicts of interest"
        constraints = [
            models.UniqueConstraint(fields=["reviewer", "provider"], name="coi_one_per_reviewer_provider"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer} x {self.provider}"


class ReviewAssignment(models.Model):
    """One reviewer's blind 0-4 score of one criterion for one provider in one cycle."""

    class Slot(models.TextChoices):
        FIRST = "first", "First reviewer"
        SECOND = "second", "Second reviewer"
        THIRD = "third", "Third reviewer (disagreement)"

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        SUBMITTED = "submitted", "Submitted"

    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="review_assignments")
    provider = models.ForeignKey("providers.Provider", on_delete=models.PROTECT, related_name="review_assignments")
    criterion = models.ForeignKey("rubric.Criterion", on_delete=models.PROTECT, related_name="review_assignments")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_assignments"
    )
    slot = models.CharField(max_length=8, choices=Slot.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ASSIGNED)
    score = models.PositiveSmallIntegerField(null=True, blank=True, help_text="0 (absent) to 4 (exemplary).")
    citations = models.JSONField(default=list, blank=True, help_text="List of {url, quote} from the docs.")
    notes = models.TextField(blank=True)
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    doc_review = models.OneToOneField(
        "ratings.DocReview", null=True, blank=True, on_delete=models.PROTECT, related_name="assignment",
        help_text="The evidence row the submission wrote (what the scoring engine reads).",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["cycle", "provider", "criterion", "slot"]
        constraints = [
            models.UniqueConstraint(
                fields=["cycle", "provider", "criterion", "slot"], name="assignment_one_reviewer_per_slot"
            ),
            models.UniqueConstraint(
                fields=["cycle", "provider", "criterion", "reviewer"], name="assignment_reviewer_once_per_unit"
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | (Q(score__gte=SCORE_MIN) & Q(score__lte=SCORE_MAX)),
                name="assignment_score_0_4",
            ),
            models.CheckConstraint(
                condition=Q(status="assigned") | (Q(score__isnull=False) & Q(submitted_at__isnull=False)),
                name="assignment_submitted_has_score",
            ),
        ]
        indexes = [models.Index(fields=["reviewer", "status"], name="assignment_reviewer_status")]

    def __str__(self) -> str:
        return f"{self.cycle.slug}/{self.provider.slug}/{self.criterion.key} ({self.slot})"

    @property
    def is_submitted(self) -> bool:
        return self.status == self.Status.SUBMITTED


class Reconciliation(models.Model):
    """The documentation-review value used for scoring, linked to the raw reviews behind it."""

    class Method(models.TextChoices):
        MEAN = "mean", "Mean of two agreeing reviewers"
        MEDIAN = "median", "Median of three reviewers"
        MANUAL = "manual", "Set by an analyst"

    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="reconciliations")
    provider = models.ForeignKey("providers.Provider", on_delete=models.PROTECT, related_name="reconciliations")
    criterion = models.ForeignKey("rubric.Criterion", on_delete=models.PROTECT, related_name="reconciliations")
    value = models.FloatField(help_text="Reconciled score on the 0-4 scale.")
    method = models.CharField(max_length=8, choices=Method.choices)
    reviews = models.ManyToManyField(ReviewAssignment, related_name="reconciliations")
    doc_reviews = models.ManyToManyField(
        "ratings.DocReview", related_name="reconciliations", help_text="The raw reviewers' evidence rows."
    )
    doc_review = models.OneToOneField(
        "ratings.DocReview", null=True, blank=True, on_delete=models.PROTECT, related_name="reconciliation",
        help_text="The reconciled evidence row (is_reconciled) the engine scores.",
    )
    note = models.TextField(blank=True)
    reconciled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords(m2m_fields=[reviews, doc_reviews])

    class Meta:
        ordering = ["cycle", "provider", "criterion"]
        constraints = [
            models.UniqueConstraint(fields=["cycle", "provider", "criterion"], name="reconciliation_one_per_unit"),
            models.CheckConstraint(
                condition=Q(value__gte=SCORE_MIN) & Q(value__lte=SCORE_MAX), name="reconciliation_value_0_4"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cycle.slug}/{self.provider.slug}/{self.criterion.key} = {self.value:g}"


class RightOfReply(models.Model):
    """A provider's comment on a fact in the draft report during fact-check."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ACCEPTED = "accepted", "Accepted (fact corrected)"
        DECLINED = "declined", "Declined (fact stands)"

    provider = models.ForeignKey("providers.Provider", on_delete=models.CASCADE, related_name="replies")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="replies")
    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="replies")
    report = models.ForeignKey(
        "reports.Report", null=True, blank=True, on_delete=models.PROTECT, related_name="replies",
        help_text="The draft report replied to, if any.",
    )
    fact_ref = models.CharField(max_length=200, help_text="Which fact: a finding id, criterion key or section.")
    text = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    response = models.TextField(blank=True, help_text="Opgrade's answer, shown to the provider.")
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "rights of reply"
        constraints = [models.CheckConstraint(condition=~Q(text=""), name="reply_has_text")]

    def __str__(self) -> str:
        return f"{self.provider.slug}: {self.fact_ref}"


class InterviewNote(models.Model):
    """An analyst's notes of a customer interview; the organisation only as a keyed hash."""

    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="interview_notes")
    provider = models.ForeignKey("providers.Provider", on_delete=models.PROTECT, related_name="interview_notes")
    area_or_criterion = models.SlugField(max_length=96, help_text="Area key or criterion key rated.")
    rating = models.PositiveSmallIntegerField(null=True, blank=True, help_text="1-5, when one was given.")
    respondent_org_hash = models.CharField(max_length=64, help_text="HMAC-SHA256 of the organisation name.")
    notes = models.TextField()
    interviewed_on = models.DateField()
    interviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    feedback = models.OneToOneField(
        "ratings.CustomerFeedback", null=True, blank=True, on_delete=models.PROTECT, related_name="interview_note",
        help_text="The rating this interview contributed to the evidence, if one was given.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-interviewed_on"]
        constraints = [
            models.CheckConstraint(
                condition=Q(rating__isnull=True) | (Q(rating__gte=1) & Q(rating__lte=5)), name="interview_rating_1_5"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider.slug} {self.area_or_criterion} {self.interviewed_on}"


class FeedbackImport(models.Model):
    """One customer-feedback CSV import: who, when, which file (by hash), how many rows."""

    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="feedback_imports")
    filename = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    row_count = models.PositiveIntegerField()
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rows = models.ManyToManyField("ratings.CustomerFeedback", related_name="imports", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    rolled_back_at = models.DateTimeField(
        null=True, blank=True, help_text="When the import was rolled back: its rows were deleted as one unit."
    )
    rolled_back_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.row_count} rows)"


class AuditEvent(models.Model):
    """One change anywhere in the audited models, flattened from simple-history records."""

    class Action(models.TextChoices):
        CREATED = "+", "Created"
        CHANGED = "~", "Changed"
        DELETED = "-", "Deleted"

    at = models.DateTimeField(db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150, blank=True, help_text="Kept if the user is deleted.")
    model = models.CharField(max_length=100, db_index=True, help_text="app_label.model")
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    action = models.CharField(max_length=1, choices=Action.choices)
    changes = models.JSONField(default=list, help_text="List of {field, before, after}.")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["model", "object_id"], name="audit_model_object")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.username or '-'} {self.get_action_display()} {self.model}"


class ApiToken(models.Model):
    """An API token of one user, kept as a public prefix and a SHA-256 digest, never in clear.

    The token itself is shown once, to whoever issued it (`reviews.api_tokens`); requests
    find their row by `prefix` (unique index) and compare digests (`reviews.tokens`). A
    revoked token keeps its row (who revoked it and when) and authenticates no more.
    No simple-history here: a history table would copy the digest; the row's own dates are
    the audit trail.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'nightly export script'.")
    prefix = models.CharField(max_length=16, unique=True, editable=False,
                              help_text="The token's first characters: public, tells tokens apart.")
    digest = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"
        constraints = [
            models.CheckConstraint(condition=Q(digest__regex=r"^[0-9a-f]{64}$"), name="apitoken_digest_is_sha256"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


# History for the audited models of the apps below (rubric, providers, ratings, reports) lives
# in this app (see reviews.history); it is registered while models load so that migrations
# and the admin see it.
foreign_history_register()
