"""Calibration of P(tier) on generated worlds, current engine beside the previous one (issue 27).

Run: ``nice -n 10 .venv/bin/python bench/calibration_bench.py [--quick] [--cycles 300]``.
Not a timed test; one core.

Worlds. Each cycle draws 8-40 providers, a shape and a noise level:

* *clustered*: two to five groups whose centres lie 0.08-0.16 composite points apart inside
  0.35-0.95, each provider 0.01 around its centre;
* *continuum*: true composites uniform over 0.40-0.92, no groups at all;
* noise: each of the 6 measured criteria (linear, higher is better, anchors 0 and 1, three
  areas) is measured 5 times with normal noise of sd 0.03, 0.08 or 0.20 around the
  provider's true value for that criterion (its true composite plus a fixed offset, sd 0.03,
  that sums to zero over the criteria, so the true composite is exact).

Truth. The same rubric scores the same providers with every replicate at its true value
(noise-free: each pair is certain), and its tier is the truth: the same rule, boundaries
and floors included, on noise-free values.

Figures, per engine, over every rated provider of every cycle:

* the reliability table: the stated probability of the published tier, in bins, against the
  share whose published tier is the truth and the share that an independent re-measurement
  (fresh noise, another seed) publishes;
* ECE (expected calibration error: the bins' |stated - observed| weighted by their counts,
  against the truth) and the 5-class Brier score of P(tier) against the true tier, beside
  the Brier score of a forecaster that states 1.0 for the published tier;
* the seed-flip rate: the same evidence scored with another seed, share of published tiers
  that change (and of cycles with any change);
* replicate sensitivity: one more replicate for every provider and criterion, share of
  published tiers that change and of two-tier moves.

The goals (issue 27): ECE <= 0.05, every bin holding >= 100 providers within 0.05 of its
stated mean, seed flips <= 0.5% of tiers. ``--quick`` runs 40 cycles at B=500 for trying.

``--write-figures PATH`` writes the current engine's figures (reliability bins, ECE, Brier,
seed flips, cycles, date, engine version, the command) as JSON to PATH; the methodology page
reads the committed copy, ``reports/data/calibration.json``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.previous_engine import score_cycle as previous_score_cycle  # noqa: E402
from ratings.engine import ENGINE_VERSION, score_cycle  # noqa: E402
from ratings.engine_types import (  # noqa: E402
    TIERS,
    AreaSpec,
    CriterionSpec,
    Direction,
    EvidenceKind,
    Outcome,
    ProbeObservation,
    RubricSpec,
    Scale,
    ScoringInput,
    ScoringParams,
    ScoringResult,
)

CRITERIA = 6
AREAS = ("monitoring", "provisioning", "reliability")
REPLICATES = 5
NOISE = {"low": 0.03, "mid": 0.08, "high": 0.20}
BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0 + 1e-9)
MIN_GAP = 0.02  # as the shipped rubrics (2026.2, 2026.3)


def rubric(size: int) -> RubricSpec:
    specs = tuple(
        CriterionSpec(
            key=f"c{j}", area=AREAS[j % len(AREAS)], weight=1.0, evidence_kinds=(EvidenceKind.PROBE,),
            anchor_best=1.0, anchor_worst=0.0, direction=Direction.HIGHER, scale=Scale.LINEAR,
            probe_id=f"probe-{j}", probe_metric="value",
        )
        for j in range(CRITERIA)
    )
    return RubricSpec(
        id="calib", name="calibration", version="1",
        params=ScoringParams(bootstrap_size=size, boundary_min_gap=MIN_GAP),
        areas=tuple(AreaSpec(a, 1.0) for a in AREAS), criteria=specs, fingerprint="c" * 64,
    )


@dataclass
class World:
    shape: str
    noise: str
    keys: tuple[str, ...]
    true_values: np.ndarray  # (providers, criteria)
    draws: np.ndarray  # (2 measurements, providers, criteria, REPLICATES + 1) noise, unit sd


def world(rng: np.random.Generator) -> World:
    n = int(rng.integers(8, 41))
    shape = "clustered" if rng.random() < 0.5 else "continuum"
    noise = str(rng.choice(list(NOISE)))
    if shape == "clustered":
        groups = int(rng.integers(2, 6))
        spacing = rng.uniform(0.08, 0.16, groups - 1)
        top = rng.uniform(0.35 + spacing.sum(), 0.95)
        centres = top - np.concatenate(([0.0], np.cumsum(spacing)))
        truth = centres[rng.integers(0, groups, n)] + 0.01 * rng.standard_normal(n)
    else:
        truth = rng.uniform(0.40, 0.92, n)
    offsets = 0.03 * rng.standard_normal((n, CRITERIA))
    offsets -= offsets.mean(axis=1, keepdims=True)
    true_values = np.clip(truth[:, None] + offsets, 0.0, 1.0)
    draws = rng.standard_normal((2, n, CRITERIA, REPLICATES + 1))
    return World(shape, noise, tuple(f"p{i:02d}" for i in range(n)), true_values, draws)


def cycle_input(w: World, size: int, seed: int, *, measurement: int | None, replicates: int = REPLICATES) -> ScoringInput:
    """``measurement`` None: noise-free (every replicate at the true value)."""
    rows = []
    sigma = NOISE[w.noise]
    for i, key in enumerate(w.keys):
        for j in range(CRITERIA):
            for r in range(replicates):
                value = w.true_values[i, j]
                if measurement is not None:
                    value = value + sigma * w.draws[measurement, i, j, r]
                rows.append(ProbeObservation("calib", key, f"c{j}", Outcome.PASS, float(value)))
    return ScoringInput(rubric=rubric(size), providers=w.keys, seed=seed, probe_observations=tuple(rows))


@dataclass
class Tally:
    stated: list[float] = field(default_factory=list)
    right_truth: list[bool] = field(default_factory=list)
    right_again: list[bool] = field(default_factory=list)
    brier: list[float] = field(default_factory=list)
    brier_sure: list[float] = field(default_factory=list)
    seed_flips: int = 0
    seed_cycles: int = 0
    replicate_moves: int = 0
    replicate_two: int = 0
    tiers: int = 0
    cycles: int = 0
    seconds: float = 0.0
    by_kind: dict[str, list[bool]] = field(default_factory=dict)
    stated_by_kind: dict[str, list[float]] = field(default_factory=dict)


def tiers_of(result: ScoringResult) -> dict[str, int]:
    return {p.provider: TIERS.index(p.tier) for p in result.providers if p.rated}


def run_cycle(engine: Callable[[ScoringInput], ScoringResult], w: World, size: int, seed: int, tally: Tally) -> None:
    start = time.process_time()
    truth = tiers_of(engine(cycle_input(w, 50, seed, measurement=None)))
    first = engine(cycle_input(w, size, seed, measurement=0))
    again = tiers_of(engine(cycle_input(w, size, seed + 7919, measurement=1)))
    other_seed = tiers_of(engine(cycle_input(w, size, seed + 1, measurement=0)))
    more = tiers_of(engine(cycle_input(w, size, seed, measurement=0, replicates=REPLICATES + 1)))
    tally.seconds += time.process_time() - start
    published = tiers_of(first)
    flips = 0
    for p in first.providers:
        if not p.rated or p.provider not in truth:
            continue
        tier = published[p.provider]
        probs = np.array([x for _, x in p.probabilities])
        tally.stated.append(float(probs[tier]))
        right = tier == truth[p.provider]
        tally.right_truth.append(right)
        tally.by_kind.setdefault(f"{w.shape}/{w.noise}", []).append(right)
        tally.stated_by_kind.setdefault(f"{w.shape}/{w.noise}", []).append(float(probs[tier]))
        tally.right_again.append(again.get(p.provider) == tier)
        onehot = np.eye(len(TIERS))[truth[p.provider]]
        tally.brier.append(float(np.sum((probs - onehot) ** 2)))
        tally.brier_sure.append(float(np.sum((np.eye(len(TIERS))[tier] - onehot) ** 2)))
        flips += other_seed.get(p.provider) != tier
        move = abs(more.get(p.provider, tier) - tier)
        tally.replicate_moves += move > 0
        tally.replicate_two += move > 1
        tally.tiers += 1
    tally.seed_flips += flips
    tally.seed_cycles += flips > 0
    tally.cycles += 1


def report(name: str, t: Tally) -> dict[str, float]:
    stated = np.array(t.stated)
    truth = np.array(t.right_truth, dtype=float)
    again = np.array(t.right_again, dtype=float)
    total = len(stated)
    print(f"\n== {name}: {t.cycles} cycles, {total} rated providers, engine cpu {t.seconds:.1f} s")
    print(f"{'stated P(tier)':>16} {'providers':>9} {'mean stated':>11} {'vs truth':>9} {'vs re-measure':>13}  ok")
    ece = 0.0
    bins_ok = True
    bins = []
    for lo, hi in itertools.pairwise(BINS):
        inside = (stated >= lo) & (stated < hi)
        count = int(inside.sum())
        if not count:
            continue
        mean, obs_t, obs_a = stated[inside].mean(), truth[inside].mean(), again[inside].mean()
        ece += count / total * abs(mean - obs_t)
        ok = "-" if count < 100 else ("yes" if abs(mean - obs_t) <= 0.05 else "NO")
        bins_ok &= ok != "NO"
        bins.append({
            "low": lo, "high": min(hi, 1.0), "providers": count, "stated": float(mean),
            "observed_truth": float(obs_t), "observed_remeasure": float(obs_a),
        })
        print(f"  [{lo:.2f}, {min(hi, 1.0):.2f}{']' if hi > 1 else ')'} {count:>9} {mean:>11.3f} {obs_t:>9.3f} {obs_a:>13.3f}  {ok}")
    brier, sure = float(np.mean(t.brier)), float(np.mean(t.brier_sure))
    flip = t.seed_flips / max(t.tiers, 1)
    figures = {
        "ece": ece, "brier": brier, "brier_sure": sure, "accuracy": float(truth.mean()),
        "seed_flip_tiers": flip, "seed_flip_cycles": t.seed_cycles / max(t.cycles, 1),
        "replicate_moves": t.replicate_moves / max(t.tiers, 1), "replicate_two": t.replicate_two,
        "bins_ok": bins_ok, "bins": bins, "providers": total, "cycles": t.cycles, "tiers": t.tiers,
    }
    print(f"  published tier = truth: {truth.mean():.3f}; = re-measurement: {again.mean():.3f}")
    print(f"  ECE vs truth {ece:.4f} (goal <= 0.05); bins with >= 100 providers within 0.05: {'yes' if bins_ok else 'NO'}")
    print(f"  5-class Brier {brier:.3f} (a forecaster stating 1.0 for the published tier: {sure:.3f})")
    print(f"  seed flips: {flip:.2%} of tiers (goal <= 0.5%), {figures['seed_flip_cycles']:.1%} of cycles")
    print(f"  one more replicate: {figures['replicate_moves']:.1%} of tiers move, {t.replicate_two} by two or more")
    print("  by world: published = truth (mean stated P), providers")
    for k, v in sorted(t.by_kind.items()):
        print(f"    {k:<16} {np.mean(v):.3f} ({np.mean(t.stated_by_kind[k]):.3f}) {len(v):>6}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--quick", action="store_true", help="40 cycles at B=500")
    parser.add_argument("--engines", default="previous,current")
    parser.add_argument("--write-figures", metavar="PATH", help="write the current engine's figures as JSON")
    args = parser.parse_args()
    cycles, size = (40, 500) if args.quick else (args.cycles, args.bootstrap)
    engines = {"previous": previous_score_cycle, "current": score_cycle}
    print(f"calibration: {cycles} generated cycles (8-40 providers, clustered/continuum, noise "
          f"{'/'.join(f'{v}' for v in NOISE.values())}), B={size}, min gap {MIN_GAP}, seed {args.seed}")
    for name in args.engines.split(","):
        rng = np.random.default_rng(args.seed)
        tally = Tally()
        for c in range(cycles):
            run_cycle(engines[name], world(rng), size, 1000 + c, tally)
        figures = report(f"{name} engine", tally)
        if name == "current" and args.write_figures:
            write_figures(Path(args.write_figures), figures, cycles=cycles, size=size, seed=args.seed)


def write_figures(path: Path, figures: dict, *, cycles: int, size: int, seed: int) -> None:
    """The current engine's figures as the small JSON the methodology page reads."""
    command = f"bench/calibration_bench.py --cycles {cycles} --bootstrap {size} --seed {seed}"
    data = {
        "engine_version": ENGINE_VERSION,
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "command": f"{command} --engines current --write-figures {path.as_posix()}",
        "cycles": cycles, "bootstrap_size": size, "seed": seed,
        "goals": {"ece": 0.05, "bin_tolerance": 0.05, "bin_min_providers": 100, "seed_flip_tiers": 0.005},
        **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in figures.items() if k != "bins"},
        "bins": [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in b.items()} for b in figures["bins"]],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"figures written to {path}")


if __name__ == "__main__":
    main()
