"""Rubric versions, areas and criteria.

A version is a draft until frozen; frozen versions are immutable (refused by the services,
the admin, the API and a database trigger). Scoring parameters live on the version so they
are versioned with the criteria they apply to. What a frozen, versioned row is (label, status,
the refusal in ``save``/``delete``) is ``rubric.versioned.FrozenDocument``'s, shared with the
grade definitions.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q

from config.immutability import ImmutableError
from rubric import spec
from rubric.versioned import FrozenDocument


class FrozenRubricError(ImmutableError):
    """An edit of a frozen rubric version (or of its areas or criteria) was attempted."""

    def __init__(self, rubric_version: RubricVersion | None = None, what: str = "it") -> None:
        label = str(rubric_version) if rubric_version is not None else "this rubric version"
        super().__init__(
            f"Rubric version {label} is frozen: {what} cannot be changed. "
            "Clone it into a new draft version and edit that instead."
        )


# The vocabulary is rubric.spec's; these are its Django choices.
Tier = models.TextChoices("Tier", spec.choice_members(spec.Tier, spec.TIER_LABELS), module=__name__)
TIER_ORDER: tuple[str, ...] = spec.TIERS  # best first
EvidenceKind = models.TextChoices(
    "EvidenceKind",
    [(k.name, (k.value, spec.EVIDENCE_KIND_LABELS[k])) for k in spec.EVIDENCE_KIND_ORDER],
    module=__name__,
)
Direction = models.TextChoices("Direction", spec.choice_members(spec.Direction, spec.DIRECTION_LABELS), module=__name__)
Scale = models.TextChoices("Scale", spec.choice_members(spec.Scale, spec.SCALE_LABELS), module=__name__)


class RubricVersion(FrozenDocument):
    document_noun = "rubric version"

    name = models.SlugField(max_length=64, help_text="Rubric family, e.g. 'opgrade'.")
    version = models.CharField(max_length=32, help_text="Version label, e.g. '2026.1'.")
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=FrozenDocument.Status.choices,
                              default=FrozenDocument.Status.DRAFT)
    frozen_at = models.DateTimeField(null=True, blank=True)
    fingerprint = models.CharField(
        max_length=64, blank=True, help_text="sha256 of the canonical content, recorded at freeze."
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children",
        help_text="The version this draft was cloned from.",
    )
    # Scoring parameters (versioned with the criteria).
    coverage_floor = models.FloatField(
        default=0.6, help_text="Measured share of the total weight below which a provider is Not rated."
    )
    area_coverage_floor = models.FloatField(
        default=0.5, help_text="Measured share of an area's weight below which the area is unmeasured."
    )
    bootstrap_size = models.PositiveIntegerField(default=2000)
    boundary_confidence = models.FloatField(
        default=0.9, help_text="Bootstrap probability needed to keep a tier boundary between neighbours."
    )
    borderline_threshold = models.FloatField(
        default=0.7, help_text="Top tier probability under which a provider is flagged borderline."
    )
    hysteresis_threshold = models.FloatField(
        default=0.2, help_text="Keep the last published tier unless its probability falls below this."
    )
    feedback_prior_strength = models.FloatField(
        default=5.0, help_text="Pseudo-count of the Bayesian average toward the rubric's prior mean."
    )
    feedback_prior_mean = models.FloatField(
        default=3.0,
        help_text="The rating (1-5) customer feedback is shrunk toward: a rubric constant, never the peer mean.",
    )
    boundary_min_gap = models.FloatField(
        default=0.0, help_text="Composite points (0-1) a tier boundary needs besides the bootstrap's confirmation."
    )
    tier_floor_platinum = models.FloatField(default=0.80)
    tier_floor_gold = models.FloatField(default=0.65)
    tier_floor_silver = models.FloatField(default=0.50)
    tier_floor_bronze = models.FloatField(default=0.40, help_text="Below this is Underperforming.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="rubric_version_unique_label"),
            models.CheckConstraint(
                condition=Q(coverage_floor__gte=0) & Q(coverage_floor__lte=1), name="rubric_coverage_floor_0_1"
            ),
            models.CheckConstraint(
                condition=Q(tier_floor_platinum__gte=models.F("tier_floor_gold"))
                & Q(tier_floor_gold__gte=models.F("tier_floor_silver"))
                & Q(tier_floor_silver__gte=models.F("tier_floor_bronze")),
                name="rubric_tier_floors_ordered",
            ),
            models.CheckConstraint(
                condition=Q(status="draft") | Q(frozen_at__isnull=False), name="rubric_frozen_has_timestamp"
            ),
            models.CheckConstraint(
                condition=Q(status="draft") | ~Q(fingerprint=""), name="rubric_frozen_has_fingerprint"
            ),
            models.CheckConstraint(condition=Q(status__in=["draft", "frozen"]), name="rubric_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    def frozen_error(self, what: str | None = None) -> FrozenRubricError:
        return FrozenRubricError(self, what or "the version")


def _refuse_if_frozen(version_id: int | None, what: str) -> None:
    if version_id is None:
        return
    version = RubricVersion.objects.filter(pk=version_id).only("name", "version", "status").first()
    if version is not None and version.is_frozen:
        raise FrozenRubricError(version, what)


class Area(models.Model):
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.CASCADE, related_name="areas")
    key = models.SlugField(max_length=64)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    weight = models.FloatField()
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["rubric_version", "position", "key"]
        constraints = [
            models.UniqueConstraint(fields=["rubric_version", "key"], name="area_unique_key_per_version"),
            models.CheckConstraint(condition=Q(weight__gt=0), name="area_weight_positive"),
        ]

    def __str__(self) -> str:
        return self.title

    def save(self, *args: Any, **kwargs: Any) -> None:
        _refuse_if_frozen(self.rubric_version_id, f"area '{self.key}'")
        if self.pk is not None:
            old = Area.objects.filter(pk=self.pk).values_list("rubric_version_id", flat=True).first()
            if old != self.rubric_version_id:
                _refuse_if_frozen(old, f"area '{self.key}'")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        _refuse_if_frozen(self.rubric_version_id, f"area '{self.key}'")
        return super().delete(*args, **kwargs)


class Criterion(models.Model):
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.CASCADE, related_name="criteria")
    area = models.ForeignKey(Area, on_delete=models.CASCADE, related_name="criteria")
    key = models.SlugField(max_length=96)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    weight = models.FloatField(help_text="Relative weight within its area.")
    evidence_kinds = models.JSONField(default=list, help_text="Subset of probe, doc_review, customer_feedback.")
    probe_id = models.CharField(max_length=96, blank=True, help_text="Probe whose findings feed this criterion.")
    probe_metric = models.CharField(
        max_length=96, blank=True, help_text="Metric of that probe; empty means the pass/fail outcome."
    )
    unit = models.CharField(max_length=32, blank=True)
    direction = models.CharField(max_length=8, choices=Direction.choices, default=Direction.HIGHER)
    anchor_best = models.FloatField()
    anchor_worst = models.FloatField()
    scale = models.CharField(max_length=8, choices=Scale.choices, default=Scale.LINEAR)
    is_gate = models.BooleanField(default=False)
    gate_cap_tier = models.CharField(max_length=16, choices=Tier.choices, blank=True)
    gate_threshold = models.FloatField(
        default=0.5, help_text="A gate fails when the normalised score is below this."
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["rubric_version", "area__position", "position", "key"]
        verbose_name_plural = "criteria"
        constraints = [
            models.UniqueConstraint(fields=["rubric_version", "key"], name="criterion_unique_key_per_version"),
            models.CheckConstraint(condition=Q(weight__gt=0), name="criterion_weight_positive"),
            models.CheckConstraint(
                condition=~Q(anchor_best=models.F("anchor_worst")), name="criterion_anchors_distinct"
            ),
            models.CheckConstraint(
                condition=Q(is_gate=False) | ~Q(gate_cap_tier=""), name="criterion_gate_has_cap_tier"
            ),
            models.CheckConstraint(condition=Q(direction__in=["higher", "lower"]), name="criterion_direction_valid"),
            models.CheckConstraint(condition=Q(scale__in=["linear", "log"]), name="criterion_scale_valid"),
            models.CheckConstraint(
                condition=Q(gate_cap_tier__in=["", "gold", "silver", "bronze", "underperforming"]),
                name="criterion_gate_cap_tier_valid",
            ),
            models.CheckConstraint(
                condition=Q(scale="linear") | (Q(anchor_best__gt=0) & Q(anchor_worst__gt=0)),
                name="criterion_log_anchors_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args: Any, **kwargs: Any) -> None:
        _refuse_if_frozen(self.rubric_version_id, f"criterion '{self.key}'")
        if self.pk is not None:
            old = Criterion.objects.filter(pk=self.pk).values_list("rubric_version_id", flat=True).first()
            if old != self.rubric_version_id:
                _refuse_if_frozen(old, f"criterion '{self.key}'")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        _refuse_if_frozen(self.rubric_version_id, f"criterion '{self.key}'")
        return super().delete(*args, **kwargs)
