"""What a cluster's compute costs in a cycle: the effective price and, for owners, the owned basis.

``ClusterPrice`` is one cluster in one cycle. Its effective price P ($/GPU-hour) is the base price
(the cluster's list price unless a negotiated one is recorded) plus the mandatory extras (storage,
egress, support), each with the source it was taken from. A producer that owns its GPUs records a
second basis beside it: capex per GPU annualised with the capital recovery factor, plus power,
space and staff per GPU-hour. The arithmetic lives in ``costs.engine`` (pure); this row only holds
the inputs, validated in ``clean`` (the admin and the API both call ``full_clean`` through
``costs.services``) and by database constraints. Edits are kept by django-simple-history.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

MONEY = {"max_digits": 10, "decimal_places": 4}
EXTRAS = ("storage", "egress", "support")
OWNED_FIELDS = ("capex_per_gpu", "discount_rate", "life_years")


class ClusterPrice(models.Model):
    class Base(models.TextChoices):
        LIST = "list", "List price"
        NEGOTIATED = "negotiated", "Negotiated price"

    cluster = models.ForeignKey("providers.Cluster", on_delete=models.PROTECT, related_name="prices")
    cycle = models.ForeignKey("providers.Cycle", on_delete=models.PROTECT, related_name="cluster_prices")
    base = models.CharField(max_length=16, choices=Base.choices, default=Base.LIST)
    base_per_gpu_hour = models.DecimalField(
        **MONEY, null=True, blank=True,
        help_text="$/GPU-hour. Empty with 'List price': the cluster's list price is used.",
    )
    base_source = models.CharField(max_length=500, help_text="Where the base price comes from (URL, contract).")
    storage_per_gpu_hour = models.DecimalField(**MONEY, default=Decimal("0"), help_text="Mandatory storage, $/GPU-hour.")
    storage_source = models.CharField(max_length=500, blank=True)
    egress_per_gpu_hour = models.DecimalField(**MONEY, default=Decimal("0"), help_text="Mandatory egress, $/GPU-hour.")
    egress_source = models.CharField(max_length=500, blank=True)
    support_per_gpu_hour = models.DecimalField(**MONEY, default=Decimal("0"), help_text="Mandatory support, $/GPU-hour.")
    support_source = models.CharField(max_length=500, blank=True)
    # The owned basis (optional): for a producer that owns its GPUs.
    capex_per_gpu = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True,
                                        help_text="Installed capex per GPU, $ (its share of servers and network).")
    discount_rate = models.DecimalField(max_digits=6, decimal_places=4, null=True, blank=True,
                                        help_text="Cost of capital per year, e.g. 0.08.")
    life_years = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True,
                                     help_text="Service life in years.")
    hours_per_year = models.DecimalField(max_digits=6, decimal_places=1, default=Decimal("8760"),
                                         help_text="Hours a year each GPU is in service.")
    power_per_gpu_hour = models.DecimalField(**MONEY, default=Decimal("0"))
    space_per_gpu_hour = models.DecimalField(**MONEY, default=Decimal("0"))
    staff_per_gpu_hour = models.DecimalField(**MONEY, default=Decimal("0"))
    owned_source = models.CharField(max_length=500, blank=True, help_text="Where the owned-basis figures come from.")
    notes = models.TextField(blank=True)
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["cycle", "cluster"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "cycle"], name="clusterprice_one_per_cluster_cycle"),
            models.CheckConstraint(condition=Q(base_per_gpu_hour__isnull=True) | Q(base_per_gpu_hour__gt=0),
                                   name="clusterprice_base_positive"),
            models.CheckConstraint(condition=Q(base="list") | Q(base_per_gpu_hour__isnull=False),
                                   name="clusterprice_negotiated_has_amount"),
            models.CheckConstraint(
                condition=Q(storage_per_gpu_hour__gte=0) & Q(egress_per_gpu_hour__gte=0)
                & Q(support_per_gpu_hour__gte=0) & Q(power_per_gpu_hour__gte=0) & Q(space_per_gpu_hour__gte=0)
                & Q(staff_per_gpu_hour__gte=0),
                name="clusterprice_components_not_negative",
            ),
            models.CheckConstraint(condition=~Q(base_source=""), name="clusterprice_base_has_source"),
            models.CheckConstraint(condition=Q(hours_per_year__gt=0) & Q(hours_per_year__lte=8784),
                                   name="clusterprice_hours_in_a_year"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster} in {self.cycle}"

    @property
    def has_owned_basis(self) -> bool:
        return self.capex_per_gpu is not None

    def clean(self) -> None:
        """Errors in words, per field: every component with its source, the owned basis complete."""
        errors: dict[str, str] = {}
        if not (self.base_source or "").strip():
            errors["base_source"] = "Say where the base price comes from (a URL, a contract reference)."
        if self.base == self.Base.NEGOTIATED and self.base_per_gpu_hour is None:
            errors["base_per_gpu_hour"] = "A negotiated price needs its amount."
        if self.base_per_gpu_hour is not None and self.base_per_gpu_hour <= 0:
            errors["base_per_gpu_hour"] = "The base price must be greater than 0."
        listed = self.cluster.list_price_per_gpu_hour if self.cluster_id is not None else None
        if self.base_per_gpu_hour is None and self.cluster_id is not None and (listed is None or listed <= 0):
            errors["base_per_gpu_hour"] = (
                "The cluster has no list price: enter the price here or set the cluster's list price."
            )
        for extra in EXTRAS:
            amount = getattr(self, f"{extra}_per_gpu_hour")
            if amount is not None and amount < 0:
                errors[f"{extra}_per_gpu_hour"] = f"The {extra} charge cannot be negative."
            elif amount and not (getattr(self, f"{extra}_source") or "").strip():
                errors[f"{extra}_source"] = f"Say where the {extra} charge comes from."
        given = [name for name in OWNED_FIELDS if getattr(self, name) is not None]
        if given and len(given) != len(OWNED_FIELDS):
            for name in OWNED_FIELDS:
                if getattr(self, name) is None:
                    errors[name] = "The owned basis needs capex, discount rate and service life together."
        if given:
            if self.capex_per_gpu is not None and self.capex_per_gpu <= 0:
                errors["capex_per_gpu"] = "Capex per GPU must be greater than 0."
            if self.discount_rate is not None and not 0 <= self.discount_rate < 1:
                errors["discount_rate"] = "The discount rate is a yearly share from 0 to below 1 (e.g. 0.08)."
            if self.life_years is not None and self.life_years <= 0:
                errors["life_years"] = "The service life must be greater than 0 years."
            if not (self.owned_source or "").strip():
                errors["owned_source"] = "Say where the owned-basis figures come from."
        for name in ("power_per_gpu_hour", "space_per_gpu_hour", "staff_per_gpu_hour"):
            value = getattr(self, name)
            if value is not None and value < 0:
                errors[name] = "This cost cannot be negative."
        if self.hours_per_year is not None and not 0 < self.hours_per_year <= 8784:
            errors["hours_per_year"] = "Hours in service a year must be from 1 to 8784."
        if (self.cycle_id is not None and self.cluster_id is not None
                and not self.cycle.providers.filter(pk=self.cluster.provider_id).exists()):
            errors["cluster"] = f"{self.cluster.provider} is not in the peer set of {self.cycle}."
        if errors:
            raise ValidationError(errors)

    def components(self) -> list[dict[str, Any]]:
        """The effective price's parts: name, $/GPU-hour and source (the base from the cluster if empty)."""
        if self.base_per_gpu_hour is not None:
            base = {"name": self.base, "amount": self.base_per_gpu_hour, "source": self.base_source}
        else:
            base = {"name": "list", "amount": self.cluster.list_price_per_gpu_hour,
                    "source": f"{self.base_source} (the cluster's list price)"}
        parts = [base]
        for extra in EXTRAS:
            amount = getattr(self, f"{extra}_per_gpu_hour") or Decimal("0")
            parts.append({"name": extra, "amount": amount,
                          "source": getattr(self, f"{extra}_source") or "none charged"})
        return parts
