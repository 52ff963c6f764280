"""Customer-feedback imports that cannot poison a cycle (issue 15): ratings of things customers do
not rate are refused at the dry run, dates are kept, separators, header case and encodings are
read or refused with the cause named, and an import can be rolled back as one unit."""

from __future__ import annotations

import codecs

import pytest
from django.test import Client

from ratings.models import CustomerFeedback
from reviews import services
from reviews.feedback_csv import FeedbackFileError, feedback_csv_decode, feedback_csv_parse
from reviews.models import AuditEvent, FeedbackImport
from tests.factories import AreaFactory
from tests.reviews.world import World

HEADER = "provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n"


def _import(world: World, text: str, *, dry_run: bool = False) -> services.ImportReport:
    return services.feedback_import(cycle=world.cycle, text=text, filename="survey.csv",
                                    by=world.users["analyst"], dry_run=dry_run)


def test_a_rating_of_a_criterion_that_takes_no_customer_feedback_is_refused_at_the_dry_run(base: World):
    report = _import(base, HEADER + "alpha,docs-replacement,4,survey,Org One,,2026-11-02\n", dry_run=True)
    assert not report.ok
    assert "line 2: area_or_criterion 'docs-replacement': this criterion takes no customer feedback" in str(
        report.parsed.errors[0])


def test_a_rating_of_an_area_with_no_customer_feedback_criterion_is_refused_naming_why(base: World):
    AreaFactory(rubric_version=base.cycle.rubric_version, key="security")
    report = _import(base, HEADER + "alpha,security,4,survey,Org One,,\n", dry_run=True)
    assert "no criterion of this area takes customer feedback" in str(report.parsed.errors[0])


def test_the_date_of_each_answer_is_stored(base: World):
    report = _import(base, HEADER + "alpha,reliability,4,survey,Org One,,2026-11-02\n")
    assert report.ok, report.parsed.errors
    assert str(CustomerFeedback.objects.get(cycle=base.cycle).answered_on) == "2026-11-02"


@pytest.mark.parametrize("sep", [";", "\t", ","], ids=["semicolon", "tab", "comma"])
def test_semicolon_tab_or_comma_separated_files_with_any_header_case_are_read(sep: str):
    header = sep.join(["Provider_Slug", " AREA_OR_CRITERION", "Rating", "Source", "Respondent_Org"])
    text = header + "\n" + sep.join(["alpha", "reliability", "4", "survey", "Org, Inc."]) + "\n"
    result = feedback_csv_parse(text.replace("Org, Inc.", '"Org, Inc."'), provider_slugs={"alpha"},
                                rating_keys={"reliability"}, pseudonym_key="k")
    assert result.ok, result.errors
    assert result.rows[0].rating == 4


def test_a_header_in_an_unknown_separator_is_refused_saying_which_separators_are_read():
    result = feedback_csv_parse("provider_slug|area_or_criterion|rating|source|respondent_org\n",
                                provider_slugs={"alpha"}, rating_keys={"reliability"}, pseudonym_key="k")
    assert "separators read are comma, semicolon and tab" in str(result.errors[0])


ROW = HEADER + "alpha,reliability,4,survey,Société Générale,très bien ; «ok»,2026-11-02\n"


@pytest.mark.parametrize(("data", "encoding"), [
    (ROW.encode("utf-8"), "UTF-8"),
    (codecs.BOM_UTF8 + ROW.encode("utf-8"), "UTF-8 with BOM"),
    (ROW.encode("utf-16"), "UTF-16"),  # Python writes the BOM
    (codecs.BOM_UTF16_BE + ROW.encode("utf-16-be"), "UTF-16"),
    (ROW.encode("cp1252"), "Latin-1 (Windows-1252)"),
])
def test_each_supported_encoding_is_detected_and_read_to_the_same_text(data: bytes, encoding: str):
    decoded = feedback_csv_decode(data)
    assert decoded.encoding == encoding
    assert decoded.text.lstrip("\ufeff") == ROW


def test_utf16_without_a_byte_order_mark_is_refused_with_the_cause_named():
    with pytest.raises(FeedbackFileError, match=r"NUL bytes.*without a byte-order mark"):
        feedback_csv_decode(ROW.encode("utf-16-le"))


def test_bytes_that_are_neither_utf8_nor_latin1_are_refused_naming_the_byte_and_offset():
    with pytest.raises(FeedbackFileError, match=r"byte 0x81 at offset 3"):
        feedback_csv_decode(b"abc\x81def")


def test_the_api_reads_a_latin1_upload_and_names_the_cause_of_an_unreadable_one(base: World):
    client = Client()
    client.force_login(base.users["analyst"])
    from django.core.files.uploadedfile import SimpleUploadedFile

    ok = client.post("/api/v1/feedback-imports/", {
        "cycle": base.cycle.slug, "dry_run": "true",
        "file": SimpleUploadedFile("s.csv", ROW.encode("cp1252"), content_type="text/csv"),
    })
    assert ok.status_code == 200, ok.content
    bad = client.post("/api/v1/feedback-imports/", {
        "cycle": base.cycle.slug, "dry_run": "true",
        "file": SimpleUploadedFile("s.csv", ROW.encode("utf-16-le"), content_type="text/csv"),
    })
    assert bad.status_code == 400 and "byte-order mark" in bad.content.decode()


def test_an_import_is_rolled_back_as_one_unit_and_the_deletions_are_audited(base: World):
    report = _import(base, HEADER + "alpha,reliability,4,survey,Org One,,\nbravo,reliability,2,survey,Org Two,,\n")
    batch = FeedbackImport.objects.get(pk=report.batch_id)
    ids = list(batch.rows.values_list("pk", flat=True))
    assert services.feedback_import_rollback(batch=batch, by=base.users["analyst"]) == 2
    assert not CustomerFeedback.objects.filter(pk__in=ids).exists()
    batch.refresh_from_db()
    assert batch.rolled_back_at is not None and batch.rolled_back_by == base.users["analyst"]
    deleted = AuditEvent.objects.filter(model="ratings.customerfeedback", action="-",
                                        object_id__in=[str(i) for i in ids])
    assert deleted.count() == 2 and {e.username for e in deleted} == {"ana"}
    with pytest.raises(services.ReviewsError, match="already rolled back"):
        services.feedback_import_rollback(batch=batch, by=base.users["analyst"])


def test_only_analysts_and_admins_roll_back_and_the_admin_action_does_it(base: World):
    report = _import(base, HEADER + "alpha,reliability,4,survey,Org One,,\n")
    batch = FeedbackImport.objects.get(pk=report.batch_id)
    with pytest.raises(services.ReviewsError):
        services.feedback_import_rollback(batch=batch, by=base.users["publisher"])
    client = Client()
    client.force_login(base.users["analyst"])
    response = client.post("/admin/reviews/feedbackimport/", {
        "action": "action_rollback", "_selected_action": [batch.pk],
    }, follow=True)
    assert "1 feedback rows removed" in response.content.decode()
    assert not CustomerFeedback.objects.filter(cycle=base.cycle).exists()
