"""Published tier reports: immutable, content-addressed snapshots of a cycle's tiers.

A Report moves draft -> fact_check -> published. Once published its ``content`` (the
document built by ``reports.context``) and ``content_hash`` never change: a correction is
a *new* published report that ``supersedes`` the old one with a public notice, and a
withdrawal marks the report withdrawn while leaving it reachable. Three layers refuse
changes to a published report: the services (clear errors), ``Report.save``/``delete``
(for code that bypasses the services) and database triggers (for raw SQL and
``QuerySet.update``), installed by migration 0002 for PostgreSQL and SQLite.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q

from reports.errors import ReportImmutableError

__all__ = ["Report", "ReportImmutableError"]


class Report(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        FACT_CHECK = "fact_check", "Provider fact-check"
        PUBLISHED = "published", "Published"
        SUPERSEDED = "superseded", "Superseded by a correction"
        WITHDRAWN = "withdrawn", "Withdrawn"

    #: Statuses the public may see. Drafts and fact-check copies never leave the building.
    PUBLIC_STATUSES: ClassVar[tuple[str, ...]] = ("published", "superseded", "withdrawn")
    #: Fields frozen at publication; the database trigger guards the same list.
    FROZEN_FIELDS: ClassVar[tuple[str, ...]] = (
        "cycle_id", "content", "content_hash", "supersedes_id",
        "correction_notice", "published_at", "published_by_id", "created_at", "created_by_id",
        "fact_check_opened_at",
    )
    #: Set once, in the UPDATE that moves a published report to superseded or withdrawn.
    TRANSITION_FIELDS: ClassVar[tuple[str, ...]] = ("superseded_at", "withdrawn_at", "withdrawal_notice")
    #: The only status changes allowed after publication.
    ALLOWED_AFTER_PUBLICATION: ClassVar[dict[str, tuple[str, ...]]] = {
        "published": ("published", "superseded", "withdrawn"),
        "superseded": ("superseded",),
        "withdrawn": ("withdrawn",),
    }

    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="reports")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    content = models.JSONField(help_text="The frozen report document (reports.context).")
    content_hash = models.CharField(
        max_length=64, help_text="sha256 of the canonical JSON of content (sorted keys, compact, UTF-8)."
    )
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by",
        help_text="The published report this one corrects.",
    )
    correction_notice = models.TextField(blank=True, help_text="Public notice of what this correction changed.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    fact_check_opened_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    superseded_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawal_notice = models.TextField(blank=True, help_text="Public notice of why the report was withdrawn.")

    class Meta:
        ordering = ["-published_at", "-created_at", "-id"]
        permissions = [("publish_report", "Can publish, correct and withdraw tier reports")]
        indexes = [models.Index(fields=["status", "cycle"], name="report_status_cycle")]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["draft", "fact_check", "published", "superseded", "withdrawn"]),
                name="report_status_known",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["draft", "fact_check"])
                | (Q(published_at__isnull=False) & Q(published_by__isnull=False)),
                name="report_published_has_publisher",
            ),
            models.CheckConstraint(
                condition=~Q(status="withdrawn") | (Q(withdrawn_at__isnull=False) & ~Q(withdrawal_notice="")),
                name="report_withdrawn_has_notice",
            ),
            models.CheckConstraint(
                condition=~Q(status="superseded") | Q(superseded_at__isnull=False),
                name="report_superseded_has_timestamp",
            ),
            models.CheckConstraint(
                condition=Q(supersedes__isnull=True) | ~Q(correction_notice=""),
                name="report_correction_has_notice",
            ),
            # One live (published) report per cycle; corrections flip the old one first.
            models.UniqueConstraint(
                fields=["cycle"], condition=Q(status="published"), name="report_one_published_per_cycle"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cycle} report #{self.pk} ({self.get_status_display()})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self._guard_save()
        super().save(*args, **kwargs)
        self._loaded = self._guarded_values()

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        if self.pk is not None:
            stored = Report.objects.filter(pk=self.pk).values_list("status", flat=True).first()
            if stored in self.PUBLIC_STATUSES or self.status in self.PUBLIC_STATUSES:
                raise ReportImmutableError(
                    f"Report #{self.pk} is {stored or self.status}; published reports are never deleted "
                    "(withdraw it instead)."
                )
        return super().delete(*args, **kwargs)

    # --- immutability at the model layer (services first, database triggers last) ---
    @classmethod
    def from_db(cls, db: Any, field_names: Any, values: Any, *args: Any, **kwargs: Any) -> Report:
        instance = super().from_db(db, field_names, values, *args, **kwargs)
        instance._loaded = instance._guarded_values()
        return instance

    def _guarded_values(self) -> dict[str, Any]:
        """The stored values the immutability guard compares against (deferred ones skipped)."""
        names = ("status", *self.FROZEN_FIELDS, *self.TRANSITION_FIELDS)
        return {name: self.__dict__[name] for name in names if name in self.__dict__}

    @property
    def is_public(self) -> bool:
        return self.status in self.PUBLIC_STATUSES

    @property
    def short_hash(self) -> str:
        return self.content_hash[:12]

    def _guard_save(self) -> None:
        loaded: dict[str, Any] | None = getattr(self, "_loaded", None)
        if self._state.adding or not loaded:
            return
        old_status = loaded.get("status")
        if old_status not in self.PUBLIC_STATUSES:
            return
        if self.status not in self.ALLOWED_AFTER_PUBLICATION[old_status]:
            raise ReportImmutableError(
                f"Report #{self.pk} is {old_status}; it cannot become {self.status}."
            )
        # The notice fields may change only in the one UPDATE that leaves "published".
        leaving = old_status == self.Status.PUBLISHED and self.status != old_status
        guarded = [n for n in loaded if n != "status" and not (leaving and n in self.TRANSITION_FIELDS)]
        changed = [name for name in guarded if getattr(self, name) != loaded[name]]
        if changed:
            raise ReportImmutableError(
                f"Report #{self.pk} is {old_status} and immutable; refused change to {', '.join(sorted(changed))}. "
                "Publish a correction instead."
            )


class ReportSource(models.Model):
    """Which score snapshot a report was built from (reports made from a document have none).

    A separate row rather than a column on Report so the Report table (whose history the
    reviews app audits) keeps its shape; written once with the draft and never changed.
    The document itself records the snapshot's hash (engine.snapshot_hash), which the
    immutability guards protect.
    """

    report = models.OneToOneField(Report, on_delete=models.CASCADE, primary_key=True, related_name="source")
    score_snapshot = models.ForeignKey("ratings.ScoreSnapshot", on_delete=models.PROTECT, related_name="reports")

    class Meta:
        verbose_name = "report source"

    def __str__(self) -> str:
        return f"report #{self.report_id} from snapshot #{self.score_snapshot_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ReportImmutableError("a report's source snapshot is recorded once and never changed")
        super().save(*args, **kwargs)
