"""Probe targets and credentials, schedules, runs and their findings.

* ``ClusterAccess``, ``TenantAccount``, ``HostKeyPin`` and ``HostCAPin`` say how to reach a cluster:
  its login node, its compute nodes (listed or discovered through the scheduler), an optional
  provider API, the tenant accounts we act as, the host keys an analyst pinned, and the provider's
  host CAs an analyst pinned (nodes reached by direct SSH are trusted through their certificates).
  Secrets are stored encrypted (``config.crypto``, MultiFernet) in ``*_encrypted`` columns and
  are never shown back.
* ``ProbeSchedule`` is a cluster, a set of probes and a crontab or interval, backed by a
  django-celery-beat ``PeriodicTask`` that the services keep in sync.
* ``ProbeRun`` is one probe against one cluster in one scheduled slot: a row with a lifecycle
  (pending -> running -> done | error | cancelled), claimed atomically, with progress n of m.
* ``Finding`` is one answer about one target. Findings keep "measured bad" apart from "could not
  measure" (see Outcome and docs/domain.md), and are immutable: ``save`` refuses updates and a
  PostgreSQL trigger refuses UPDATE and DELETE from anywhere else.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from config.immutability import ImmutableModel
from rubric import spec

# The outcome vocabulary is rubric.spec's (see the table in docs/domain.md); these are its choices.
Outcome = models.TextChoices("Outcome", spec.choice_members(spec.Outcome, spec.OUTCOME_LABELS), module=__name__)


class ProbeRun(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        ERROR = "error", "Error"
        CANCELLED = "cancelled", "Cancelled"

    cycle = models.ForeignKey(
        "providers.Cycle", null=True, blank=True, on_delete=models.PROTECT, related_name="probe_runs"
    )
    cluster = models.ForeignKey("providers.Cluster", on_delete=models.PROTECT, related_name="probe_runs")
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
    schedule = models.ForeignKey(
        "probes.ProbeSchedule", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life from the worker running it; a stale one may be re-claimed.",
    )
    claimed_by = models.CharField(
        max_length=200, blank=True, help_text="Worker host and pid of the current claim."
    )
    sent_at = models.DateTimeField(
        null=True, blank=True, help_text="When the task was last sent to the broker."
    )
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.CharField(max_length=500, blank=True)
    flagged = models.BooleanField(
        default=False, help_text="Needs an analyst: a changed host key or refused credentials."
    )

    TERMINAL = (Status.DONE, Status.ERROR, Status.CANCELLED)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "started_at"], name="proberun_status_started"),
            models.Index(fields=["status", "heartbeat_at"], name="proberun_status_heartbeat"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress_done__lte=models.F("progress_total")) | Q(progress_total=0),
                name="proberun_progress_bounded",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.probe_id} on {self.target} ({self.status})"

    @property
    def progress(self) -> str:
        return f"{self.progress_done}/{self.progress_total}" if self.progress_total else "-"


class Finding(ImmutableModel):
    run = models.ForeignKey(ProbeRun, on_delete=models.PROTECT, related_name="findings")
    probe_id = models.CharField(max_length=96)
    probe_version = models.CharField(max_length=32)
    target = models.CharField(max_length=200)
    metric = models.CharField(
        max_length=96, blank=True, help_text="Metric name; empty for a pass/fail check."
    )
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
    threshold_ref = models.CharField(
        max_length=200, blank=True, help_text="Which threshold row judged the value."
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "target", "metric"], name="finding_one_per_run_target_metric"
            ),
        ]

    immutable_hint = "record a new run instead"

    def __str__(self) -> str:
        return f"{self.probe_id}/{self.metric or 'outcome'} on {self.target}: {self.outcome}"



class ClusterAccess(models.Model):
    """How to reach one cluster: login node, compute nodes, provider API, politeness limits."""

    cluster = models.OneToOneField("providers.Cluster", on_delete=models.CASCADE, related_name="access")
    login_host = models.CharField(max_length=253, help_text="Login/head node host name or address.")
    login_port = models.PositiveIntegerField(default=22)
    class InventorySource(models.TextChoices):
        SCHEDULER = "scheduler", "The scheduler (Slurm sinfo on the login node), read at every run"
        PROVIDER_API = "provider_api", "The provider API (GET /v1/nodes), read at every run"
        LISTED = "listed", "The compute nodes listed below, as typed"

    class NodeAccess(models.TextChoices):
        SCHEDULER = "scheduler", "As a tenant's job: srun --nodelist from the login node"
        SSH = "ssh", "Direct SSH through the login node (pinned host keys)"

    compute_nodes = models.TextField(
        blank=True,
        help_text="One compute node a line, host or host:port, reached through the login node. With an "
        "inventory read at run time this is only a hint (the SSH port of a node named here).",
    )
    inventory_source = models.CharField(
        max_length=16, choices=InventorySource.choices, default=InventorySource.SCHEDULER,
        help_text="Where each run reads the cluster's current compute nodes from.",
    )
    node_access = models.CharField(
        max_length=16, choices=NodeAccess.choices, default=NodeAccess.SCHEDULER,
        help_text="How node-scope commands reach a compute node. Direct SSH trusts a node only through "
        "a pinned host key; a node without one is reported unverified.",
    )
    inventory = models.JSONField(
        default=dict, blank=True, editable=False,
        help_text="The inventory as last seen (nodes, when, from where) and the recent departed and joined "
        "nodes; written by the runner (probes.services.cluster_inventory_record).",
    )
    api_base_url = models.URLField(blank=True, help_text="Provider API base URL, if any.")
    api_token_encrypted = models.TextField(blank=True, editable=False)
    api_token_origin = models.CharField(
        max_length=300, blank=True, editable=False,
        help_text="The origin (scheme://host:port) of the API URL the token was entered for; the token is "
        "sent nowhere else (probes.egress).",
    )
    disruptive_opt_in = models.BooleanField(
        default=False, help_text="The provider agreed that disruptive probes (fault injection) may run here."
    )
    max_concurrency = models.PositiveSmallIntegerField(
        default=8, help_text="At most this many SSH sessions at once against this provider's hosts."
    )
    settings = models.JSONField(
        default=dict, blank=True, help_text="Non-secret probe settings (e.g. monitoring URLs), as JSON."
    )

    class Meta:
        verbose_name_plural = "cluster access"
        constraints = [
            models.CheckConstraint(
                condition=Q(login_port__gte=1) & Q(login_port__lte=65535), name="clusteraccess_port_valid"
            ),
            models.CheckConstraint(
                condition=Q(max_concurrency__gte=1), name="clusteraccess_concurrency_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cluster} via {self.login_host}:{self.login_port}"

    @property
    def has_api_token(self) -> bool:
        return bool(self.api_token_encrypted)


class TenantAccount(models.Model):
    """An account we act as on a cluster. Key, passphrase and password are stored encrypted."""

    cluster = models.ForeignKey("providers.Cluster", on_delete=models.CASCADE, related_name="tenant_accounts")
    label = models.SlugField(max_length=64, help_text="Short name used in findings, e.g. tenant-a.")
    username = models.CharField(max_length=64)
    private_key_encrypted = models.TextField(blank=True, editable=False)
    passphrase_encrypted = models.TextField(blank=True, editable=False)
    password_encrypted = models.TextField(blank=True, editable=False)
    password_origins = models.JSONField(
        default=list, blank=True, editable=False,
        help_text="The origins the password was entered for: the web endpoints' (http(s)://host:port), where "
        "it is sent as the HTTP login (probes.egress), and the login node's (ssh://host:port), the only SSH "
        "server it is offered to, with the nodes reached through it (probes.transport).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cluster", "label"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "label"], name="tenantaccount_unique_label"),
            models.CheckConstraint(
                condition=~Q(private_key_encrypted="") | ~Q(password_encrypted=""),
                name="tenantaccount_has_a_secret",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.username}) on {self.cluster}"

    @property
    def auth_kind(self) -> str:
        return "private key" if self.private_key_encrypted else "password"


class HostKeyPin(models.Model):
    """A host key an analyst saw and pinned. Only an explicit admin action creates these."""

    cluster = models.ForeignKey("providers.Cluster", on_delete=models.CASCADE, related_name="host_key_pins")
    host = models.CharField(max_length=253)
    port = models.PositiveIntegerField(default=22)
    key_type = models.CharField(max_length=64)
    fingerprint = models.CharField(max_length=100, help_text="OpenSSH SHA256 fingerprint.")
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cluster", "host", "port"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "host", "port", "key_type"], name="hostkeypin_unique"),
            models.CheckConstraint(condition=Q(fingerprint__startswith="SHA256:"), name="hostkeypin_sha256"),
        ]

    def __str__(self) -> str:
        return f"{self.host}:{self.port} {self.key_type} {self.fingerprint}"


class HostCAPin(models.Model):
    """A provider's SSH host certificate authority an analyst pinned for one cluster access.

    With direct SSH to compute nodes, a node whose own key nobody pinned (one the operator added
    today) is trusted when it presents an OpenSSH host certificate signed by this CA naming the
    node (``probes.transport``). Only the explicit admin action, which shows the fingerprint
    before it stores anything, creates these; the key is public, never a secret.
    """

    access = models.ForeignKey(ClusterAccess, on_delete=models.CASCADE, related_name="host_ca_pins")
    key_type = models.CharField(max_length=64)
    fingerprint = models.CharField(max_length=100, help_text="OpenSSH SHA256 fingerprint of the CA key.")
    public_key = models.TextField(help_text="The CA's OpenSSH public key line, as the analyst confirmed it.")
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "host CA pin"
        ordering = ["access", "fingerprint"]
        constraints = [
            models.UniqueConstraint(fields=["access", "fingerprint"], name="hostcapin_unique"),
            models.CheckConstraint(condition=Q(fingerprint__startswith="SHA256:"), name="hostcapin_sha256"),
        ]

    def __str__(self) -> str:
        return f"host CA {self.key_type} {self.fingerprint}"


class ProbeSchedule(models.Model):
    """A cluster, a set of probes and when to run them; mirrored into a django-celery-beat task."""

    name = models.CharField(max_length=200, unique=True)
    cluster = models.ForeignKey("providers.Cluster", on_delete=models.CASCADE, related_name="probe_schedules")
    cycle = models.ForeignKey(
        "providers.Cycle", null=True, blank=True, on_delete=models.PROTECT, related_name="probe_schedules"
    )
    probes = models.JSONField(default=list, help_text='Probe ids, e.g. ["ssh_reachable", "node_inventory"].')
    crontab = models.ForeignKey(
        "django_celery_beat.CrontabSchedule",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    interval = models.ForeignKey(
        "django_celery_beat.IntervalSchedule",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    enabled = models.BooleanField(default=True)
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="probe_schedule",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(crontab__isnull=False) & Q(interval__isnull=True))
                | (Q(crontab__isnull=True) & Q(interval__isnull=False)),
                name="probeschedule_one_timing",
            ),
        ]

    def __str__(self) -> str:
        return self.name
