"""Customer-feedback CSV: every bad row reported by line, a bad file writes nothing, orgs hashed."""

from __future__ import annotations

import hashlib
import hmac
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from ratings.models import CustomerFeedback
from reviews import services
from reviews.feedback_csv import feedback_csv_parse, org_pseudonym
from reviews.models import AuditEvent, FeedbackImport
from tests.reviews.world import World

HEADER = "provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n"
GOOD = HEADER + (
    "alpha,reliability,4,survey,Acme Labs,Fast support,2026-11-01\n"
    'bravo,customers-reliability,2,interview,Globex,"Slow,\nvery slow",2026-11-03\n'
    "alpha,reliability,5,survey,Initech,,\n"
)
BAD = HEADER + (
    "alpha,reliability,4,survey,Acme Labs,ok,2026-11-01\n"      # line 2: fine
    "zeta,reliability,4,survey,Acme Labs,ok,2026-11-01\n"       # line 3: unknown provider
    "alpha,reliability,9,survey,Acme Labs,ok,2026-11-01\n"      # line 4: rating out of range
    "alpha,nope,x,poll,,ok,01/11/2026\n"                        # line 5: five problems
    "alpha,reliability,3,survey,Hooli,ok,2026-11-01\n"          # line 6: fine
)


def test_the_parser_reports_every_bad_row_with_its_line_number():
    result = feedback_csv_parse(BAD, provider_slugs={"alpha", "bravo"}, rating_keys={"reliability"},
                                pseudonym_key="k")
    lines = sorted({e.line for e in result.errors})
    assert lines == [3, 4, 5]
    messages = [str(e) for e in result.errors if e.line == 5]
    assert any("respondent_org is empty" in m for m in messages)
    assert any("not an area or criterion" in m for m in messages)
    assert any("not a whole number" in m for m in messages)
    assert any("source 'poll'" in m for m in messages)
    assert any("not an ISO date" in m for m in messages)
    assert not result.ok and len(result.rows) == 2


def test_line_numbers_count_physical_lines_of_quoted_multiline_fields():
    text = GOOD + "alpha,reliability,0,survey,X,,\n"  # the bad row follows a two-line field
    result = feedback_csv_parse(text, provider_slugs={"alpha", "bravo"},
                                rating_keys={"reliability", "customers-reliability"}, pseudonym_key="k")
    assert [e.line for e in result.errors] == [6]


def test_blank_lines_and_ragged_rows_are_reported_on_their_own_line():
    text = HEADER + "\nalpha,reliability,4,survey,Acme,ok,2026-11-01,extra\nalpha,reliability\n"
    result = feedback_csv_parse(text, provider_slugs={"alpha"}, rating_keys={"reliability"}, pseudonym_key="k")
    assert [(e.line, e.message) for e in result.errors] == [
        (3, "more fields than columns"), (4, "fewer fields than columns"),
    ]


def test_a_multiline_record_is_reported_on_the_line_it_starts():
    text = HEADER + 'alpha,reliability,9,survey,Acme,"two\nlines",\n'
    result = feedback_csv_parse(text, provider_slugs={"alpha"}, rating_keys={"reliability"}, pseudonym_key="k")
    assert [e.line for e in result.errors] == [2]


def test_a_wrong_header_is_one_clear_error():
    result = feedback_csv_parse("provider,rating\nalpha,4\n", provider_slugs={"alpha"}, rating_keys={"r"},
                                pseudonym_key="k")
    assert len(result.errors) == 1 and result.errors[0].line == 1
    assert "missing column(s)" in result.errors[0].message


def test_organisations_are_a_keyed_hash_that_ignores_case_and_spacing():
    expected = hmac.new(b"key", b"acme labs", hashlib.sha256).hexdigest()
    assert org_pseudonym("  Acme   LABS ", key="key") == expected
    assert org_pseudonym("Acme Labs", key="other") != expected


def test_a_dry_run_validates_and_writes_nothing(base: World):
    report = services.feedback_import(cycle=base.cycle, text=GOOD, filename="s.csv", by=base.users["analyst"],
                                      dry_run=True)
    assert report.ok and len(report.parsed.rows) == 3 and report.written == 0
    assert not FeedbackImport.objects.exists() and not CustomerFeedback.objects.exists()


def test_a_real_import_with_one_bad_row_writes_nothing(base: World):
    report = services.feedback_import(cycle=base.cycle, text=BAD, filename="s.csv", by=base.users["analyst"],
                                      dry_run=False)
    assert not report.ok and report.written == 0
    assert not FeedbackImport.objects.exists() and not CustomerFeedback.objects.exists()


def test_a_failure_midway_through_writing_rolls_back_the_whole_import(base: World, monkeypatch):
    calls = {"n": 0}
    real = services.audit_events_bulk_record

    def explode_after_the_rows(*args, **kwargs):  # the rows and their history are in; their audit fails
        calls["n"] += 1
        assert CustomerFeedback.objects.count() == 3
        raise RuntimeError("disk full")

    monkeypatch.setattr(services, "audit_events_bulk_record", explode_after_the_rows)
    with pytest.raises(RuntimeError):
        services.feedback_import(cycle=base.cycle, text=GOOD, filename="s.csv", by=base.users["analyst"],
                                 dry_run=False)
    assert calls["n"] == 1
    assert not FeedbackImport.objects.exists() and not CustomerFeedback.objects.exists()
    assert not CustomerFeedback.history.exists()
    monkeypatch.setattr(services, "audit_events_bulk_record", real)


def test_each_imported_row_has_its_history_and_audit_event_and_progress_is_reported(base: World):
    seen = []
    report = services.feedback_import(cycle=base.cycle, text=GOOD, filename="s.csv", by=base.users["analyst"],
                                      dry_run=False, progress=lambda phase, done, total: seen.append(
                                          (phase, done, total)))
    assert report.written == 3
    assert seen == [("validated", 3, 0), ("written", 3, 3)]
    ids = set(CustomerFeedback.objects.values_list("pk", flat=True))
    assert set(CustomerFeedback.history.filter(history_type="+").values_list("id", flat=True)) == ids
    events = AuditEvent.objects.filter(model="ratings.customerfeedback", action="+")
    assert {int(e.object_id) for e in events} == ids
    assert all(e.user == base.users["analyst"] and e.username == "ana" for e in events)
    assert all(any(c["field"] == "rating" for c in e.changes) for e in events)
    assert all(str(CustomerFeedback.objects.get(pk=e.object_id)) == e.object_repr for e in events)
    assert set(FeedbackImport.objects.get().rows.values_list("pk", flat=True)) == ids


def test_a_good_import_stores_only_hashes_of_organisations(base: World, settings):
    settings.OPGRADE_PSEUDONYM_KEY = "test-key"
    report = services.feedback_import(cycle=base.cycle, text=GOOD, filename="s.csv", by=base.users["analyst"],
                                      dry_run=False)
    assert report.ok and report.written == 3
    rows = list(CustomerFeedback.objects.order_by("id"))
    assert rows[0].respondent_org_hash == org_pseudonym("Acme Labs", key="test-key")
    stored = " ".join(str(v) for r in CustomerFeedback.objects.values() for v in r.values())
    assert "Acme" not in stored and "Globex" not in stored
    assert rows[1].comment == "Slow,\nvery slow"
    assert rows[0].area.key == "reliability" and rows[0].criterion is None
    assert rows[1].criterion.key == "customers-reliability" and rows[1].area is None
    assert set(FeedbackImport.objects.get().rows.all()) == set(rows)


def test_a_respondent_rating_the_same_item_twice_is_a_bad_row(base: World):
    twice = GOOD + "alpha,reliability,1,survey,acme  labs,again,\n"  # same org as line 2, other spelling
    report = services.feedback_import(cycle=base.cycle, text=twice, filename="s.csv", by=None, dry_run=False)
    assert [(e.line, e.message) for e in report.parsed.errors] == [(6, "same respondent, item and source as line 2")]
    assert not CustomerFeedback.objects.exists()
    assert services.feedback_import(cycle=base.cycle, text=GOOD, filename="s.csv", by=None, dry_run=False).ok
    again = services.feedback_import(cycle=base.cycle, text=GOOD, filename="s.csv", by=None, dry_run=True)
    assert {e.line for e in again.parsed.errors} == {2, 3, 5}  # the two-line record starts on line 3
    assert all("already imported" in e.message for e in again.parsed.errors)


def test_the_csv_hash_matches_the_ratings_hash_of_an_organisation(settings):
    from ratings.models import respondent_org_hash

    settings.OPGRADE_PSEUDONYM_KEY = "shared-key"
    assert org_pseudonym(" Acme  Labs", key="shared-key") == respondent_org_hash("acme labs")


def test_the_command_lists_bad_rows_and_exits_non_zero(base: World, tmp_path):
    path = tmp_path / "survey.csv"
    path.write_text(BAD, encoding="utf-8")
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("feedback_import", base.cycle.slug, str(path), stderr=err)
    assert "survey.csv: line 3:" in err.getvalue() and "survey.csv: line 5:" in err.getvalue()
    assert not CustomerFeedback.objects.exists()
    path.write_text(GOOD, encoding="utf-8")
    out = StringIO()
    call_command("feedback_import", base.cycle.slug, str(path), "--dry-run", stdout=out)
    assert "3 rows valid; nothing written" in out.getvalue()
    assert not CustomerFeedback.objects.exists()
    call_command("feedback_import", base.cycle.slug, str(path), stdout=out)
    assert CustomerFeedback.objects.count() == 3


def test_the_api_dry_run_returns_every_error_and_writes_nothing(base: World):
    client = APIClient()
    client.force_authenticate(base.users["analyst"])
    upload = SimpleUploadedFile("s.csv", BAD.encode(), content_type="text/csv")
    response = client.post("/api/v1/feedback-imports/", {"cycle": base.cycle.slug, "file": upload,
                                                        "dry_run": "false"}, format="multipart")
    assert response.status_code == 400
    assert sorted({e["line"] for e in response.json()["errors"]}) == [3, 4, 5]
    assert not CustomerFeedback.objects.exists()


def test_interview_notes_keep_only_the_organisation_hash(base: World):
    import datetime as dt

    note = services.interview_note_create(
        cycle=base.cycle, provider=base.a, area_or_criterion="reliability", respondent_org="Acme Labs",
        notes="They lost a node for a day.", interviewed_on=dt.date(2026, 11, 5), by=base.users["analyst"],
        rating=2,
    )
    assert "Acme" not in note.respondent_org_hash and len(note.respondent_org_hash) == 64
    assert note.feedback is not None and note.feedback.source == "interview" and note.feedback.rating == 2
    assert note.feedback.respondent_org_hash == note.respondent_org_hash and note.feedback.comment == ""
    with pytest.raises(services.ReviewsError, match="already recorded"):
        services.interview_note_create(
            cycle=base.cycle, provider=base.a, area_or_criterion="reliability", respondent_org="ACME labs",
            notes="Again.", interviewed_on=dt.date(2026, 11, 6), by=base.users["analyst"], rating=3,
        )
    with pytest.raises(services.ReviewsError, match="not an area or criterion"):
        services.interview_note_create(
            cycle=base.cycle, provider=base.a, area_or_criterion="nope", respondent_org="Acme", notes="x",
            interviewed_on=dt.date(2026, 11, 5), by=base.users["analyst"],
        )


def test_the_command_prints_progress_every_5000_rows_while_validating_and_writing(base: World, tmp_path):
    """Issue 15: a 50,000-row import ran for minutes with no output. Now it says how far it is."""
    path = tmp_path / "big.csv"
    rows = [f"alpha,reliability,{1 + n % 5},survey,Customer {n},,2026-11-01" for n in range(6_001)]
    path.write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    out = StringIO()
    call_command("feedback_import", base.cycle.slug, str(path), stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split(" rows")[0] for line in lines[:-1]] == [
        "big.csv: validated 5,000", "big.csv: validated 6,001", "big.csv: written 5,000", "big.csv: written 6,001",
    ]
    assert "of 6,001 (83%)" in lines[2] and "of 6,001 (100%)" in lines[3]
    assert lines[-1].startswith("imported 6001 rows")
    assert CustomerFeedback.objects.filter(cycle=base.cycle).count() == 6_001
    assert AuditEvent.objects.filter(model="ratings.customerfeedback").count() == 6_001
