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
   Below the coverage floor (measured and declined criteria count toward it) a provider is
   Not rated: no tier, no composite in the result, and no part in anyone else's tier.
4. **Bootstrap** (``sampling``): B replicates with common random numbers keyed by the seed
   and the rubric slot; each provider's replicate composites are its sampling distribution.
   A second bootstrap on a fixed stream confirms the gaps, so the seed never moves a tier.
5. **Tiers** (``tiering``): boundaries only in confirmed gaps, at most four by size; floors
   and gates as caps; P(tier) from the whole rule rerun on every joint replicate of the
   field (boundaries included); composite CI; borderline/outlook; hysteresis on cumulative
   probabilities of the confirmation stream.
"""

from __future__ import annotations

import gc
import math
from collections import defaultdict
from typing import Any

import numpy as np

from ratings.engine import tiering
from ratings.engine.hashing import ENGINE_VERSION, inputs_hash
from ratings.engine.layout import Layout, Provider, build_providers, plan_weights
from ratings.engine.sampling import (
    COMPOSITE_DECIMALS,
    confirmation_uniforms,
    replicate_plan,
    replicate_scores,
    uniforms,
)
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
    TierFloors,
)

REPORTED_CUTS = 4  # besides the chosen boundaries, the largest gaps are reported (chosen or not)


def _maker(cls: type) -> Any:
    """A constructor for a frozen result type that fills ``__dict__`` in one step.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; a result
    holds one record per criterion and kind (150,000 at 1,000 providers), so this builds the
    same object (equal, same fields) without that cost. Every field must be passed
    (``tests/ratings/test_engine_speed.py`` checks the records against their own ``__init__``).
    Types with ``__slots__`` or a ``__post_init__`` keep their own ``__init__``.
    """
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        return cls
    fields = getattr(cls, "__dataclass_fields__", None)
    if not fields:
        return cls
    new = object.__new__

    def make(**values: Any) -> Any:
        record = new(cls)
        record.__dict__.update(values)
        return record

    return make


_kind_result = _maker(KindResult)
_criterion_result = _maker(CriterionResult)


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


def _joint_probabilities(
    rated: list[Provider], layout: Layout, replicates: np.ndarray,
    gate_reps: dict[tuple[int, str], np.ndarray], min_gap: float, floors: TierFloors,
) -> np.ndarray:
    """(n, 5) P(tier): the rule, boundaries, floors and gates included, on every joint replicate."""
    size = replicates.shape[1]
    gates_of: dict[int, dict[str, float | np.ndarray]] = defaultdict(dict)
    for (row, key), v in gate_reps.items():
        gates_of[row][key] = v
    caps = np.stack([_gate_cap(p, layout, gates_of[r], size) for r, p in enumerate(rated)])
    tiers = np.maximum(
        np.maximum(tiering.joint_tiers(replicates, min_gap), tiering.floor_tier_index(replicates, floors)), caps
    )
    return tiering.tier_probabilities(tiers)


def score_cycle(inp: ScoringInput) -> ScoringResult:
    """Score one cycle. Raises ``ScoringInputError`` (and subclasses) on bad input.

    Python's cyclic garbage collector is paused while it runs (and resumed after, if it was on):
    a cycle allocates a few hundred thousand small acyclic objects (streams, per-criterion
    records) while the input's rows are alive, and the collector's repeated passes over them
    cost about a fifth of the time at 1,000 providers (issue 27). Reference counting frees
    them as usual; nothing the result holds depends on it.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _score_cycle(inp)
    finally:
        if collecting:
            gc.enable()


def _score_cycle(inp: ScoringInput) -> ScoringResult:
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
    plan = replicate_plan(rated_providers, layout)  # shared by the seed's and the confirmation bootstrap
    replicates, area_reps, gate_reps = replicate_scores(rated_providers, layout, u, plan)
    del u
    floors, confidence, min_gap = params.tier_floors, params.boundary_confidence, params.boundary_min_gap
    composites = np.array([point[i][0] for i in rated])
    n = len(rated)
    point_caps = np.array(
        [int(_gate_cap(providers[i], layout, point[i][2], 1)[0]) for i in rated], dtype=np.int64
    )
    probs = support = np.zeros((n, len(TIERS)))
    cuts: list[tiering.Cut] = []
    point_tiers = np.zeros(n, dtype=np.int64)
    if n:
        # The published tier: the rule on the point composites, gaps confirmed on the fixed
        # confirmation stream (the seed plays no part in it).
        confirming, _, confirming_gates = replicate_scores(
            rated_providers, layout, confirmation_uniforms(size, len(layout.slots)), plan
        )
        pairs = tiering.pair_probabilities(tiering.marginal_grid(confirming))
        peer, cuts = tiering.point_tiers(composites, pairs, confidence, min_gap)
        point_tiers = np.maximum(np.maximum(peer, tiering.floor_tier_index(composites, floors)), point_caps)
        # P(tier): the whole rule, boundaries included, on each joint replicate of the field;
        # the same on the confirmation stream is what hysteresis reads (seed-free too).
        probs = _joint_probabilities(rated_providers, layout, replicates, gate_reps, min_gap, floors)
        if inp.previous_tiers:  # only hysteresis reads it
            support = _joint_probabilities(rated_providers, layout, confirming, confirming_gates, min_gap, floors)
        del confirming, confirming_gates

    previous = {pt.provider: TIERS.index(pt.tier) for pt in inp.previous_tiers}
    level = params.ci_level
    quantiles = [(1 - level) / 2, 1 - (1 - level) / 2]
    rated_pos = {i: r for r, i in enumerate(rated)}
    # The intervals of every rated provider at once: np.quantile along the replicate axis is the
    # same per-row computation as provider by provider.
    ci = np.quantile(replicates, quantiles, axis=1) if n else None  # (2, n)
    area_ci = np.quantile(area_reps, quantiles, axis=2) if n else None  # (2, n, areas)
    results: list[ProviderResult] = []
    for i, p in enumerate(providers):
        r = rated_pos.get(i)
        tiered = None
        if r is not None:
            tiered = (
                int(point_tiers[r]), probs[r], int(point_caps[r]), ci[:, r], area_ci[:, r, :], support[r],  # type: ignore[index]
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
    tiered: tuple[int, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray] | None,
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
    feedback_kind, override_kind = EvidenceKind.CUSTOMER_FEEDBACK, EvidenceKind.OVERRIDE
    no_streams: list[Stream] = []
    for c in layout.criteria:
        key = c.key
        own = streams_of.get(key, no_streams)
        kinds = tuple(
            _kind_result(
                kind=str(s.kind), value=_display_value(s), score=s.point, n=s.n,
                raw_mean=s.value if s.kind == feedback_kind else None,
            )
            for s in own
        )
        # one stream (the usual case): fsum of one number is that number plus 0.0 (-0.0 -> 0.0)
        if len(own) == 1:
            score, stream_weight = own[0].point + 0.0, p.stream_weight[own[0].slot] + 0.0
        elif own:
            score = math.fsum(s.point for s in own) / len(own)
            stream_weight = math.fsum(p.stream_weight[s.slot] for s in own)
        else:
            score = None
        share = 0.0
        if score is not None and p.area_measured.get(c.area):  # an excluded area counts 0 here too
            share = p.area_weight[c.area] / area_norm * stream_weight
            pessimistic_parts.append(p.area_weight[c.area] * c.weight / p.applicable_weight[c.area] * score)
        failure = p.gate_failures.get(key)
        gate_score = gate_scores.get(key)
        failed = failure is not None or (gate_score is not None and gate_score < c.gate_threshold)
        if failure is not None:
            gate_caps.append(GateCap(
                criterion=key, cap_tier=c.gate_cap_tier, score=gate_score if gate_score is not None else 0.0,
                reason=failure.reason, replicate=failure.replicate, replicates=failure.replicates,
                finding=failure.finding,
            ))
        elif failed:
            gate_caps.append(GateCap(criterion=key, cap_tier=c.gate_cap_tier, score=float(gate_score)))  # type: ignore[arg-type]
        status = p.status[key]
        if c.is_gate and status == "missing":
            flags.append(f"gate_unmeasured:{key}")
        if status == "declined":
            flags.append(f"declined:{key}")
        if any(k.kind == override_kind for k in kinds):
            flags.append(f"override:{key}")
        if key in p.critical_overridden:  # the tier rests on an override that lifted a critical gate
            flags.append(f"critical_overridden:{key}")
        if key in p.critical_kept:  # an override that may not lift a critical gate: the cap stays
            flags.append(f"override_kept_critical_cap:{key}")
        criteria.append(
            _criterion_result(
                key=key, area=c.area, status=status, score=score, weight_share=share,
                kinds=kinds, n_missing=p.n_missing[key], is_gate=c.is_gate, gate_failed=failed,
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
    point_tier, probs, gate_cap, ci, _, support = tiered
    params = rubric.params
    floor_cap = int(tiering.floor_tier_index(np.array([composite_point]), params.tier_floors)[0])
    tier, held, borderline, outlook = tiering.publish(
        point_tier, probs, previous, params.hysteresis_threshold, params.borderline_threshold,
        max(floor_cap, gate_cap), support=support,
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
