"""Krippendorff's alpha (ordinal) against a reference example worked by hand."""

from __future__ import annotations

import pytest

from reviews.agreement import ALPHA_FLAG_BELOW, criterion_alphas, ordinal_alpha


def test_ordinal_alpha_matches_a_hand_worked_example():
    """Two reviewers, four providers, scores (0,0) (0,1) (1,1) (2,2).

    Coincidence matrix (each unit of two values adds both ordered pairs, weight 1/(m-1)=1):
        o00 = 2, o01 = o10 = 1, o11 = 2, o22 = 2;  n0 = 3, n1 = 3, n2 = 2, n = 8.
    Ordinal distance  delta_ck = (sum of n_g for g from c to k) - (n_c + n_k)/2, squared:
        d01 = (3+3) - 3 = 3            -> 9
        d02 = (3+3+2) - 2.5 = 5.5      -> 30.25
        d12 = (3+2) - 2.5 = 2.5        -> 6.25
    Observed disagreement  D_o = (1/n) * sum o_ck d2_ck = (1/8) * (1*9 + 1*9) = 2.25
    Expected disagreement  D_e = 1/(n(n-1)) * sum_{c!=k} n_c n_k d2_ck
                               = (1/56) * 2 * (3*3*9 + 3*2*30.25 + 3*2*6.25)
                               = (1/56) * 2 * (81 + 181.5 + 37.5) = 600/56
    alpha = 1 - D_o/D_e = 1 - 2.25*56/600 = 1 - 0.21 = 0.79
    """
    assert ordinal_alpha([[0, 0], [0, 1], [1, 1], [2, 2]]) == pytest.approx(0.79, abs=1e-12)


def test_perfect_agreement_is_one_and_systematic_disagreement_is_negative():
    assert ordinal_alpha([[0, 0], [2, 2], [4, 4]]) == pytest.approx(1.0)
    assert ordinal_alpha([[0, 4], [4, 0], [1, 3]]) < 0


def test_alpha_is_undefined_without_variation_or_pairs():
    assert ordinal_alpha([[3, 3], [3, 3]]) is None
    assert ordinal_alpha([[3]]) is None
    assert ordinal_alpha([]) is None


def test_scores_outside_0_to_4_are_refused():
    with pytest.raises(ValueError, match="outside 0-4"):
        ordinal_alpha([[0, 5], [1, 1]])


def test_criteria_below_the_floor_or_without_data_are_flagged():
    results = {r.criterion_key: r for r in criterion_alphas({
        "agreeing": [[0, 0], [0, 1], [1, 1], [2, 2]],
        "split": [[0, 4], [4, 0], [2, 2]],
        "unreviewed": [],
    })}
    assert not results["agreeing"].flagged and results["agreeing"].units == 4
    assert results["split"].flagged and results["split"].alpha < ALPHA_FLAG_BELOW
    assert results["unreviewed"].flagged and results["unreviewed"].alpha is None
