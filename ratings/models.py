"""Evidence (doc reviews, customer feedback) and scores of a rating cycle.

A Cycle (``providers.Cycle``) rates one peer set of providers under exactly one frozen
rubric version; all its evidence and scores name that version, so methods never mix
inside a cycle.

Evidence: a ``DocReview`` is one reviewer's 0-4 score of one criterion with citations; a
``CustomerFeedback`` is one respondent's 1-5 rating of an area or a criterion, with the
respondent's organisation kept only as a keyed hash. Probe evidence is ``probes.Finding``.
Scores: a ``ScoreSnapshot`` is one immutable run of the scoring engine over a cycle (inputs
hash, rubric version, engine version, seed, the canonical result and its hash), and a
``TierAssignment`` is one provider's row of it. Snapshots are never updated or deleted: the
models refuse it and so does a database trigger (migration 0002).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q

from config.immutability import ImmutableModel
from providers.models import Cycle, Provider
from rubric import spec


# ------------------------------------------------------------------------------------ evidence
def validate_citations(value: Any) -> None:
    """At least one citation, each a dict with an http(s) ``url`` and a non-empty ``quote``."""
    if not isinstance(value, list) or not value:
        raise ValidationError("at least one citation ({url, quote}) is required")
    for i, item in enumerate(value, start=1):
        if not isinstance(item, dict) or set(item) - {"url", "quote"}:
            raise ValidationError(f"citation {i}: must be an object with url and quote only")
        url, quote = item.get("url"), item.get("quote")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")) or len(url) > 2000:
            raise ValidationError(f"citation {i}: url must be an http(s) URL")
        if not isinstance(quote, str) or not quote.strip() or len(quote) > 5000:
            raise ValidationError(f"citation {i}: quote must be non-empty text")


def respondent_org_hash(org: str) -> str:
    """HMAC-SHA256 of a respondent organisation, keyed with settings.OPGRADE_PSEUDONYM_KEY.

    Same normalisation as reviews.feedback_csv.org_pseudonym (collapsed whitespace, casefold),
    so survey imports and hand-entered feedback hash one organisation alike. The plain name is
    never stored.
    """
    normalised = " ".join(org.split()).casefold()
    if not normalised:
        raise ValueError("respondent organisation is empty")
    return hmac.new(settings.OPGRADE_PSEUDONYM_KEY.encode(), normalised.encode(), hashlib.sha256).hexdigest()


SHA256_HEX = RegexValidator(r"^[0-9a-f]{64}$", "a lowercase hex sha256")


class DocReview(models.Model):
    """One reviewer's 0-4 score of one criterion for one provider in one cycle, with citations.

    ``is_reconciled`` marks the value the reviewers settled on (at most one current one per
    criterion): when present the engine scores it instead of the reviewers' median.

    A stored review changes only through ``ratings.services.doc_review_change``, which records
    who, when and why (the audit history) and, when a reviewer's score changes after a
    reconciliation, marks that reconciliation ``superseded``: the engine then ignores it until a
    new one is recorded. ``save()`` on an existing row is refused otherwise.
    """

    cycle = models.ForeignKey(Cycle, on_delete=models.PROTECT, related_name="doc_reviews")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="doc_reviews")
    criterion = models.ForeignKey("rubric.Criterion", on_delete=models.PROTECT, related_name="doc_reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="doc_reviews")
    score = models.FloatField(help_text="0 (absent) to 4 (exemplary).")
    is_reconciled = models.BooleanField(default=False, help_text="The reconciled value of this criterion.")
    citations = models.JSONField(validators=[validate_citations], help_text="List of {url, quote}; at least one.")
    notes = models.TextField(blank=True)
    superseded = models.BooleanField(
        default=False,
        help_text="A reconciled value made stale by a later change of a reviewer's score: a new reconciliation is needed.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cycle", "provider", "criterion", "-is_reconciled", "reviewer"]
        constraints = [
            models.CheckConstraint(condition=Q(score__gte=0) & Q(score__lte=4), name="docreview_score_0_4"),
            models.UniqueConstraint(
                fields=["cycle", "provider", "criterion", "reviewer"], condition=Q(is_reconciled=False),
                name="docreview_one_per_reviewer",
            ),
            models.UniqueConstraint(
                fields=["cycle", "provider", "criterion"], condition=Q(is_reconciled=True, superseded=False),
                name="docreview_one_reconciled",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.criterion} for {self.provider}: {self.score:g}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding and not getattr(self, "_change_via_service", False):
            raise DocReviewChangeRefused(
                "a stored documentation review changes only through ratings.services.doc_review_change "
                "(who, when and why are recorded; a reconciliation it invalidates is marked superseded)"
            )
        super().save(*args, **kwargs)


class DocReviewChangeRefused(ValidationError):
    """A direct save() of a stored DocReview: use ``doc_review_change``."""


class CustomerFeedback(models.Model):
    """One respondent's 1-5 rating of a provider on one area or one criterion."""

    class Source(models.TextChoices):
        SURVEY = "survey", "Survey"
        INTERVIEW = "interview", "Interview"

    cycle = models.ForeignKey(Cycle, on_delete=models.PROTECT, related_name="customer_feedback")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="customer_feedback")
    area = models.ForeignKey(
        "rubric.Area", null=True, blank=True, on_delete=models.PROTECT, related_name="customer_feedback"
    )
    criterion = models.ForeignKey(
        "rubric.Criterion", null=True, blank=True, on_delete=models.PROTECT, related_name="customer_feedback"
    )
    rating = models.PositiveSmallIntegerField(help_text="1 (poor) to 5 (excellent).")
    source = models.CharField(max_length=10, choices=Source.choices)
    respondent_org_hash = models.CharField(
        max_length=64, validators=[SHA256_HEX], help_text="HMAC-SHA256 of the organisation; never the name."
    )
    comment = models.TextField(blank=True)
    answered_on = models.DateField(
        null=True, blank=True, help_text="When the customer answered (the survey export's date column)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cycle", "provider", "id"]
        verbose_name_plural = "customer feedback"
        constraints = [
            models.CheckConstraint(condition=Q(rating__gte=1) & Q(rating__lte=5), name="customerfeedback_rating_1_5"),
            models.CheckConstraint(
                condition=Q(area__isnull=True, criterion__isnull=False) | Q(area__isnull=False, criterion__isnull=True),
                name="customerfeedback_area_xor_criterion",
            ),
            models.UniqueConstraint(
                fields=["cycle", "provider", "criterion", "respondent_org_hash", "source"],
                condition=Q(area__isnull=True), name="customerfeedback_one_per_respondent_criterion",
            ),
            models.UniqueConstraint(
                fields=["cycle", "provider", "area", "respondent_org_hash", "source"],
                condition=Q(criterion__isnull=True), name="customerfeedback_one_per_respondent_area",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.area or self.criterion}: {self.rating}"


class ScoreOverride(models.Model):
    """A publisher's change to one criterion score; counts only once another publisher approves.

    The row is evidence the engine reads, so it lives here with the rules of writing it
    (``ratings.services.score_override_propose`` / ``score_override_decide``); the four-eyes
    workflow that calls them is ``reviews.services`` (audited from there, see reviews.history).

    `value` is the normalised criterion score in [0, 1] (the scale the engine combines),
    so an override means the same thing whichever evidence kind fed the criterion.

    A gate criterion failed by a critical finding is overridden only as "measurement was
    wrong" (``reason``), with a later finding that shows it (``evidence_finding``), naming the
    critical findings it disputes (``disputed_findings``, recorded at proposal) and approved
    by two publishers other than the proposer (``decided_by`` then ``second_decided_by``;
    status ``confirming`` in between). Every other override of such a gate is refused, and
    the engine keeps the cap for any override short of this (``CriterionOverride.lifts_critical``).
    """

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        CONFIRMING = "confirming", "Approved once; needs a second approver"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    class Reason(models.TextChoices):
        JUDGEMENT = "judgement", "Judgement: the evidence reads otherwise"
        MEASUREMENT_WRONG = "measurement_wrong", "Measurement was wrong"

    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="score_overrides")
    provider = models.ForeignKey("providers.Provider", on_delete=models.PROTECT, related_name="score_overrides")
    criterion = models.ForeignKey("rubric.Criterion", on_delete=models.PROTECT, related_name="score_overrides")
    value = models.FloatField(help_text="New normalised criterion score, 0 (worst) to 1 (best).")
    reason = models.CharField(
        max_length=20, choices=Reason.choices, default=Reason.JUDGEMENT,
        help_text="A gate failed by a critical finding takes only 'measurement was wrong', with a later finding.",
    )
    justification = models.TextField()
    evidence = models.JSONField(default=list, help_text="List of {url, quote} supporting the change.")
    evidence_finding = models.ForeignKey(
        "probes.Finding", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="Measurement was wrong: the later, non-critical passing finding of the same probe that shows it.",
    )
    disputed_findings = models.JSONField(
        default=list, blank=True,
        help_text="Ids of the critical findings this override says were wrong (recorded when proposed).",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="The second publisher who approved or rejected it.",
    )
    decision_note = models.TextField(blank=True)
    second_decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="Measurement was wrong: the third publisher, who confirmed or rejected the first approval.",
    )
    second_decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "reviews_scoreoverride"  # the table predates the move from reviews (migration 0005)
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(value__gte=0) & Q(value__lte=1), name="override_value_0_1"),
            models.CheckConstraint(condition=~Q(justification=""), name="override_has_justification"),
            models.CheckConstraint(
                condition=Q(decided_by__isnull=True) | ~Q(decided_by=F("proposed_by")),
                name="override_four_eyes",
            ),
            models.CheckConstraint(
                condition=Q(second_decided_by__isnull=True) | (
                    Q(decided_by__isnull=False) & ~Q(second_decided_by=F("proposed_by"))
                    & ~Q(second_decided_by=F("decided_by")) & Q(second_decided_at__isnull=False)
                ),
                name="override_second_approver_distinct",
            ),
            models.CheckConstraint(
                condition=Q(status="proposed") | (Q(decided_by__isnull=False) & Q(decided_at__isnull=False)),
                name="override_decision_recorded",
            ),
            models.CheckConstraint(
                condition=~Q(reason="measurement_wrong") | Q(evidence_finding__isnull=False),
                name="override_measurement_wrong_has_evidence",
            ),
            models.CheckConstraint(
                condition=Q(disputed_findings=[]) | Q(reason="measurement_wrong"),
                name="override_critical_only_measurement_wrong",
            ),
            models.CheckConstraint(
                condition=~Q(status="approved") | ~Q(reason="measurement_wrong") | Q(second_decided_by__isnull=False),
                name="override_measurement_wrong_two_approvers",
            ),
            models.UniqueConstraint(
                fields=["cycle", "provider", "criterion"], condition=Q(status="approved"),
                name="override_one_approved_per_unit",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cycle.slug}/{self.provider.slug}/{self.criterion.key} -> {self.value:g} ({self.status})"

    @property
    def approvals(self) -> int:
        """Distinct approvers besides the proposer (the engine's ``CriterionOverride.approvals``)."""
        if self.status != self.Status.APPROVED:
            return 0
        return 2 if self.second_decided_by_id else 1



# -------------------------------------------------------------------------------------- scores
class _Immutable(ImmutableModel):
    """A score snapshot or tier assignment never changes (config.immutability; ratings.guards)."""

    immutable_hint = "compute a new snapshot"

    class Meta:
        abstract = True


class ScoreSnapshot(_Immutable):
    """One run of the scoring engine over one cycle: reproducible from its recorded inputs."""

    cycle = models.ForeignKey(Cycle, on_delete=models.PROTECT, related_name="score_snapshots")
    rubric_version = models.ForeignKey("rubric.RubricVersion", on_delete=models.PROTECT, related_name="score_snapshots")
    engine_version = models.CharField(max_length=64)
    seed = models.BigIntegerField()
    bootstrap_size = models.PositiveIntegerField()
    inputs_hash = models.CharField(max_length=64, validators=[SHA256_HEX])
    content_hash = models.CharField(max_length=64, validators=[SHA256_HEX], help_text="sha256 of the canonical result.")
    result = models.JSONField(help_text="The engine's canonical result (ratings.scoring.result_to_dict).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        get_latest_by = "created_at"
        constraints = [
            models.UniqueConstraint(fields=["cycle", "content_hash"], name="scoresnapshot_unique_content_per_cycle"),
            models.CheckConstraint(condition=Q(seed__gte=0), name="scoresnapshot_seed_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.cycle.slug} {self.content_hash[:12]}"


TIER_CHOICES = spec.choices_for((*spec.TIERS, spec.NOT_RATED), spec.TIER_LABELS)


class TierAssignment(_Immutable):
    """One provider's tier in one snapshot, with its confidence and full breakdown."""

    snapshot = models.ForeignKey(ScoreSnapshot, on_delete=models.PROTECT, related_name="assignments")
    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="tier_assignments")
    tier = models.CharField(max_length=16, choices=TIER_CHOICES)
    tier_point = models.CharField(max_length=16, blank=True, help_text="Peer tier of the point estimate.")
    previous_tier = models.CharField(max_length=16, blank=True)
    hysteresis_held = models.BooleanField(default=False)
    probabilities = models.JSONField(default=dict, help_text="Bootstrap probability of each tier.")
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    composite = models.FloatField(null=True, blank=True)
    composite_pessimistic = models.FloatField(default=0.0)
    coverage = models.FloatField()
    borderline = models.BooleanField(default=False)
    outlook = models.CharField(max_length=16, default="stable")
    floor_capped = models.BooleanField(default=False)
    gate_caps = models.JSONField(default=list)
    areas = models.JSONField(default=list, help_text="Per-area score, coverage and CI.")
    criteria = models.JSONField(default=list, help_text="Per-criterion status, score and evidence streams.")
    flags = models.JSONField(default=list)

    class Meta:
        ordering = ["snapshot", "provider__name"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "provider"], name="tierassignment_one_per_provider"),
            models.CheckConstraint(
                condition=Q(coverage__gte=0) & Q(coverage__lte=1.000001), name="tierassignment_coverage_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.tier}"
