"""Benchmark of the scoring engine against a naive peer (run: `.venv/bin/python bench/scoring_bench.py`).

Workload (issue 3): P providers x 150 criteria x 5 probe replicates, B=2000 bootstrap
replicates, one core; the tier rule is issue 14's (``ratings.engine.tiering``). The targets
(issues 14, 27): under 1 s CPU at 100 providers, at most 5 s at 1000. It prints wall time, CPU
time and peak memory for the engine at 10, 100 and 1000 providers and how the cost grows, beside
the CPU time of the engine before issue 27 (``bench/previous_engine``) on the same input, then
runs the naive peer on the same inputs:
a straightforward bootstrap that, for every replicate, draws n indices per (provider,
criterion) with ``rng.integers``, takes ``np.median`` of the resample and reruns the same
tier rule. The peer is timed at a small B and extrapolated linearly in B (its cost is linear
in B by construction), and the ratio peer : engine is printed in CPU time (wall time too,
but on a shared machine wall time mostly measures the neighbours). Not a timed test.

Peak memory is ``tracemalloc``'s peak of Python/numpy allocations during a second run of the
same call (numpy reports its buffers to tracemalloc; the timed run is made without it), plus
the process's max RSS from ``resource`` at the end.
Pin one core with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c 0`` (set below).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.previous_engine import score_cycle as previous_score_cycle  # noqa: E402
from ratings.engine import (  # noqa: E402
    content_hash,
    normalise,
    score_cycle,
    tiering,
)
from ratings.engine_types import (  # noqa: E402
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
)

AREAS = ("monitoring", "provisioning", "reliability", "security")


def workload(providers: int, criteria: int = 150, replicates: int = 5, size: int = 2000, seed: int = 7) -> ScoringInput:
    """Synthetic cycle: measured times (log scale, lower is better), providers of graded quality."""
    rng = np.random.default_rng(seed)
    specs = tuple(
        CriterionSpec(
            key=f"c{j:03d}", area=AREAS[j % 4], weight=float(1 + j % 3),
            evidence_kinds=(EvidenceKind.PROBE,), anchor_best=1.0, anchor_worst=1000.0,
            direction=Direction.LOWER, scale=Scale.LOG, probe_id=f"probe-{j}", probe_metric="seconds",
        )
        for j in range(criteria)
    )
    rubric = RubricSpec(
        id="bench", name="bench", version="1", params=ScoringParams(bootstrap_size=size),
        areas=tuple(AreaSpec(a, 1.0) for a in AREAS), criteria=specs, fingerprint="b" * 64,  # as if frozen
    )
    keys = tuple(f"provider-{i:04d}" for i in range(providers))
    quality = rng.uniform(0.5, 6.0, providers)  # log-seconds around which each provider sits
    rows = [
        ProbeObservation("bench", key, c.key, Outcome.PASS, float(np.exp(rng.normal(quality[i], 0.4))))
        for i, key in enumerate(keys)
        for c in specs
        for _ in range(replicates)
    ]
    return ScoringInput(rubric=rubric, providers=keys, seed=seed, probe_observations=tuple(rows))


def measure(fn, *args):  # type: ignore[no-untyped-def]
    """(result, wall s, cpu s, peak MiB): timed without tracemalloc, then re-run under it for memory.

    tracemalloc slows every allocation, so timing and memory come from two runs of the same call.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    tracemalloc.start()
    fn(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, wall, cpu, peak / 2**20


def naive_peer(inp: ScoringInput, size: int) -> np.ndarray:
    """The straightforward bootstrap: explicit index draws + np.median per replicate, same tier rule."""
    rubric = inp.rubric
    crit = {c.key: c for c in rubric.criteria}
    keys = sorted(inp.providers)
    grouped: dict[tuple[str, str], list[float]] = {}
    for row in inp.probe_observations:
        grouped.setdefault((row.provider, row.criterion), []).append(float(row.value))  # type: ignore[arg-type]
    weights = {c.key: c.weight for c in rubric.criteria}
    area_w = {a: 1.0 / len(AREAS) for a in AREAS}
    area_tot = {a: sum(c.weight for c in rubric.criteria if c.area == a) for a in AREAS}
    rng = np.random.default_rng(inp.seed)
    reps = np.empty((len(keys), size))
    for b in range(size):
        for i, key in enumerate(keys):
            total = 0.0
            for ck, c in crit.items():
                vals = normalise(np.array(grouped[(key, ck)]), c)
                sample = vals[rng.integers(0, len(vals), len(vals))]
                total += area_w[c.area] * weights[ck] / area_tot[c.area] * float(np.median(sample))
            reps[i, b] = round(total, 12)
    pairs = tiering.pair_probabilities(tiering.marginal_grid(reps))
    points = np.median(reps, axis=1)
    confidence = rubric.params.boundary_confidence
    peer, _ = tiering.point_tiers(points, pairs, confidence)
    return np.vstack([peer, tiering.joint_tiers(reps).T]).T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="provider counts for the scaling run")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--peer-bootstrap", type=int, default=20, help="B for the naive peer (extrapolated)")
    args = parser.parse_args()
    with contextlib.suppress(AttributeError, OSError):  # pin to one core where the OS allows it
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"engine workload: P providers x 150 criteria x 5 replicates, B={args.bootstrap}, one core")
    print(f"{'providers':>9} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9} {'cpu growth':>12}"
          f" {'previous cpu s':>15} {'prev growth':>12} {'cpu ratio':>10}  hash")
    previous = before = None
    results = {}
    for providers in [int(x) for x in args.sizes.split(",")]:
        inp = workload(providers, size=args.bootstrap)
        start = time.process_time()
        previous_score_cycle(inp)  # the engine before issue 27 (bench/previous_engine), timed only
        old_cpu = time.process_time() - start
        result, wall, cpu, peak = measure(score_cycle, inp)
        growth = f"x{cpu / previous[1]:.1f}/x{providers / previous[0]:.0f}" if previous else "-"
        old_growth = f"x{old_cpu / before:.1f}" if before else "-"
        print(f"{providers:>9} {wall:>8.2f} {cpu:>8.2f} {peak:>9.1f} {growth:>12} {old_cpu:>15.2f} {old_growth:>12}"
              f" {old_cpu / cpu:>9.2f}x  {content_hash(result)[:16]}", flush=True)
        previous, before = (providers, cpu), old_cpu
        results[providers] = (wall, cpu, peak)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS: {rss:.0f} MiB")
    if 100 in results:
        inp = workload(100, size=args.bootstrap)
        _, wall, cpu, peak = measure(naive_peer, inp, args.peer_bootstrap)
        scale = args.bootstrap / args.peer_bootstrap
        print(
            f"naive peer (100 providers, B={args.peer_bootstrap}): wall {wall:.2f} s, cpu {cpu:.2f} s, "
            f"peak {peak:.1f} MiB; extrapolated to B={args.bootstrap}: cpu {cpu * scale:.0f} s"
        )
        print(
            f"ratio naive/engine at 100 providers, B={args.bootstrap}: cpu {cpu * scale / results[100][1]:.0f}x, "
            f"wall {wall * scale / results[100][0]:.0f}x (wall is unreliable on a shared machine)"
        )


if __name__ == "__main__":
    main()
