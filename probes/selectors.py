"""Reads of probe evidence for the apps above probes (ratings' evidence, the provider portal).

Other apps read findings only through these functions, never through ``probes.models``
(the import-linter contract in .importlinter keeps it that way for everything but probes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import QuerySet

from probes.models import Finding
from probes.thresholds import real_scale_value
from providers.models import Cycle, Provider


@dataclass(frozen=True)
class CycleFinding:
    """One finding as the scoring engine's evidence gatherer reads it (no model objects)."""

    probe_id: str
    metric: str
    outcome: str
    value: float | None
    provider_slug: str
    critical: bool = False  # flagged critical: fails its gate in any replicate (issue 14)
    ref: str = ""  # "finding <id>": named by the engine when it fails a gate


def findings_for_cycle(*, cycle: Cycle) -> Iterator[CycleFinding]:
    """Every finding recorded by the cycle's probe runs, oldest first (the engine's order).

    Streamed in chunks: a cycle of a large peer set holds hundreds of thousands of findings.
    """
    rows = (
        Finding.objects.filter(run__cycle=cycle)
        .values_list(
            "probe_id", "metric", "outcome", "value", "threshold_ref", "run__cluster__provider__slug", "critical", "id"
        )
        .order_by("id")
    )
    for probe_id, metric, outcome, value, ref, provider, critical, pk in rows.iterator(chunk_size=5000):
        # a value judged on a scale row (a testbed's seconds) is restated on the anchors' real scale
        value = real_scale_value(probe_id, metric, value, ref or "")
        yield CycleFinding(probe_id, metric, outcome, value, provider, bool(critical), f"finding {pk}")


def findings_for_provider(*, provider: Provider, cycle: Cycle) -> QuerySet[Finding]:
    """The provider's own findings in a cycle (its own clusters only), for the provider portal."""
    return (
        Finding.objects.filter(run__cluster__provider=provider, run__cycle=cycle)
        .select_related("run__cluster").order_by("probe_id", "metric", "target")
    )
