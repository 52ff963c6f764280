"""The report document: a pure, deterministic builder and its content hash.

A published report *is* this document, frozen: everything a reader sees (HTML, PDF, CSV,
JSON, text, charts) renders from it, never from live rows, so a report cannot drift when
evidence or rubrics change later. The builder takes frozen dataclasses (made from the
score snapshot by ``reports.services``) and returns plain JSON-able dicts; it imports no
models and reads no clock, so the same inputs always give the same document and hash.

Document outline (``schema`` = "opgrade.report/1"):
    cycle, rubric (name, version, fingerprint), engine (version, seed, inputs_hash,
    snapshot_hash), tiers (ordered, best first), providers (ordered by tier then composite),
    overrides, methodology (text + areas/criteria/weights).
Per provider: tier (or "not_rated"), tier probabilities, CI, composite, area scores,
coverage, gate caps, borderline flag, per-criterion breakdown, evidence summary,
"what would move this provider up" (weighted headroom) and movement against the last
published cycle. Reviewer and customer identities never enter the document.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rubric import spec
from rubric.spec import EVIDENCE_KINDS, NOT_RATED, TIER_LABELS  # the shared vocabulary

SCHEMA = "opgrade.report/1"
TIERS: tuple[tuple[str, str], ...] = tuple((key, TIER_LABELS[key]) for key in spec.TIERS)  # best first
TIER_RANK: dict[str, int] = {key: index for index, key in enumerate(spec.TIERS)}  # 0 = best
HEADROOM_TOP = 5
DECIMALS = 6


class DocumentError(ValueError):
    """The inputs cannot make a valid report document (the message says which and why)."""


# --- inputs -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CriterionDefinition:
    key: str
    title: str
    area_key: str
    weight: float  # relative weight within its area
    description: str = ""
    unit: str = ""
    direction: str = "higher"
    anchor_best: float = 1.0
    anchor_worst: float = 0.0
    is_gate: bool = False
    gate_cap_tier: str = ""
    evidence_kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class AreaDefinition:
    key: str
    title: str
    weight: float
    description: str = ""


@dataclass(frozen=True)
class RubricInput:
    name: str
    version: str
    fingerprint: str
    title: str = ""
    description: str = ""
    areas: tuple[AreaDefinition, ...] = ()
    criteria: tuple[CriterionDefinition, ...] = ()
    parameters: Mapping[str, float] = field(default_factory=dict)  # tier floors, coverage floor, ...


@dataclass(frozen=True)
class CriterionResult:
    key: str
    value: float | None = None  # raw measured value (after overrides), None if unmeasured
    normalised: float | None = None  # 0..1 against the rubric anchors, None if unmeasured
    evidence_counts: Mapping[str, int] = field(default_factory=dict)
    gate_passed: bool | None = None


@dataclass(frozen=True)
class ProviderResult:
    slug: str
    name: str
    tier: str | None  # None means not rated (coverage below the floor)
    tier_probabilities: Mapping[str, float] = field(default_factory=dict)
    ci_low: float | None = None
    ci_high: float | None = None
    composite: float | None = None
    pessimistic: float | None = None
    coverage: float = 0.0
    area_scores: Mapping[str, float | None] = field(default_factory=dict)
    gate_caps: tuple[str, ...] = ()  # criterion keys whose failed gate capped the tier
    borderline: bool = False
    outlook: str = ""  # "positive", "negative" or ""
    criteria: tuple[CriterionResult, ...] = ()
    # criterion keys of gates failed by a critical finding whose cap an approved
    # "measurement was wrong" override lifted: the tier rests on that override
    critical_overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class OverrideEntry:
    provider_slug: str
    criterion_key: str
    from_value: float | str | None
    to_value: float | str | None
    justification: str
    proposer: str
    approver: str
    reason: str = "judgement"  # or "measurement_wrong"
    second_approver: str = ""
    evidence_finding: int | None = None  # measurement_wrong: the later finding that shows it


@dataclass(frozen=True)
class PublishedCycle:
    """One earlier published cycle, for movement and the tier history (oldest first)."""

    cycle_slug: str
    cycle_name: str
    period_end: str  # ISO date
    content_hash: str
    tiers: Mapping[str, str | None]  # provider slug -> tier (None = not rated)


@dataclass(frozen=True)
class ReportInput:
    cycle_slug: str
    cycle_name: str
    period_start: str  # ISO date
    period_end: str  # ISO date
    rubric: RubricInput
    engine_version: str
    seed: int | None
    inputs_hash: str
    snapshot_hash: str
    providers: tuple[ProviderResult, ...]
    overrides: tuple[OverrideEntry, ...] = ()
    history: tuple[PublishedCycle, ...] = ()  # earlier published cycles, oldest first
    methodology_text: str = ""


# --- hashing ------------------------------------------------------------------------------
def canonical_json(document: Any) -> str:
    """The one serialisation the hash is taken over: sorted keys, compact, UTF-8, no NaN."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_hash(document: Any) -> str:
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


# --- builder ------------------------------------------------------------------------------
def _num(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        raise DocumentError(f"non-finite number {value!r} in the report inputs")
    return round(value, DECIMALS)


def _tier_key(tier: str | None) -> str:
    if tier is None or tier == NOT_RATED:
        return NOT_RATED
    if tier not in TIER_RANK:
        raise DocumentError(f"unknown tier {tier!r}; expected one of {', '.join(TIER_RANK)} or None")
    return tier


def movement(current: str, previous: str | None, *, seen_before: bool) -> str:
    """up / down / same against the last published cycle.

    "new" when the provider was not in that report or was not rated there; "withheld" when
    it was rated there but is not now (coverage fell under the floor), which is not a
    downgrade.
    """
    if not seen_before or previous in (None, NOT_RATED):
        return "same" if seen_before and current == NOT_RATED else "new"
    if current == NOT_RATED:
        return "withheld"
    delta = TIER_RANK[previous] - TIER_RANK[current]
    return "up" if delta > 0 else "down" if delta < 0 else "same"


def _weight_shares(rubric: RubricInput) -> dict[str, float]:
    """Each criterion's share of the whole rubric: area share x share within the area."""
    area_total = sum(a.weight for a in rubric.areas)
    if area_total <= 0:
        raise DocumentError("the rubric has no positive area weights")
    shares: dict[str, float] = {}
    for area in rubric.areas:
        members = [c for c in rubric.criteria if c.area_key == area.key]
        within = sum(c.weight for c in members)
        for criterion in members:
            shares[criterion.key] = (area.weight / area_total) * (criterion.weight / within)
    return shares


def _methodology(inp: ReportInput, shares: Mapping[str, float]) -> dict[str, Any]:
    rubric = inp.rubric
    area_total = sum(a.weight for a in rubric.areas)
    areas = []
    for area in rubric.areas:
        criteria = [
            {
                "key": c.key, "title": c.title, "description": c.description, "weight": _num(c.weight),
                "weight_share": _num(shares[c.key]), "unit": c.unit, "direction": c.direction,
                "anchor_best": _num(c.anchor_best), "anchor_worst": _num(c.anchor_worst),
                "is_gate": c.is_gate, "gate_cap_tier": c.gate_cap_tier or None,
                "evidence_kinds": sorted(c.evidence_kinds),
            }
            for c in rubric.criteria
            if c.area_key == area.key
        ]
        areas.append({
            "key": area.key, "title": area.title, "description": area.description,
            "weight": _num(area.weight), "weight_share": _num(area.weight / area_total), "criteria": criteria,
        })
    return {
        "text": inp.methodology_text or rubric.description,
        "parameters": {key: _num(value) for key, value in sorted(rubric.parameters.items())},
        "areas": areas,
    }


def _provider(
    result: ProviderResult, inp: ReportInput, shares: Mapping[str, float], definitions: Mapping[str, CriterionDefinition]
) -> dict[str, Any]:
    tier = _tier_key(result.tier)
    seen = [h for h in inp.history if result.slug in h.tiers]
    previous = inp.history[-1] if inp.history else None
    seen_before = previous is not None and result.slug in previous.tiers
    previous_tier = _tier_key(previous.tiers[result.slug]) if seen_before and previous else None
    unknown = [c.key for c in result.criteria if c.key not in definitions]
    if unknown:
        raise DocumentError(f"provider {result.slug}: criteria not in the rubric: {', '.join(sorted(unknown))}")
    by_key = {c.key: c for c in result.criteria}
    criteria, headroom = [], []
    totals = dict.fromkeys(EVIDENCE_KINDS, 0)
    for definition in inp.rubric.criteria:
        measured = by_key.get(definition.key, CriterionResult(key=definition.key))
        counts = {kind: int(measured.evidence_counts.get(kind, 0)) for kind in EVIDENCE_KINDS}
        for kind, count in counts.items():
            totals[kind] += count
        share = shares[definition.key]
        norm = _num(measured.normalised)
        criteria.append({
            "key": definition.key, "title": definition.title, "area": definition.area_key,
            "value": _num(measured.value), "unit": definition.unit, "normalised": norm,
            "weight": _num(definition.weight), "weight_share": _num(share), "evidence": counts,
            "is_gate": definition.is_gate, "gate_passed": measured.gate_passed,
        })
        headroom.append({
            "criterion": definition.key, "title": definition.title, "area": definition.area_key,
            "weight_share": _num(share), "normalised": norm, "measured": norm is not None,
            # Unmeasured criteria count as full headroom: evidence there is what would help most.
            "headroom": _num(share * (1.0 - (norm if norm is not None else 0.0))),
        })
    headroom.sort(key=lambda h: (-h["headroom"], h["criterion"]))
    areas = [
        {"key": a.key, "title": a.title, "score": _num(result.area_scores.get(a.key))} for a in inp.rubric.areas
    ]
    return {
        "slug": result.slug,
        "name": result.name,
        "tier": tier,
        "tier_label": TIER_LABELS[tier],
        "tier_probabilities": {
            key: _num(result.tier_probabilities.get(key, 0.0)) for key, _label in TIERS
        },
        "ci": {"low": _num(result.ci_low), "high": _num(result.ci_high)},
        "composite": _num(result.composite),
        "pessimistic": _num(result.pessimistic),
        "coverage": _num(result.coverage),
        "areas": areas,
        "gate_caps": [
            {"criterion": key, "cap_tier": definitions[key].gate_cap_tier or None}
            for key in sorted(result.gate_caps)
        ],
        "borderline": bool(result.borderline),
        "outlook": result.outlook,
        "movement": {
            "direction": movement(tier, previous_tier, seen_before=seen_before),
            "previous_tier": previous_tier,
            "previous_cycle": previous.cycle_slug if previous else None,
        },
        "criteria": criteria,
        "evidence_summary": {
            **totals,
            "criteria_measured": sum(1 for c in criteria if c["normalised"] is not None),
            "criteria_total": len(criteria),
        },
        "headroom": [h for h in headroom if h["headroom"] > 0][:HEADROOM_TOP],
        "history": [
            {"cycle": h.cycle_slug, "cycle_name": h.cycle_name, "period_end": h.period_end,
             "tier": _tier_key(h.tiers[result.slug])}
            for h in seen
        ] + [{"cycle": inp.cycle_slug, "cycle_name": inp.cycle_name, "period_end": inp.period_end, "tier": tier}],
    }


def _mark_tiers_resting_on_overrides(
    providers: list[dict[str, Any]], overrides: list[dict[str, Any]], inp: ReportInput
) -> None:
    """``resting_on_override``: the overrides that lifted a critical gate cap, per provider.

    A tier that stands only because an approved "measurement was wrong" override lifted the
    cap of a critical finding says so wherever the tier is shown, with the override's
    justification, its evidence finding and its approvers. Every provider gets the key (an
    empty list when nothing rests on an override).
    """
    lifted = {p.slug: set(p.critical_overrides) for p in inp.providers}
    by_unit = {(o["provider"], o["criterion"]): o for o in overrides}
    for provider in providers:
        entries = []
        for key in sorted(lifted.get(provider["slug"], ())):
            o = by_unit.get((provider["slug"], key))
            if o is None:
                raise DocumentError(f"provider {provider['slug']}: the tier rests on an override of {key} not listed")
            entries.append({
                "criterion": key, "reason": o["reason"], "justification": o["justification"],
                "evidence_finding": o["evidence_finding"],
                "approvers": [a for a in (o["approver"], o["second_approver"]) if a],
            })
        provider["resting_on_override"] = entries


def _provider_order(provider: Mapping[str, Any]) -> tuple[int, float, str]:
    rank = TIER_RANK.get(provider["tier"], len(TIERS))
    composite = provider["composite"] if provider["composite"] is not None else -1.0
    return (rank, -composite, provider["slug"])


def build_report_document(inp: ReportInput) -> dict[str, Any]:
    """Build the report document. Raises DocumentError on inconsistent inputs."""
    if not inp.providers:
        raise DocumentError("a report needs at least one provider")
    slugs = [p.slug for p in inp.providers]
    if len(set(slugs)) != len(slugs):
        raise DocumentError("duplicate provider slugs in the report inputs")
    definitions = {c.key: c for c in inp.rubric.criteria}
    area_keys = {a.key for a in inp.rubric.areas}
    orphans = sorted(c.key for c in inp.rubric.criteria if c.area_key not in area_keys)
    if orphans:
        raise DocumentError(f"criteria in no rubric area: {', '.join(orphans)}")
    shares = _weight_shares(inp.rubric)
    providers = sorted((_provider(p, inp, shares, definitions) for p in inp.providers), key=_provider_order)
    provider_names = {p.slug for p in inp.providers}
    overrides = []
    for o in sorted(inp.overrides, key=lambda o: (o.provider_slug, o.criterion_key)):
        if o.provider_slug not in provider_names or o.criterion_key not in definitions:
            raise DocumentError(f"override for unknown provider/criterion {o.provider_slug}/{o.criterion_key}")
        overrides.append({
            "provider": o.provider_slug, "criterion": o.criterion_key,
            "from": _num(o.from_value) if isinstance(o.from_value, int | float) else o.from_value,
            "to": _num(o.to_value) if isinstance(o.to_value, int | float) else o.to_value,
            "justification": o.justification, "proposer": o.proposer, "approver": o.approver,
            "reason": o.reason, "second_approver": o.second_approver, "evidence_finding": o.evidence_finding,
        })
    _mark_tiers_resting_on_overrides(providers, overrides, inp)
    previous = inp.history[-1] if inp.history else None
    return {
        "schema": SCHEMA,
        "cycle": {
            "slug": inp.cycle_slug, "name": inp.cycle_name,
            "period_start": inp.period_start, "period_end": inp.period_end,
        },
        "rubric": {
            "name": inp.rubric.name, "version": inp.rubric.version,
            "fingerprint": inp.rubric.fingerprint, "title": inp.rubric.title,
        },
        "engine": {
            "version": inp.engine_version, "seed": inp.seed,
            "inputs_hash": inp.inputs_hash, "snapshot_hash": inp.snapshot_hash,
        },
        "previous_report": (
            {"cycle": previous.cycle_slug, "content_hash": previous.content_hash} if previous else None
        ),
        "tiers": [{"key": key, "label": label} for key, label in TIERS],
        "providers": providers,
        "overrides": overrides,
        "methodology": _methodology(inp, shares),
    }


def validate_document(document: Any) -> None:
    """Check the outline a renderer relies on; raise DocumentError naming what is missing."""
    if not isinstance(document, dict):
        raise DocumentError("a report document must be a JSON object")
    if document.get("schema") != SCHEMA:
        raise DocumentError(f"unknown report schema {document.get('schema')!r}; expected {SCHEMA!r}")
    for key in ("cycle", "rubric", "engine", "providers", "overrides", "methodology"):
        if key not in document:
            raise DocumentError(f"the report document has no {key!r}")
    if not isinstance(document["providers"], list) or not document["providers"]:
        raise DocumentError("the report document lists no providers")
    for provider in document["providers"]:
        for key in ("slug", "name", "tier", "areas", "criteria", "movement", "headroom", "history"):
            if key not in provider:
                raise DocumentError(f"provider {provider.get('slug', '?')!r} has no {key!r}")
        if provider["tier"] not in TIER_LABELS:
            raise DocumentError(f"provider {provider['slug']!r} has unknown tier {provider['tier']!r}")
    canonical_json(document)  # refuses NaN/inf and non-JSON values


def group_by_tier(providers: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Providers grouped under each tier (best first), then a Not rated group; empty tiers kept."""
    groups = [{"key": key, "label": label, "providers": []} for key, label in TIERS]
    groups.append({"key": NOT_RATED, "label": TIER_LABELS[NOT_RATED], "providers": []})
    index = {g["key"]: g for g in groups}
    for provider in providers:
        index[provider["tier"]]["providers"].append(provider)
    return groups
