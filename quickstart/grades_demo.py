"""The demo's compute grades and observed rents (issue 17).

Loads and freezes the shipped grade definitions (grades/data/: two H100-SXM grades and the
testbed grade T1 that the GPU-less demo clusters can be judged against), then records six
months of rent per demo cluster under the testbed grade, so that the published report carries a
grade sheet, a reference index and each provider's tracking figures.

The rents are synthetic and say so in their source ("demo: synthetic price list"): a small
market path that two providers follow and one (a fixed-price list) does not, so the tracking
table has something to tell apart. Whether a cluster qualifies for a grade is never seeded: it
follows from the cycle's probe findings and tiers alone. Re-running records nothing twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from grades.models import GradeDefinition, PriceObservation
from grades.services import grade_definition_import, price_observation_record

GRADES_DIR = Path(__file__).resolve().parent.parent / "grades" / "data"
GRADE_FILES = ("testbed-slurm-t1.yaml", "h100-sxm-managed-a.yaml", "h100-sxm-managed-b.yaml")
TESTBED_GRADE = ("testbed-slurm-t1", "2026.1")
SOURCE = "demo: synthetic price list (quickstart)"
MARKET = (1.00, 1.04, 1.01, 0.97, 1.00, 1.03)  # month-over-month path of the demo market, oldest first
# $/node-hour stand-in for the GPU-less testbed, per provider slug: (base, follows the market?)
RENTS = {
    "aurora-compute": (Decimal("0.90"), True), "borealis-cloud": (Decimal("0.75"), True),
    "cirrus-gpu": (Decimal("0.60"), False),
}


def _months(day: dt.date, n: int) -> list[dt.date]:
    """The first day of each of the ``n`` months ending with ``day``'s month, oldest first."""
    out, year, month = [], day.year, day.month
    for _ in range(n):
        out.append(dt.date(year, month, 1))
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return out[::-1]


def demo_grades_prepare(*, clusters: Sequence[Any], day: dt.date, analyst: Any,
                        say: Callable[[str], None] = print) -> dict[str, int]:
    """Grades loaded and frozen; six months of demo rents per cluster under the testbed grade."""
    for name in GRADE_FILES:
        path = GRADES_DIR / name
        say(f"  {grade_definition_import(text=path.read_text(encoding='utf-8'), filename=name, freeze=True).message}")
    grade = GradeDefinition.objects.get(name=TESTBED_GRADE[0], version=TESTBED_GRADE[1])
    recorded = 0
    for cluster in clusters:
        base, follows = RENTS.get(cluster.provider.slug, (Decimal("0.60"), True))
        for month, factor in zip(_months(day, len(MARKET)), MARKET, strict=True):
            price = (base * Decimal(str(factor))).quantize(Decimal("0.0001")) if follows else base
            if PriceObservation.objects.filter(grade=grade, cluster=cluster, source=SOURCE, observed_on=month,
                                               term="on-demand").exists():
                continue
            price_observation_record(grade=grade, cluster=cluster, source=SOURCE, observed_on=month,
                                     term="on-demand", price_per_gpu_hour=price, user=analyst)
            recorded += 1
    say(f"  rents: {recorded} observations recorded under {grade.label} ({SOURCE})")
    return {"recorded": recorded}


def grade_sheet_lines(document: dict[str, Any]) -> list[str]:
    """The published grade sheet in a few lines: who qualifies, and each near miss with its reasons."""
    lines = []
    for sheet in (document.get("grades") or {}).get("sheets", []):
        lines.append(f"  {sheet['title']} ({sheet['grade']}): qualifying {', '.join(sheet['qualifying']) or 'none'}")
        for c in sheet["clusters"]:
            if c["status"] == "near_miss":
                why = "; ".join(f"{s['verdict']} {s['requirement']}" + (f" ({s['gap_text']})" if s["gap_text"] else
                                                                       f" ({s['evidence']})") for s in c["shortfalls"])
                lines.append(f"    near miss {c['cluster']}: {why}")
    return lines
