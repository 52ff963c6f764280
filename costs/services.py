"""Writes for costs: record or change a cluster's price in a cycle (validated, attributed, audited)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from costs.models import ClusterPrice

EDITABLE = (
    "base", "base_per_gpu_hour", "base_source", "storage_per_gpu_hour", "storage_source", "egress_per_gpu_hour",
    "egress_source", "support_per_gpu_hour", "support_source", "capex_per_gpu", "discount_rate", "life_years",
    "hours_per_year", "power_per_gpu_hour", "space_per_gpu_hour", "staff_per_gpu_hour", "owned_source", "notes",
)


class CostsError(ValueError):
    """A cost write was refused; the message says why."""


def _apply(price: ClusterPrice, values: dict[str, Any], by: Any) -> ClusterPrice:
    unknown = sorted(set(values) - set(EDITABLE))
    if unknown:
        raise CostsError(f"not editable: {', '.join(unknown)}")
    for name, value in values.items():
        setattr(price, name, value)
    price.full_clean()  # field errors in words; nothing is written when they fail
    price._history_user = by if getattr(by, "pk", None) else None  # type: ignore[attr-defined]
    if getattr(by, "pk", None):
        price.recorded_by = by
    price.save()
    return price


@transaction.atomic
def cluster_price_record(*, cluster: Any, cycle: Any, by: Any = None, **values: Any) -> ClusterPrice:
    """Record (or replace the figures of) the cluster's price in the cycle."""
    price = ClusterPrice.objects.select_for_update().filter(cluster=cluster, cycle=cycle).first()
    if price is None:
        price = ClusterPrice(cluster=cluster, cycle=cycle)
    return _apply(price, values, by)


@transaction.atomic
def cluster_price_update(*, price: ClusterPrice, by: Any = None, **values: Any) -> ClusterPrice:
    """Change some figures of a recorded price (the cluster and cycle never change)."""
    price = ClusterPrice.objects.select_for_update().select_related("cluster", "cycle").get(pk=price.pk)
    return _apply(price, values, by)
