"""The demo's shipped evidence fits the default rubric, without a database or a testbed.

Checks that a rubric change would otherwise only reveal minutes into ``make demo``: every
documentation-review criterion has a demo score for every provider, the two reviewers never
disagree by 2+ points (which would wait for a third reviewer), the sample feedback CSV passes the
reviews parser against the rubric's keys, and the profiles are ordered as the README says.
"""

from __future__ import annotations

from statistics import mean

from quickstart.evidence import DOC_PAGES, DOC_SCORES, FEEDBACK_CSV, PROVIDERS
from quickstart.services import RUBRIC_FILE
from reviews.feedback_csv import feedback_csv_parse
from rubric.yaml_format import parse_rubric

RUBRIC = parse_rubric(RUBRIC_FILE.read_text(), filename=RUBRIC_FILE.name)
DOC_CRITERIA = {c.key for c in RUBRIC.criteria if "doc_review" in c.evidence}


def test_every_doc_review_criterion_has_two_close_scores_and_a_page_for_every_provider() -> None:
    assert DOC_CRITERIA, "the default rubric has documentation-review criteria"
    for spec in PROVIDERS:
        scores = DOC_SCORES[spec.slug]
        assert set(scores) == DOC_CRITERIA, spec.slug
        for key, (first, second) in scores.items():
            assert 0 <= first <= 4 and 0 <= second <= 4
            assert abs(first - second) < 2, (spec.slug, key)
    assert DOC_CRITERIA.issubset(DOC_PAGES)


def test_the_sample_feedback_csv_parses_cleanly_against_the_rubric_and_the_demo_providers() -> None:
    keys = {a.key for a in RUBRIC.areas} | {c.key for c in RUBRIC.criteria}
    parsed = feedback_csv_parse(
        FEEDBACK_CSV.read_text(),
        provider_slugs={p.slug for p in PROVIDERS},
        rating_keys=keys,
        pseudonym_key="test-key",
    )
    assert parsed.ok, [str(e) for e in parsed.errors]
    assert {r.provider_slug for r in parsed.rows} == {p.slug for p in PROVIDERS}


def test_the_exemplary_provider_has_the_best_human_evidence_and_the_leaky_one_the_worst() -> None:
    parsed = feedback_csv_parse(
        FEEDBACK_CSV.read_text(),
        provider_slugs={p.slug for p in PROVIDERS},
        rating_keys={a.key for a in RUBRIC.areas},
        pseudonym_key="test-key",
    )
    by_profile = {p.profile: p.slug for p in PROVIDERS}
    docs = {slug: mean(sum(s) / 2 for s in DOC_SCORES[slug].values()) for slug in DOC_SCORES}
    feedback = {slug: mean(r.rating for r in parsed.rows if r.provider_slug == slug) for slug in DOC_SCORES}
    for evidence in (docs, feedback):
        assert evidence[by_profile["exemplary"]] > evidence[by_profile["flaky"]] > evidence[by_profile["leaky"]]
