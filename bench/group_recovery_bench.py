"""Group recovery of the tier rule, old (Ckmeans, number of groups by BIC) against new (issue 14).

Run: `.venv/bin/python bench/group_recovery_bench.py [--samples 200]`. Not a timed test.

Clusters: five true groups of n/5 providers, centres six noise standard deviations apart
(sigma = 0.01 on the 0-1 composite, centres 0.90, 0.84, 0.78, 0.72, 0.66), each provider's
true value spread around its centre by half a sigma; the point composite is the truth plus one
sigma of noise and the bootstrap replicates (B = 400) are the point plus sigma noise, one
independent stream per provider. A provider is "in the right group" when its peer tier (floors
and gates off: the rule alone) equals its true group's rank (0 for the top group ... 4).

Continuum: n providers spread evenly over the same span (0.66-0.90) with the same noise; the
table gives the mean number of groups the rule draws (1 is right: there are no groups).

The old rule is the one this project published before issue 14 (``ratings/tiering.py`` at
commit 4169f06^): Ckmeans.1d.dp with k chosen by BIC in 1..5, a break kept when the providers
either side of it differ with bootstrap probability >= 0.9. The new rule is
``ratings.engine.tiering.point_tiers`` with the same confidence, without and with the 2026.2
minimum gap (0.02).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ckwrap
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ratings.engine import tiering

GROUPS = 5
SIGMA = 0.01
CENTRES = 0.90 - 6 * SIGMA * np.arange(GROUPS)
B = 400
CONFIDENCE = 0.9


def old_rule(x: np.ndarray, reps: np.ndarray) -> np.ndarray:
    """Ckmeans (k by BIC, 1..5) breaks, each kept if P(upper > lower) >= 0.9 for all pairs across it."""
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    if ordered[0] == ordered[-1]:
        return np.zeros(len(x), dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, len(ordered)))
    labels = np.asarray(ckwrap.ckmeans(ordered, (1, min(GROUPS, len(starts)))).labels)
    positions = np.flatnonzero(labels[starts[1:] - 1] != labels[starts[1:]])
    kept_at = np.zeros(len(starts), dtype=np.int64)
    for t in positions:
        lower = order[starts[t] : starts[t] + counts[t]]
        upper = order[starts[t + 1] : starts[t + 1] + counts[t + 1]]
        p = min(np.mean(reps[u] > reps[low]) + 0.5 * np.mean(reps[u] == reps[low]) for u in upper for low in lower)
        kept_at[t] = p >= CONFIDENCE
    above = np.cumsum(kept_at[::-1])[::-1]
    ranks = np.empty(len(x), dtype=np.int64)
    ranks[order] = np.minimum(np.repeat(above, counts), GROUPS - 1)
    return ranks


def new_rule(x: np.ndarray, reps: np.ndarray, min_gap: float, confidence: float = CONFIDENCE) -> np.ndarray:
    pairs = tiering.pair_probabilities(tiering.marginal_grid(reps))
    return tiering.point_tiers(x, pairs, confidence, min_gap)[0]


def simulate(rng: np.random.Generator, n: int, continuum: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if continuum:
        truth = np.linspace(CENTRES[-1], CENTRES[0], n)
        group = np.zeros(n, dtype=np.int64)
    else:
        group = np.repeat(np.arange(GROUPS), n // GROUPS)
        truth = CENTRES[group] + 0.5 * SIGMA * rng.standard_normal(n)
    x = np.round(truth + SIGMA * rng.standard_normal(n), 12)
    reps = x[:, None] + SIGMA * rng.standard_normal((n, B))
    return x, reps, group


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    rules = {
        "old (ckmeans+BIC)": lambda x, r: old_rule(x, r),
        "new": lambda x, r: new_rule(x, r, 0.0),
        "new, min gap 0.02": lambda x, r: new_rule(x, r, 0.02),
        "new, conf 0.99": lambda x, r: new_rule(x, r, 0.02, 0.99),
    }
    print(f"five clusters 6 sd apart (sd {SIGMA}), {args.samples} samples per n; share of providers in the right group")
    print(f"{'n':>4} " + " ".join(f"{name:>18}" for name in rules) + "   | continuum: mean groups drawn " +
          " ".join(f"{name:>18}" for name in rules))
    for n in (10, 20, 40, 80):
        rng = np.random.default_rng(args.seed + n)
        right = dict.fromkeys(rules, 0.0)
        groups = dict.fromkeys(rules, 0.0)
        for _ in range(args.samples):
            x, reps, group = simulate(rng, n, continuum=False)
            for name, rule in rules.items():
                right[name] += float(np.mean(rule(x, reps) == group)) / args.samples
            x, reps, _ = simulate(rng, n, continuum=True)
            for name, rule in rules.items():
                groups[name] += (len(np.unique(rule(x, reps)))) / args.samples
        print(f"{n:>4} " + " ".join(f"{right[k]:>18.3f}" for k in rules) + "   |                              " +
              " ".join(f"{groups[k]:>18.2f}" for k in rules))


if __name__ == "__main__":
    main()
