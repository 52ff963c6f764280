"""What everything else rates: providers, their clusters, and rating cycles (the peer sets).

The base app: probes, reviews, ratings and reports all point here, and this app points only
at ``rubric`` (a Cycle rates its peer set under exactly one frozen rubric version). The
tables keep their original ``ratings_*`` names: the models moved here from ``ratings``
without touching the database (migration providers 0001).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Provider(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active (rated)"
        TRACKED = "tracked", "Tracked (not rated yet)"
        RETIRED = "retired", "Retired"

    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=64, unique=True)
    website = models.URLField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "ratings_provider"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Cluster(models.Model):
    class Orchestrator(models.TextChoices):
        SLURM = "slurm", "Slurm"
        KUBERNETES = "kubernetes", "Kubernetes"
        STANDALONE = "standalone", "Standalone"

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="clusters")
    name = models.CharField(max_length=200)
    region = models.CharField(max_length=64, blank=True)
    gpu_model = models.CharField(max_length=64, blank=True, help_text="As ordered, e.g. 'H100-SXM-80GB'.")
    gpu_count = models.PositiveIntegerField(default=0, help_text="GPUs ordered in this cluster.")
    orchestrator = models.CharField(max_length=16, choices=Orchestrator.choices, default=Orchestrator.SLURM)
    list_price_per_gpu_hour = models.DecimalField(
        max_digits=8, decimal_places=4, null=True, blank=True, help_text="List price in $/GPU-hour."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "ratings_cluster"
        ordering = ["provider__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "name"], name="cluster_unique_name_per_provider"),
            models.CheckConstraint(
                condition=Q(list_price_per_gpu_hour__isnull=True) | Q(list_price_per_gpu_hour__gte=0),
                name="cluster_price_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider.name} / {self.name}"


class Cycle(models.Model):
    class Status(models.TextChoices):
        PLANNED = "planned", "Planned"
        COLLECTING = "collecting", "Collecting evidence"
        SCORING = "scoring", "Scoring"
        CLOSED = "closed", "Closed"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64, unique=True)
    rubric_version = models.ForeignKey(
        "rubric.RubricVersion", on_delete=models.PROTECT, related_name="cycles"
    )
    period_start = models.DateField()
    period_end = models.DateField()
    providers = models.ManyToManyField(Provider, related_name="cycles", blank=True, help_text="The peer set.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PLANNED)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "ratings_cycle"
        ordering = ["-period_start", "slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(period_end__gte=models.F("period_start")), name="cycle_period_ordered"
            ),
        ]

    def __str__(self) -> str:
        return self.name
