"""The quick start's grades step: shipped grades frozen, six months of demo rents per cluster,
nothing recorded twice; the index follows the demo market and the fixed-price list is flagged."""

from __future__ import annotations

import datetime as dt

import pytest

from grades import tracking as trk
from grades.models import GradeDefinition, PriceObservation
from grades.selectors import grade_observations
from quickstart.grades_demo import demo_grades_prepare
from tests.factories import ClusterFactory, ProviderFactory

pytestmark = pytest.mark.django_db


def test_the_demo_seeds_rents_once_and_the_fixed_price_list_is_a_poor_hedge(rubric_2026_2):
    clusters = [ClusterFactory(provider=ProviderFactory(slug=slug, name=slug), gpu_model="", name="main")
                for slug in ("aurora-compute", "borealis-cloud", "cirrus-gpu")]
    lines: list[str] = []
    first = demo_grades_prepare(clusters=clusters, day=dt.date(2026, 12, 1), analyst=None, say=lines.append)
    again = demo_grades_prepare(clusters=clusters, day=dt.date(2026, 12, 1), analyst=None, say=lines.append)
    assert (first["recorded"], again["recorded"]) == (18, 0)
    assert GradeDefinition.objects.filter(status="frozen").count() == 3
    assert PriceObservation.objects.count() == 18
    grade = GradeDefinition.objects.get(name="testbed-slurm-t1")
    observations = grade_observations(grade=grade)["on-demand"]
    points, tracked = trk.tracking_all(observations)
    assert [p.period for p in points] == ["2026-07", "2026-08", "2026-09", "2026-10", "2026-11", "2026-12"]
    assert all(p.count == 3 and not p.thin for p in points)
    by = {t.provider: t for t in tracked}
    assert by["aurora-compute"].poor_hedge is False and by["aurora-compute"].n_pairs == 5
    assert by["aurora-compute"].beta == pytest.approx(1.0)
    assert by["cirrus-gpu"].poor_hedge is True and by["cirrus-gpu"].beta == pytest.approx(0.0)
