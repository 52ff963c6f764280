"""The price index and tracking statistics against small examples worked by hand."""

from __future__ import annotations

import math

import pytest

from grades import tracking as trk
from grades.tracking import Observation


def test_the_index_is_the_median_with_count_spread_and_thinness_worked_by_hand() -> None:
    """Worked by hand.

    2026-01 holds 2.0, 3.0, 4.0, 10.0 ($/GPU-h): median (3 + 4) / 2 = 3.5, count 4, min 2, max 10.
    Quartiles, inclusive method (position p x (n - 1) in the sorted list, n = 4):
      p25 at 0.75: 2 + 0.75 x (3 - 2) = 2.75;  p75 at 2.25: 4 + 0.25 x (10 - 4) = 5.5.
    4 >= MIN_COUNT (3): not thin.
    2026-02 holds 3.0 and 5.0: median 4.0, count 2 < 3: thin; p25 = 3.5, p75 = 4.5.
    """
    obs = [Observation("a", "2026-01", p) for p in (10.0, 2.0, 4.0, 3.0)] + [
        Observation("b", "2026-02", 3.0), Observation("c", "2026-02", 5.0)]
    jan, feb = trk.reference_index(obs)
    assert (jan.period, jan.median, jan.count, jan.low, jan.high, jan.thin) == ("2026-01", 3.5, 4, 2.0, 10.0, False)
    assert jan.p25 == pytest.approx(2.75) and jan.p75 == pytest.approx(5.5)
    assert (feb.median, feb.count, feb.thin) == (4.0, 2, True)
    assert feb.p25 == pytest.approx(3.5) and feb.p75 == pytest.approx(4.5)


def test_a_period_with_no_observations_is_an_error_not_a_zero() -> None:
    with pytest.raises(trk.NoObservations, match="2026-03"):
        trk.index_point("2026-03", [])


def test_changes_are_taken_between_adjacent_months_only() -> None:
    """10 -> 11 (Jan -> Feb) is +10%; March is missing, so April's 12 has no change (a gap breaks the chain);
    December -> January crosses the year."""
    changes = trk.changes({"2025-12": 8.0, "2026-01": 10.0, "2026-02": 11.0, "2026-04": 12.0})
    assert changes == {"2026-01": pytest.approx(0.25), "2026-02": pytest.approx(0.10)}


INDEX = {"2026-01": 10.0, "2026-02": 11.0, "2026-03": 9.9, "2026-04": 10.89}


def test_tracking_statistics_worked_by_hand() -> None:
    """Worked by hand.

    Index 10, 11, 9.9, 10.89: changes x = +0.10, -0.10, +0.10 (mean 1/30).
    Provider B rents 5, 5.5, 5.5, 6.05: changes y = +0.10, 0, +0.10 (mean 2/30).
      Deviations: dx = (2/30, -4/30, 2/30), dy = (1/30, -2/30, 1/30) = dx / 2, so
      correlation = 1, beta = cov / var(x) = 1/2.
      y - x = (0, 0.10, 0): mean 1/30, deviations (-1/30, 2/30, -1/30), squares sum 6/900,
      sample variance (n - 1 = 2) 3/900, tracking error = sqrt(3/900) = 0.057735 (<= 0.10).
      3 pairs >= MIN_PAIRS: judged, and it tracks (not a poor hedge).
    Provider C rents 10, 9, 9.9, 8.91: changes y = -0.10, +0.10, -0.10 = -x, so
      correlation = -1, beta = -1; y - x = (-0.2, 0.2, -0.2): mean -1/15, deviations
      (-2/15, 4/15, -2/15), squares sum 24/225, sample variance 12/225,
      tracking error = sqrt(12/225) = 0.230940. Correlation below 0.5: a poor hedge match.
    """
    b = trk.tracking("b", {"2026-01": 5.0, "2026-02": 5.5, "2026-03": 5.5, "2026-04": 6.05}, INDEX)
    assert (b.n_pairs, b.n_periods) == (3, 4)
    assert b.correlation == pytest.approx(1.0)
    assert b.beta == pytest.approx(0.5)
    assert b.tracking_error == pytest.approx(math.sqrt(3 / 900))
    assert b.poor_hedge is False
    c = trk.tracking("c", {"2026-01": 10.0, "2026-02": 9.0, "2026-03": 9.9, "2026-04": 8.91}, INDEX)
    assert c.correlation == pytest.approx(-1.0)
    assert c.beta == pytest.approx(-1.0)
    assert c.tracking_error == pytest.approx(math.sqrt(12 / 225))
    assert c.poor_hedge is True and "correlation" in c.reason


def test_too_few_pairs_is_not_judged_either_way() -> None:
    t = trk.tracking("d", {"2026-01": 5.0, "2026-02": 5.5}, INDEX)
    assert t.n_pairs == 1 and t.poor_hedge is None and t.correlation is None and t.tracking_error is None


def test_a_flat_rent_against_a_moving_index_is_a_poor_hedge() -> None:
    """Constant rent: its changes have no variance, so the correlation is undefined; beta is 0."""
    t = trk.tracking("e", dict.fromkeys(INDEX, 7.0), INDEX)
    assert t.correlation is None and t.beta == pytest.approx(0.0) and t.poor_hedge is True


def test_tracking_all_uses_the_median_of_every_provider_as_the_index() -> None:
    """Two providers each month; the index is the median of the two (their mean). Provider x rents
    4, 4.4, 4.84, 5.324 (+10% a month); y rents 6, 6.6, 7.26, 7.986 (+10%): the index 5, 5.5, 6.05,
    6.655 also moves +10% a month, so both track it with zero tracking error; the changes are constant,
    so the correlation is undefined and both are flagged (no variation to correlate)."""
    obs = []
    for i, period in enumerate(("2026-01", "2026-02", "2026-03", "2026-04")):
        obs += [Observation("x", period, 4.0 * 1.1**i), Observation("y", period, 6.0 * 1.1**i)]
    points, tracked = trk.tracking_all(obs)
    assert [p.median for p in points] == pytest.approx([5.0, 5.5, 6.05, 6.655])
    assert all(p.thin for p in points)  # two observations a month < 3
    assert [t.provider for t in tracked] == ["x", "y"]
    assert all(t.tracking_error == pytest.approx(0.0, abs=1e-12) for t in tracked)
