"""The bootstrap: common random numbers, keyed by the seed and the rubric slot.

Replicate b draws one uniform ``U[b, slot]`` per (criterion, kind) slot of the rubric, and
every provider's stream in that slot is inverted through its own CDF at that same uniform.
The stream of a provider therefore does not depend on its name, on the other providers or on
the order of anything: identical evidence gives identical replicates, and an improvement of
one provider's evidence moves each of its replicates up (never down) for every uniform (the
atoms rise, or the CDF moves down at fixed ascending atoms). Each provider's replicates are a
sample of its own sampling distribution; the tier rule compares providers through these
distributions as independent samples (``tiering.pair_probabilities``), never through the
pairing of their replicates, so sharing the uniforms costs no independence where it matters.

The replicate composites are built by one small matrix product per group of streams that
share a slot and a CDF: a one-hot matrix of the atom indices, so each product adds exact
zeros and one weighted atom (identical rows give bit-identical sums).

Pure: numpy only.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from bench.previous_engine.layout import Layout, Provider

COMPOSITE_DECIMALS = 12  # composites are rounded before tiering so float noise cannot split a tie
_DOMAIN = 0x6F706772  # "opgr": the uniforms' stream key next to the seed
_CHUNK = 64  # groups per product: bounds the (providers x atoms) matrix for a thousand providers


def uniforms(seed: int, size: int, slots: int) -> np.ndarray:
    """(B, slots) uniforms in [0, 1): one per replicate and rubric slot, shared by all providers."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy=seed, spawn_key=(_DOMAIN,))))
    return rng.random((size, slots))


def _index(u: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Inverse CDF: the atom index is the number of cumulative probabilities <= u (at most L-1)."""
    return np.searchsorted(np.cumsum(probs)[:-1], u, side="right")


def replicate_scores(
    providers: list[Provider], layout: Layout, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, str], np.ndarray]]:
    """Replicate composites (n, B), area scores (n, areas, B) and gate criterion scores.

    Gate scores are keyed by (provider position, criterion key): the mean of the criterion's
    streams in each replicate, for gate criteria that are measured.
    """
    n, size = len(providers), u.shape[0]
    n_areas = len(layout.areas)
    areas = np.zeros((n, n_areas, size))
    has_stream = np.zeros((n, n_areas), dtype=bool)
    groups: dict[tuple[int, bytes], list[tuple[int, float, np.ndarray]]] = defaultdict(list)
    probs_of: dict[tuple[int, bytes], np.ndarray] = {}
    gate_cols: dict[tuple[int, str], list[tuple[int, bytes, np.ndarray]]] = defaultdict(list)
    for i, p in enumerate(providers):
        for s in p.streams:
            c = layout.slots[s.slot][0]
            key = (s.slot, s.probs.tobytes())
            probs_of[key] = s.probs
            groups[key].append((i, p.stream_weight[s.slot], s.atoms))
            has_stream[i, layout.area_index[c.area]] = True
            if c.is_gate and p.status[c.key] in ("measured", "declined"):
                gate_cols[(i, c.key)].append((s.slot, key[1], s.atoms))
    indices: dict[tuple[int, bytes], np.ndarray] = {}
    # Per area, the weighted atoms of every group side by side (providers x atoms) and the
    # matching one-hot rows (atoms x B): one product adds up the area, in column chunks.
    by_area: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    for key in groups:
        by_area[layout.area_index[layout.slots[key[0]][0].area]].append(key)
    for area, keys in by_area.items():
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            widths = [len(probs_of[k]) for k in chunk]
            offsets = np.concatenate(([0], np.cumsum(widths)))
            weighted = np.zeros((n, int(offsets[-1])))
            onehot = np.zeros((int(offsets[-1]), size))
            for k, key in enumerate(chunk):
                probs, lo = probs_of[key], int(offsets[k])
                members = groups[key]
                rows = np.array([m[0] for m in members])
                weighted[rows, lo : lo + len(probs)] = np.stack([m[1] * m[2] for m in members])
                if len(probs) == 1:
                    onehot[lo] = 1.0
                    continue
                index = indices[key] = _index(u[:, key[0]], probs)
                onehot[lo + index, np.arange(size)] = 1.0
            areas[:, area, :] += weighted @ onehot
    gates: dict[tuple[int, str], np.ndarray] = {}
    for gkey, cols in gate_cols.items():
        total = np.zeros(size)
        for slot, pbytes, atoms in cols:
            index = indices.get((slot, pbytes))
            total += atoms[index] if index is not None else atoms[0]
        gates[gkey] = total / len(cols)
    composite = np.full((n, size), np.nan)
    for i, p in enumerate(providers):
        measured = [j for j, a in enumerate(layout.areas) if p.area_measured.get(a.key)]
        if measured:
            weights = np.array([p.area_weight[layout.areas[j].key] for j in measured])
            weights = weights / weights.sum()
            composite[i] = np.round(weights @ areas[i, measured, :], COMPOSITE_DECIMALS)
    areas[~has_stream] = np.nan
    return composite, areas, gates
