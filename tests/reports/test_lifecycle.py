"""The report lifecycle and its refusals: services, model and database trigger."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from reports import services
from reports.context import content_hash
from reports.errors import ReportImmutableError, ReportInputError, ReportPermissionError, ReportStateError
from reports.models import Report
from tests.reports.conftest import build_document


def _draft(cycle, **tiers):
    return services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle, tiers or None))


def test_a_draft_goes_through_fact_check_to_published(cycle, publisher):
    draft = _draft(cycle)
    assert draft.status == Report.Status.DRAFT
    assert draft.content_hash == content_hash(draft.content)
    report = services.report_fact_check_open(report=draft)
    assert report.status == Report.Status.FACT_CHECK and report.fact_check_opened_at
    report = services.report_publish(report=report, user=publisher)
    report.refresh_from_db()
    assert report.status == Report.Status.PUBLISHED
    assert report.published_by == publisher and report.published_at


def test_it_refuses_to_publish_a_draft_that_skipped_fact_check(cycle, publisher):
    draft = _draft(cycle)
    with pytest.raises(ReportStateError, match="fact-check"):
        services.report_publish(report=draft, user=publisher)
    draft.refresh_from_db()
    assert draft.status == Report.Status.DRAFT


def test_only_publishers_may_publish(cycle, analyst):
    report = services.report_fact_check_open(report=_draft(cycle))
    with pytest.raises(ReportPermissionError, match="only publishers"):
        services.report_publish(report=report, user=analyst)
    report.refresh_from_db()
    assert report.status == Report.Status.FACT_CHECK


def test_it_refuses_a_second_published_report_for_a_cycle(cycle, make_published, publisher):
    make_published()
    other = services.report_fact_check_open(report=_draft(cycle, alpha="gold", beta="gold", gamma=None))
    with pytest.raises(ReportStateError, match="correction"):
        services.report_publish(report=other, user=publisher)


def test_it_refuses_a_document_for_another_cycle(cycle):
    from tests.factories import CycleFactory

    other = CycleFactory(slug="other")
    with pytest.raises(ReportInputError, match="not 'other'"):
        services.report_draft_create(cycle=other, snapshot_document=build_document(cycle))
    assert not Report.objects.exists()


def test_it_refuses_a_malformed_document(cycle):
    with pytest.raises(ReportInputError, match="schema"):
        services.report_draft_create(cycle=cycle, snapshot_document={"providers": []})
    assert not Report.objects.exists()


def test_a_correction_supersedes_the_old_report_with_a_public_notice(cycle, make_published, publisher):
    old = make_published()
    replacement = _draft(cycle, alpha="gold", beta="gold", gamma=None)
    new = services.report_correct(report=old, replacement=replacement, notice="Alpha's NCCL figure was mis-keyed.",
                                  user=publisher)
    old.refresh_from_db()
    assert old.status == Report.Status.SUPERSEDED and old.superseded_at
    assert new.status == Report.Status.PUBLISHED and new.supersedes == old
    assert new.correction_notice == "Alpha's NCCL figure was mis-keyed."
    assert old.superseded_by == new


@pytest.mark.parametrize("notice", ["", "   "])
def test_a_correction_needs_a_notice(cycle, make_published, publisher, notice):
    old = make_published()
    replacement = _draft(cycle, alpha="gold", beta="gold", gamma=None)
    with pytest.raises(ReportInputError, match="notice"):
        services.report_correct(report=old, replacement=replacement, notice=notice, user=publisher)
    old.refresh_from_db()
    assert old.status == Report.Status.PUBLISHED


def test_a_correction_with_identical_content_is_refused(cycle, make_published, publisher):
    old = make_published()
    with pytest.raises(ReportInputError, match="same content"):
        services.report_correct(report=old, replacement=_draft(cycle), notice="x", user=publisher)


def test_only_publishers_may_correct_or_withdraw(cycle, make_published, analyst):
    old = make_published()
    with pytest.raises(ReportPermissionError):
        services.report_correct(report=old, replacement=_draft(cycle, alpha="gold"), notice="n", user=analyst)
    with pytest.raises(ReportPermissionError):
        services.report_withdraw(report=old, notice="n", user=analyst)
    old.refresh_from_db()
    assert old.status == Report.Status.PUBLISHED


def test_a_withdrawn_report_stays_and_is_marked_withdrawn(make_published, publisher):
    report = make_published()
    services.report_withdraw(report=report, notice="Probe data for Beta was invalid.", user=publisher)
    report = Report.objects.get(pk=report.pk)
    assert report.status == Report.Status.WITHDRAWN
    assert report.withdrawal_notice == "Probe data for Beta was invalid." and report.withdrawn_at
    with pytest.raises(ReportStateError):
        services.report_withdraw(report=report, notice="again", user=publisher)


def test_the_service_refuses_to_discard_a_published_report(make_published):
    report = make_published()
    with pytest.raises(ReportStateError, match="never deleted"):
        services.report_draft_discard(report=report)


def test_drafts_can_be_discarded(cycle):
    draft = _draft(cycle)
    services.report_draft_discard(report=draft)
    assert not Report.objects.filter(pk=draft.pk).exists()


# --- the model layer ------------------------------------------------------------------------
def test_the_model_refuses_to_save_changed_content_of_a_published_report(make_published):
    report = make_published()
    report.content = {**report.content, "providers": []}
    with pytest.raises(ReportImmutableError, match="content"):
        report.save()


def test_the_model_refuses_to_unpublish(make_published):
    report = make_published()
    report.status = Report.Status.DRAFT
    with pytest.raises(ReportImmutableError, match="cannot become draft"):
        report.save()


def test_the_model_refuses_to_delete_a_published_report(make_published):
    report = make_published()
    with pytest.raises(ReportImmutableError, match="never deleted"):
        report.delete()
    assert Report.objects.filter(pk=report.pk).exists()


def test_the_model_refuses_to_rewrite_a_withdrawal_notice(make_published, publisher):
    report = services.report_withdraw(report=make_published(), notice="first", user=publisher)
    report = Report.objects.get(pk=report.pk)
    report.withdrawal_notice = "rewritten"
    with pytest.raises(ReportImmutableError, match="withdrawal_notice"):
        report.save()


# --- the database trigger -------------------------------------------------------------------
def _refused(callable_):
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        callable_()


def test_the_database_refuses_a_raw_update_of_published_content(make_published):
    report = make_published()
    _refused(lambda: Report.objects.filter(pk=report.pk).update(content={"tampered": True}))
    _refused(lambda: Report.objects.filter(pk=report.pk).update(content_hash="0" * 64))
    _refused(lambda: Report.objects.filter(pk=report.pk).update(published_at=None))
    report.refresh_from_db()
    assert report.content_hash == content_hash(report.content)


def test_the_database_refuses_a_raw_delete_and_raw_sql(make_published):
    report = make_published()
    _refused(lambda: Report.objects.filter(pk=report.pk).delete())

    def raw_sql():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE reports_report SET status = 'draft' WHERE id = %s", [report.pk])

    _refused(raw_sql)
    assert Report.objects.filter(pk=report.pk, status="published").exists()


def test_the_database_allows_only_the_withdraw_transition_with_its_notice(make_published):
    from django.utils import timezone

    report = make_published()
    Report.objects.filter(pk=report.pk).update(status="withdrawn", withdrawn_at=timezone.now(), withdrawal_notice="n")
    _refused(lambda: Report.objects.filter(pk=report.pk).update(withdrawal_notice="changed later"))
    _refused(lambda: Report.objects.filter(pk=report.pk).update(status="published"))


def test_the_database_still_lets_drafts_change(cycle):
    draft = _draft(cycle)
    Report.objects.filter(pk=draft.pk).update(content={"x": 1}, content_hash="1" * 64)
    Report.objects.filter(pk=draft.pk).delete()
    assert not Report.objects.exists()
