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
from dataclasses import dataclass

import numpy as np

from ratings.engine.layout import Layout, Provider

COMPOSITE_DECIMALS = 12  # composites are rounded before tiering so float noise cannot split a tie
_DOMAIN = 0x6F706772  # "opgr": the uniforms' stream key next to the seed
_CONFIRMATION_DOMAIN = 0x636F6E66  # "conf"
_CONFIRMATION_ENTROPY = 0x6F7067726164652D  # "opgrade-": fixed, so the published tier ignores the seed
_CHUNK = 64  # groups per product: bounds the (providers x atoms) matrix for a thousand providers


def uniforms(seed: int, size: int, slots: int, domain: int = _DOMAIN) -> np.ndarray:
    """(B, slots) uniforms in [0, 1): one per replicate and rubric slot, shared by all providers."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy=seed, spawn_key=(domain,))))
    return rng.random((size, slots))


def confirmation_uniforms(size: int, slots: int) -> np.ndarray:
    """The uniforms of the confirmation bootstrap: a constant stream, never the cycle's seed.

    Whether a gap is confirmed decides the published tier, so it is read from one fixed
    stream (like the confidence threshold, a constant of the method): the same evidence
    publishes the same tiers under every seed. The seed drives the stated P(tier) and the
    intervals only. Common random numbers by slot as for ``uniforms``.
    """
    return uniforms(_CONFIRMATION_ENTROPY, size, slots, _CONFIRMATION_DOMAIN)


def _index(u: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Inverse CDF: the atom index is the number of cumulative probabilities <= u (at most L-1)."""
    return np.searchsorted(np.cumsum(probs)[:-1], u, side="right")


@dataclass
class ReplicatePlan:
    """What ``replicate_scores`` needs besides the uniforms: the grouped streams and their weights.

    It depends on the evidence only, so the seed's bootstrap and the confirmation bootstrap of
    one cycle share it.
    """

    n: int
    has_stream: np.ndarray  # (n, areas)
    # per area, per chunk of groups: the groups (key, first column, probs) and the weighted atoms
    chunks: list[tuple[int, list[tuple[tuple[int, bytes], int, np.ndarray]], np.ndarray]]
    gate_cols: dict[tuple[int, str], list[tuple[int, bytes, np.ndarray]]]
    composite_weights: list[tuple[list[int], np.ndarray] | None]


def replicate_plan(providers: list[Provider], layout: Layout) -> ReplicatePlan:
    n = len(providers)
    n_areas = len(layout.areas)
    has_stream = np.zeros((n, n_areas), dtype=bool)
    groups: dict[tuple[int, bytes], list[tuple[int, float, np.ndarray]]] = defaultdict(list)
    probs_of: dict[tuple[int, bytes], np.ndarray] = {}
    gate_cols: dict[tuple[int, str], list[tuple[int, bytes, np.ndarray]]] = defaultdict(list)
    # Per slot, once: its criterion, area index and whether it is a gate.
    slot_info = [(c, layout.area_index[c.area], c.is_gate) for c, _ in layout.slots]
    # Streams of equal counts share one probs array (median tables, cached pmfs): its bytes once.
    probs_bytes: dict[int, tuple[np.ndarray, bytes]] = {}
    for i, p in enumerate(providers):
        weight_of = p.stream_weight
        for s in p.streams:
            slot, probs = s.slot, s.probs
            c, area_index, is_gate = slot_info[slot]
            known = probs_bytes.get(id(probs))
            if known is None or known[0] is not probs:
                known = probs_bytes[id(probs)] = (probs, probs.tobytes())
            key = (slot, known[1])
            probs_of[key] = probs
            groups[key].append((i, weight_of[slot], s.atoms))
            has_stream[i, area_index] = True
            if is_gate and p.status[c.key] in ("measured", "declined"):
                gate_cols[(i, c.key)].append((slot, key[1], s.atoms))
    # Per area, the weighted atoms of every group side by side (providers x atoms); the
    # matching one-hot rows (atoms x B) come with the uniforms.
    by_area: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    for key in groups:
        by_area[layout.area_index[layout.slots[key[0]][0].area]].append(key)
    chunks = []
    for area, keys in by_area.items():
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            widths = [len(probs_of[k]) for k in chunk]
            offsets = np.concatenate(([0], np.cumsum(widths)))
            weighted = np.zeros((n, int(offsets[-1])))
            members_of = []
            for k, key in enumerate(chunk):
                probs, lo = probs_of[key], int(offsets[k])
                members = groups[key]
                rows = np.array([m[0] for m in members])
                # each member's atoms times its weight: the same products, one broadcast
                weights = np.array([m[1] for m in members], dtype=np.float64)
                weighted[rows, lo : lo + len(probs)] = np.stack([m[2] for m in members]) * weights[:, None]
                members_of.append((key, lo, probs))
            chunks.append((area, members_of, weighted))
    composite_weights: list[tuple[list[int], np.ndarray] | None] = []
    for p in providers:
        measured = [j for j, a in enumerate(layout.areas) if p.area_measured.get(a.key)]
        if measured:
            weights = np.array([p.area_weight[layout.areas[j].key] for j in measured])
            composite_weights.append((measured, weights / weights.sum()))
        else:
            composite_weights.append(None)
    return ReplicatePlan(n, has_stream, chunks, gate_cols, composite_weights)


def replicate_scores(
    providers: list[Provider], layout: Layout, u: np.ndarray, plan: ReplicatePlan | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, str], np.ndarray]]:
    """Replicate composites (n, B), area scores (n, areas, B) and gate criterion scores.

    Gate scores are keyed by (provider position, criterion key): the mean of the criterion's
    streams in each replicate, for gate criteria that are measured. ``plan``: the providers'
    ``replicate_plan``, when it is already made.
    """
    if plan is None:
        plan = replicate_plan(providers, layout)
    n, size = plan.n, u.shape[0]
    areas = np.zeros((n, len(layout.areas), size))
    indices: dict[tuple[int, bytes], np.ndarray] = {}
    columns = np.arange(size)
    for area, members_of, weighted in plan.chunks:
        onehot = np.zeros((weighted.shape[1], size))
        for key, lo, probs in members_of:
            if len(probs) == 1:
                onehot[lo] = 1.0
                continue
            index = indices[key] = _index(u[:, key[0]], probs)
            onehot[lo + index, columns] = 1.0
        areas[:, area, :] += weighted @ onehot
    gates: dict[tuple[int, str], np.ndarray] = {}
    for gkey, cols in plan.gate_cols.items():
        total = np.zeros(size)
        for slot, pbytes, atoms in cols:
            index = indices.get((slot, pbytes))
            total += atoms[index] if index is not None else atoms[0]
        gates[gkey] = total / len(cols)
    composite = np.full((n, size), np.nan)
    for i, weights in enumerate(plan.composite_weights):
        if weights is not None:
            measured, share = weights
            composite[i] = np.round(share @ areas[i, measured, :], COMPOSITE_DECIMALS)
    areas[~plan.has_stream] = np.nan
    return composite, areas, gates
