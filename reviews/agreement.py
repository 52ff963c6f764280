"""Inter-reviewer agreement: Krippendorff's alpha (ordinal) per criterion, pure.

Alpha compares the disagreement observed between reviewers of the same unit (one
provider's documentation for one criterion) with the disagreement expected by chance
from all scores given. 1 is perfect agreement, 0 is chance, below 0.667 conclusions are
tentative at best (Krippendorff 2004, p. 241), so such criteria are flagged for the
analysts. The ordinal level fits the 0-4 anchors: 0 vs 4 is a bigger miss than 1 vs 2,
by how many scores lie between them. Computed with the well-kept `krippendorff` package.

Pure: plain numbers in, a frozen dataclass out; no models, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np

SCORE_DOMAIN: tuple[int, ...] = (0, 1, 2, 3, 4)
ALPHA_FLAG_BELOW = 0.667


@dataclass(frozen=True)
class AlphaResult:
    """Agreement on one criterion: alpha (None when undefined), units used, and the flag."""

    criterion_key: str
    alpha: float | None
    units: int
    flagged: bool
    reason: str = ""


def ordinal_alpha(units: Sequence[Sequence[int]]) -> float | None:
    """Krippendorff's alpha, ordinal level, over units each holding 2+ reviewers' scores.

    Returns None when alpha is undefined: fewer than two pairable units' worth of
    values, or no variation at all (expected disagreement zero).
    """
    pairable = [list(u) for u in units if len(u) >= 2]
    if not pairable:
        return None
    values = {v for u in pairable for v in u}
    if len(values) < 2:
        return None
    for unit in pairable:
        for value in unit:
            if value not in SCORE_DOMAIN:
                raise ValueError(f"score {value!r} is outside 0-4")
    width = max(len(u) for u in pairable)
    # reliability_data is reviewers x units; a unit with fewer reviewers has NaN gaps.
    matrix = np.full((width, len(pairable)), np.nan)
    for column, unit in enumerate(pairable):
        for row, value in enumerate(unit):
            matrix[row, column] = value
    alpha = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=list(SCORE_DOMAIN)
    )
    return None if math.isnan(alpha) else float(alpha)


def criterion_alphas(units_by_criterion: Mapping[str, Sequence[Sequence[int]]]) -> list[AlphaResult]:
    """Alpha per criterion key, flagged below 0.667 or when it cannot be computed."""
    results = []
    for key in sorted(units_by_criterion):
        units = [u for u in units_by_criterion[key] if len(u) >= 2]
        alpha = ordinal_alpha(units)
        if alpha is None:
            reason = "not enough double-reviewed units or no variation" if units else "no double-reviewed units"
            results.append(AlphaResult(key, None, len(units), flagged=True, reason=reason))
        else:
            flagged = alpha < ALPHA_FLAG_BELOW
            reason = f"alpha below {ALPHA_FLAG_BELOW}" if flagged else ""
            results.append(AlphaResult(key, alpha, len(units), flagged=flagged, reason=reason))
    return results
