"""Probe runs and their findings (first cut; the probe-runner work extends these).

Findings keep "measured bad" apart from "could not measure": see Outcome and the table in
docs/domain.md. A finding is immutable once written; scores are recomputed from findings.
"""

from __future__ import annotations

from django.db import models


class Outcome(models.TextChoices):
    PASS = "pass", "Pass"
    FAIL = "fail", "Fail"
    WARN = "warn", "Warn"
    ERROR = "error", "Error (our harness)"
    PROVIDER_ERROR = "provider_error", "Provider error"
    TIMEOUT = "timeout", "Timeout"
    NOT_APPLICABLE = "not_applicable", "Not applicable"


class ProbeRun(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        ERROR = "error", "Error"
        CANCELLED = "cancelled", "Cancelled"

    cycle = models.ForeignKey("ratings.Cycle", null=True, blank=True, on_delete=models.PROTECT, related_name="probe_runs")
    cluster = models.ForeignKey("ratings.Cluster", on_delete=models.PROTECT, related_name="probe_runs")
    probe_id = models.CharField(max_length=96)
    probe_version = models.CharField(max_length=32, blank=True)
    target = models.CharField(max_length=200, default="cluster", help_text="Node, cluster or tenant pair.")
    scheduled_for = models.DateTimeField(help_text="The scheduled slot this run belongs to.")
    idempotency_key = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempt = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "started_at"], name="proberun_status_started")]

    def __str__(self) -> str:
        return f"{self.probe_id} on {self.target} ({self.status})"


class Finding(models.Model):
    run = models.ForeignKey(ProbeRun, on_delete=models.PROTECT, related_name="findings")
    probe_id = models.CharField(max_length=96)
    probe_version = models.CharField(max_length=32)
    target = models.CharField(max_length=200)
    metric = models.CharField(max_length=96, blank=True, help_text="Metric name; empty for a pass/fail check.")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    value = models.FloatField(null=True, blank=True)
    unit = models.CharField(max_length=32, blank=True)
    critical = models.BooleanField(default=False, help_text="An isolation breach or other critical failure.")
    summary = models.CharField(max_length=500, blank=True)
    evidence = models.JSONField(default=dict, blank=True, help_text="Bounded and redacted raw evidence.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "target", "metric"], name="finding_one_per_run_target_metric"),
        ]

    def __str__(self) -> str:
        return f"{self.probe_id}/{self.metric or 'outcome'} on {self.target}: {self.outcome}"
