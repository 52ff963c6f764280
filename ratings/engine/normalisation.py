"""Normalisation: raw values onto [0, 1] against the rubric's anchors, linear or log."""

from __future__ import annotations

import math

import numpy as np

from ratings.engine_types import CriterionSpec, Scale


def normalise(values: np.ndarray | float, criterion: CriterionSpec) -> np.ndarray:
    """Map raw values onto [0, 1] against the rubric's anchors (1 = best anchor or better)."""
    best, worst = float(criterion.anchor_best), float(criterion.anchor_worst)
    x = np.clip(np.asarray(values, dtype=np.float64), min(best, worst), max(best, worst))
    if criterion.scale == Scale.LOG:
        score = (np.log(x) - math.log(worst)) / (math.log(best) - math.log(worst))
    else:
        score = (x - worst) / (best - worst)
    return np.clip(score, 0.0, 1.0)

