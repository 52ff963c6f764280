"""Fixtures for the rubric tests: a small valid rubric document and the shipped default."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "rubric" / "data" / "opgrade-2026.1.yaml"

# Line numbers matter: the malformed-file tests assert them. Line 1 is "format: ...".
SMALL = """\
format: opgrade-rubric/1
name: small
version: "1.0"
title: A small rubric
scoring:
  coverage_floor: 0.6
  area_coverage_floor: 0.5
  bootstrap_size: 200
  boundary_confidence: 0.9
  borderline_threshold: 0.7
  hysteresis_threshold: 0.2
  feedback_prior_strength: 5.0
  tier_floors: {platinum: 0.8, gold: 0.65, silver: 0.5, bronze: 0.4}
areas:
- key: provisioning
  title: Provisioning
  weight: 0.4
- key: security
  title: Security
  weight: 0.6
criteria:
- key: node_ready
  area: provisioning
  title: Node ready time
  weight: 1.0
  evidence: [probe]
  probe: {id: node_ready_time, metric: p50_seconds}
  unit: s
  direction: lower
  scale: log
  anchors: {best: 60.0, worst: 3600.0}
- key: log_isolation
  area: security
  title: Tenant log isolation
  weight: 0.7
  evidence: [probe]
  probe: {id: tenant_log_isolation, metric: ''}
  direction: higher
  scale: linear
  anchors: {best: 1.0, worst: 0.0}
  gate: {cap_tier: bronze, threshold: 0.5}
- key: attestation
  area: security
  title: SOC 2 Type II or ISO 27001
  weight: 0.3
  evidence: [doc_review]
  direction: higher
  scale: linear
  anchors: {best: 1.0, worst: 0.0}
"""


@pytest.fixture
def small_yaml() -> str:
    return SMALL


@pytest.fixture
def shipped_yaml() -> str:
    return SHIPPED.read_text(encoding="utf-8")
