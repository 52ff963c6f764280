"""Grade definitions (versioned, frozen like rubric versions) and rental price observations.

A :class:`GradeDefinition` holds one grade's canonical YAML text (``grades.spec``); the text is
the definition, so an export gives back exactly the bytes that were frozen. A draft may be
replaced or deleted; once frozen it is immutable, refused by the services, by ``save``/``delete``
and by a database trigger (``grades.guards``), and changed only by cloning it into a new draft.
Label, status and the refusal are ``rubric.versioned.FrozenDocument``'s, as for rubric versions.

A :class:`PriceObservation` is one observed rent: $/GPU-hour for a cluster under a grade, with
its source, date and term. Analysts record them (admin and API); duplicates are refused.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from config.immutability import ImmutableError
from grades.spec import TERMS
from rubric.versioned import FrozenDocument


class FrozenGradeError(ImmutableError):
    """An edit of a frozen grade definition was attempted."""

    def __init__(self, grade: GradeDefinition | None = None) -> None:
        label = grade.label if grade is not None else "this grade definition"
        super().__init__(f"Grade definition {label} is frozen: it cannot be changed. "
                         "Clone it into a new draft version and edit that instead.")


class GradeDefinition(FrozenDocument):
    document_noun = "grade"

    name = models.SlugField(max_length=64, help_text="Grade family, e.g. 'h100-sxm-managed-a'.")
    version = models.CharField(max_length=32, help_text="Version label, e.g. '2026.1'.")
    title = models.CharField(max_length=200)
    rubric_label = models.CharField(max_length=100, help_text="NAME@VERSION of the rubric the grade reads.")
    gpu_model = models.CharField(max_length=64, help_text="The grade's GPU model ('none' without GPUs).")
    canonical = models.TextField(help_text="The definition in canonical YAML (grades/spec.py).")
    status = models.CharField(max_length=16, choices=FrozenDocument.Status.choices,
                              default=FrozenDocument.Status.DRAFT)
    frozen_at = models.DateTimeField(null=True, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True, help_text="sha256 of the canonical text, at freeze.")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children",
                               help_text="The version this draft was cloned from.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="grade_definition_unique_label"),
            models.CheckConstraint(condition=Q(status__in=["draft", "frozen"]), name="grade_status_valid"),
            models.CheckConstraint(condition=Q(status="draft") | (Q(frozen_at__isnull=False) & ~Q(fingerprint="")),
                                   name="grade_frozen_has_timestamp_and_fingerprint"),
        ]

    def __str__(self) -> str:
        return self.label

    def frozen_error(self, what: str | None = None) -> FrozenGradeError:
        return FrozenGradeError(self)


class PriceObservation(models.Model):
    Term = models.TextChoices("Term", [("TERM_" + t.upper().replace("-", "_"), (t, t)) for t in TERMS], module=__name__)

    grade = models.ForeignKey(GradeDefinition, on_delete=models.PROTECT, related_name="price_observations")
    cluster = models.ForeignKey("providers.Cluster", on_delete=models.PROTECT, related_name="price_observations")
    source = models.CharField(max_length=200, help_text="Where the price was seen: a price list, a quote, an invoice.")
    observed_on = models.DateField()
    term = models.CharField(max_length=16, choices=Term.choices)
    price_per_gpu_hour = models.DecimalField(max_digits=8, decimal_places=4, help_text="$/GPU-hour.")
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["grade", "-observed_on", "cluster"]
        constraints = [
            models.UniqueConstraint(fields=["grade", "cluster", "source", "observed_on", "term"],
                                    name="price_observation_unique"),
            models.CheckConstraint(condition=Q(price_per_gpu_hour__gt=0), name="price_observation_positive"),
        ]
        indexes = [models.Index(fields=["grade", "term", "observed_on"], name="price_obs_grade_term_date")]

    def __str__(self) -> str:
        return f"{self.cluster} {self.grade.label} {self.term} {self.observed_on}: ${self.price_per_gpu_hour}/GPU-h"
