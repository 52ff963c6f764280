"""The scoring pipeline: evidence -> criterion scores -> areas -> composite -> tiers, with confidence.

Pure: frozen dataclasses in (``engine_types.ScoringInput``), frozen dataclasses out
(``engine_types.ScoringResult``); numpy/scipy only, no Django, no clock, no global RNG.
Same input and seed give byte-identical ``canonical_json`` and therefore the same hash.

1. **Streams** (``streams``): one exact resampling distribution per (criterion, kind) of a
   provider: median of probe replicates, ``(k+1)/(n+2)`` pass rates, doc-review medians (or
   the reconciled value), customer feedback shrunk toward the rubric's prior.
2. **Layout** (``layout``): statuses, exact coverage, area and stream weights, failed gates.
3. **Point estimate**: area score = weighted mean of its scored criteria (a criterion scores
   the mean of its kinds); composite = area-weighted mean of the areas that take part.
   Below the coverage floor a provider is Not rated: no tier, no composite in the result,
   and no part in anyone else's tier.
4. **Bootstrap** (``sampling``): B replicates with common random numbers keyed by the seed
   and the rubric slot; each provider's replicate composites are its sampling distribution.
5. **Tiers** (``tiering``): boundaries only in confirmed gaps, at most four by size; floors
   and gates as caps; P(tier) from the provider's own replicates with the peers at their
   point composites; composite CI; borderline/outlook; hysteresis on cumulative probabilities.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from bench.previous_engine import tiering
from bench.previous_engine.layout import Layout, Provider, build_providers, plan_weights
from bench.previous_engine.sampling import COMPOSITE_DECIMALS, replicate_scores, uniforms
from ratings.engine.hashing import ENGINE_VERSION, inputs_hash
from ratings.engine.streams import Stream
from ratings.engine.validation import validate_input
from ratings.engine_types import (
    NOT_RATED,
    TIERS,
    AreaResult,
    Boundary,
    CriterionResult,
    EvidenceKind,
    GateCap,
    KindResult,
    ProviderResult,
    RubricSpec,
    ScoringInput,
    ScoringResult,
)

REPORTED_CUTS = 4  # besides the chosen boundaries, the largest gaps are reported (chosen or not)


def _point_scores(p: Provider, layout: Layout) -> tuple[float, np.ndarray, dict[str, float]]:
    """Point composite, area scores (NaN where no stream) and measured gate criterion scores."""
    areas = np.zeros(len(layout.areas))
    has = np.zeros(len(layout.areas), dtype=bool)
    gate_parts: dict[str, list[float]] = defaultdict(list)
    for s in p.streams:
        c = layout.slots[s.slot][0]
        a = layout.area_index[c.area]
        areas[a] += p.stream_weight[s.slot] * s.point
        has[a] = True
        if c.is_gate and p.status[c.key] in ("measured", "declined"):
            gate_parts[c.key].append(s.point)
    areas[~has] = np.nan
    measured = [j for j, a in enumerate(layout.areas) if p.area_measured.get(a.key)]
    composite = math.nan
    if measured:
        weights = np.array([p.area_weight[layout.areas[j].key] for j in measured])
        weights = weights / weights.sum()
        composite = float(np.round(weights @ areas[measured], COMPOSITE_DECIMALS))
    gates = {k: math.fsum(v) / len(v) for k, v in gate_parts.items()}
    return composite, areas, gates


def _gate_cap(p: Provider, layout: Layout, gate_scores: dict[str, float | np.ndarray], size: int) -> np.ndarray:
    """Cap index per replicate (0 = no cap): failed findings in every replicate, scores per replicate."""
    caps = np.zeros(size, dtype=np.int64)
    for key in p.gate_failures:
        caps = np.maximum(caps, TIERS.index(layout.by_key[key].gate_cap_tier))
    for key, scores in gate_scores.items():
        c = layout.by_key[key]
        caps = np.where(np.asarray(scores) < c.gate_threshold, np.maximum(caps, TIERS.index(c.gate_cap_tier)), caps)
    return caps


def score_cycle(inp: ScoringInput) -> ScoringResult:
    """Score one cycle. Raises ``ScoringInputError`` (and subclasses) on bad input."""
    validate_input(inp)
    rubric, params = inp.rubric, inp.rubric.params
    layout = Layout(rubric)
    providers = build_providers(inp, layout)
    for p in providers:
        plan_weights(p, layout, rubric)
    size = params.bootstrap_size
    point = [_point_scores(p, layout) for p in providers]

    # Bootstrap, rated providers only (the others take part in nothing).
    rated = [i for i, p in enumerate(providers) if p.rated]
    rated_providers = [providers[i] for i in rated]
    u = uniforms(inp.seed, size, len(layout.slots))
    replicates, area_reps, gate_reps = replicate_scores(rated_providers, layout, u)
    del u
    floors, confidence = params.tier_floors, params.boundary_confidence
    composites = np.array([point[i][0] for i in rated])
    n = len(rated)
    point_caps = np.array(
        [int(_gate_cap(providers[i], layout, point[i][2], 1)[0]) for i in rated], dtype=np.int64
    )
    probs = np.zeros((n, len(TIERS)))
    cuts: list[tiering.Cut] = []
    point_tiers = np.zeros(n, dtype=np.int64)
    if n:
        pairs = tiering.pair_probabilities(tiering.marginal_grid(replicates))
        peer, cuts = tiering.point_tiers(composites, pairs, confidence, params.boundary_min_gap)
        point_tiers = np.maximum(np.maximum(peer, tiering.floor_tier_index(composites, floors)), point_caps)
        rep_tiers = np.empty((n, size), dtype=np.int64)
        for r, p in enumerate(rated_providers):
            gates = {key: v for (row, key), v in gate_reps.items() if row == r}
            rep_tiers[r] = np.maximum(
                np.maximum(
                    tiering.conditional_tiers(composites, pairs, confidence, r, replicates[r], params.boundary_min_gap),
                    tiering.floor_tier_index(replicates[r], floors),
                ),
                _gate_cap(p, layout, gates, size),
            )
        probs = tiering.tier_probabilities(rep_tiers)
        del rep_tiers

    previous = {pt.provider: TIERS.index(pt.tier) for pt in inp.previous_tiers}
    level = params.ci_level
    quantiles = [(1 - level) / 2, 1 - (1 - level) / 2]
    rated_pos = {i: r for r, i in enumerate(rated)}
    results: list[ProviderResult] = []
    for i, p in enumerate(providers):
        r = rated_pos.get(i)
        tiered = None
        if r is not None:
            tiered = (
                int(point_tiers[r]), probs[r], int(point_caps[r]),
                np.quantile(replicates[r], quantiles), np.quantile(area_reps[r], quantiles, axis=1),
            )
        results.append(_provider_result(p, layout, rubric, point[i], tiered, previous.get(p.key)))
    keys = [providers[i].key for i in rated]
    return ScoringResult(
        engine_version=ENGINE_VERSION,
        rubric_id=rubric.id,
        rubric_name=rubric.name,
        rubric_version=rubric.version,
        rubric_fingerprint=rubric.fingerprint,
        seed=inp.seed,
        bootstrap_size=size,
        inputs_hash=inputs_hash(inp),
        providers=tuple(results),
        boundaries=_boundaries(cuts, keys),
    )


def _boundaries(cuts: list[tiering.Cut], keys: list[str]) -> tuple[Boundary, ...]:
    """The chosen boundaries and the largest gaps (chosen or not), top first."""
    largest = sorted(range(len(cuts)), key=lambda j: (-cuts[j].gap, j))[:REPORTED_CUTS]
    shown = sorted({j for j, c in enumerate(cuts) if c.chosen} | set(largest))
    return tuple(
        Boundary(
            upper_provider=min(keys[u] for u in cuts[j].upper),
            lower_provider=max(keys[low] for low in cuts[j].lower),
            upper_composite=cuts[j].upper_value,
            lower_composite=cuts[j].lower_value,
            probability=cuts[j].confidence,
            kept=cuts[j].chosen,
        )
        for j in shown
    )


def _display_value(s: Stream) -> float:
    if s.kind == EvidenceKind.CUSTOMER_FEEDBACK:
        return 1.0 + 4.0 * s.point  # the shrunk rating on its 1-5 scale
    return s.value


def _provider_result(
    p: Provider,
    layout: Layout,
    rubric: RubricSpec,
    point: tuple[float, np.ndarray, dict[str, float]],
    tiered: tuple[int, np.ndarray, int, np.ndarray, np.ndarray] | None,
    previous: int | None,
) -> ProviderResult:
    composite_point, area_point, gate_scores = point
    flags: list[str] = []
    gate_caps: list[GateCap] = []
    criteria: list[CriterionResult] = []
    area_norm = math.fsum(p.area_weight[a] for a, m in p.area_measured.items() if m)
    pessimistic_parts: list[float] = []
    streams_of: dict[str, list[Stream]] = defaultdict(list)
    for s in p.streams:
        streams_of[layout.slots[s.slot][0].key].append(s)
    for c in layout.criteria:
        own = streams_of.get(c.key, [])
        kinds = tuple(
            KindResult(
                kind=str(s.kind), value=_display_value(s), score=s.point, n=s.n,
                raw_mean=s.value if s.kind == EvidenceKind.CUSTOMER_FEEDBACK else None,
            )
            for s in own
        )
        score = math.fsum(s.point for s in own) / len(own) if own else None
        share = 0.0
        if score is not None and p.area_measured.get(c.area):  # an excluded area counts 0 here too
            share = p.area_weight[c.area] / area_norm * math.fsum(p.stream_weight[s.slot] for s in own)
            pessimistic_parts.append(p.area_weight[c.area] * c.weight / p.applicable_weight[c.area] * score)
        failure = p.gate_failures.get(c.key)
        gate_score = gate_scores.get(c.key)
        failed = failure is not None or (gate_score is not None and gate_score < c.gate_threshold)
        if failure is not None:
            gate_caps.append(GateCap(
                criterion=c.key, cap_tier=c.gate_cap_tier, score=gate_score if gate_score is not None else 0.0,
                reason=failure.reason, replicate=failure.replicate, replicates=failure.replicates,
                finding=failure.finding,
            ))
        elif failed:
            gate_caps.append(GateCap(criterion=c.key, cap_tier=c.gate_cap_tier, score=float(gate_score)))  # type: ignore[arg-type]
        if c.is_gate and p.status[c.key] == "missing":
            flags.append(f"gate_unmeasured:{c.key}")
        if p.status[c.key] == "declined":
            flags.append(f"declined:{c.key}")
        if any(k.kind == EvidenceKind.OVERRIDE for k in kinds):
            flags.append(f"override:{c.key}")
        if c.key in p.critical_overridden:  # the tier rests on an override that lifted a critical gate
            flags.append(f"critical_overridden:{c.key}")
        if c.key in p.critical_kept:  # an override that may not lift a critical gate: the cap stays
            flags.append(f"override_kept_critical_cap:{c.key}")
        criteria.append(
            CriterionResult(
                key=c.key, area=c.area, status=p.status[c.key], score=score, weight_share=share,
                kinds=kinds, n_missing=p.n_missing[c.key], is_gate=c.is_gate, gate_failed=failed,
            )
        )
    area_ci = tiered[4] if tiered is not None else None
    areas = []
    for a_index, a in enumerate(layout.areas):
        measured = bool(p.area_measured.get(a.key))
        low = high = None
        if area_ci is not None and measured:
            low, high = float(area_ci[0, a_index]), float(area_ci[1, a_index])
        value = area_point[a_index]
        areas.append(
            AreaResult(
                key=a.key, weight=p.area_weight.get(a.key, 0.0), measured=measured,
                score=None if np.isnan(value) else float(value), coverage=p.area_coverage.get(a.key, 0.0),
                ci_low=low, ci_high=high,
            )
        )
    common = {
        "provider": p.key, "coverage": p.coverage, "gate_caps": tuple(gate_caps), "areas": tuple(areas),
        "criteria": tuple(criteria),
    }
    previous_tier = None if previous is None else TIERS[previous]
    if tiered is None:
        # Not rated: no tier and no composite anywhere it could be read as a score.
        flags.append("below_coverage_floor")
        return ProviderResult(
            rated=False, tier=NOT_RATED, tier_point=None, previous_tier=previous_tier, hysteresis_held=False,
            probabilities=(), composite=None, composite_pessimistic=None, ci_low=None, ci_high=None,
            borderline=False, outlook="stable", floor_capped=False, flags=tuple(sorted(flags)), **common,
        )
    point_tier, probs, gate_cap, ci, _ = tiered
    params = rubric.params
    floor_cap = int(tiering.floor_tier_index(np.array([composite_point]), params.tier_floors)[0])
    tier, held, borderline, outlook = tiering.publish(
        point_tier, probs, previous, params.hysteresis_threshold, params.borderline_threshold,
        max(floor_cap, gate_cap),
    )
    if held:
        flags.append("hysteresis_held")
    if borderline:
        flags.append(f"borderline:{outlook}")
    if gate_caps and gate_cap >= point_tier:
        flags.append("gate_capped")
    # floor_capped: the floor, not the peers or a gate, set the tier.
    floor_capped = floor_cap == point_tier and floor_cap > gate_cap and floor_cap > 0
    return ProviderResult(
        rated=True, tier=TIERS[tier], tier_point=TIERS[point_tier], previous_tier=previous_tier,
        hysteresis_held=held, probabilities=tuple((t, float(probs[j])) for j, t in enumerate(TIERS)),
        composite=composite_point, composite_pessimistic=math.fsum(pessimistic_parts),
        ci_low=float(ci[0]), ci_high=float(ci[1]), borderline=borderline, outlook=outlook,
        floor_capped=floor_capped, flags=tuple(sorted(flags)), **common,
    )
