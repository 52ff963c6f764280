"""Importing customer feedback from the workbench: a dry run lists bad rows, an import streams
its progress as it writes (readable without JavaScript), and the roles are those of the workbench."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from config.access import Role
from ratings.models import CustomerFeedback
from reviews.models import AuditEvent, FeedbackImport
from tests.factories import AreaFactory, CriterionFactory, CycleFactory, ProviderFactory
from tests.workbench.builders import user

pytestmark = pytest.mark.django_db
HEADER = "provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n"


@pytest.fixture
def cycle(db):
    area = AreaFactory(key="support-area")
    CriterionFactory(area=area, key="support", evidence_kinds=["customer_feedback"])
    CriterionFactory(area=area, key="runbooks", evidence_kinds=["doc_review"])
    return CycleFactory(rubric_version=area.rubric_version, slug="fb", providers=[ProviderFactory(slug="aurora")])


def _client(role: Role, name: str = "u") -> Client:
    c = Client()
    c.force_login(user(name, role))
    return c


def _post(client: Client, cycle, text: str, *, dry_run: bool):
    data = {"file": SimpleUploadedFile("survey.csv", text.encode(), content_type="text/csv")}
    if dry_run:
        data["dry_run"] = "1"
    return client.post(f"/admin/workbench/{cycle.slug}/feedback/", data)


def _body(response) -> str:
    assert response.streaming, "the import page streams its progress"
    return b"".join(response.streaming_content).decode()


def test_a_large_import_streams_its_progress_and_writes_every_row_with_its_audit_event(cycle):
    rows = "".join(f"aurora,support,{1 + n % 5},survey,Customer {n},,2026-11-01\n" for n in range(6_001))
    analyst = _client(Role.ANALYST)
    dry = _body(_post(analyst, cycle, HEADER + rows, dry_run=True))
    assert "validated 6,001 rows" in dry and "Dry run: 6,001 rows valid; nothing written." in dry
    assert not CustomerFeedback.objects.exists()
    response = _post(analyst, cycle, HEADER + rows, dry_run=False)
    assert response["X-Accel-Buffering"] == "no"
    body = _body(response)
    assert body.index("written 5,000 rows of 6,001 (83%)") < body.index("written 6,001 rows of 6,001 (100%)") \
        < body.index("Imported 6,001 rows")
    assert body.rstrip().endswith("</html>")  # the admin page, whole
    assert CustomerFeedback.objects.filter(cycle=cycle).count() == 6_001
    assert FeedbackImport.objects.get(cycle=cycle).rows.count() == 6_001
    assert AuditEvent.objects.filter(model="ratings.customerfeedback", action="+").count() == 6_001
    page = analyst.get(f"/admin/workbench/{cycle.slug}/feedback/").content.decode()
    assert "survey.csv" in page and "6001" in page


def test_a_bad_file_lists_each_bad_row_and_writes_nothing(cycle):
    text = HEADER + "aurora,support,4,survey,Acme,,2026-11-01\naurora,runbooks,3,survey,Acme,,2026-11-01\n" \
        "aurora,support,9,survey,<b>Hooli</b>,,2026-11-01\n"
    body = _body(_post(_client(Role.ANALYST), cycle, text, dry_run=False))
    assert "2 problem(s) found; nothing was written." in body
    assert "survey.csv: line 3: area_or_criterion &#x27;runbooks&#x27;: this criterion takes no customer feedback" in body
    assert "survey.csv: line 4: rating 9 is outside 1-5" in body
    assert not CustomerFeedback.objects.exists() and not FeedbackImport.objects.exists()
    unreadable = _client(Role.ANALYST, "u2").post(f"/admin/workbench/{cycle.slug}/feedback/", {
        "file": SimpleUploadedFile("x.csv", b"\x00\x01\x02", content_type="text/csv")})
    assert not unreadable.streaming and "looks like UTF-16 or UTF-32 without a byte-order mark" in \
        unreadable.content.decode()


def test_publishers_read_the_imports_but_may_not_import_and_reviewers_are_refused(cycle):
    pub = _client(Role.PUBLISHER)
    page = pub.get(f"/admin/workbench/{cycle.slug}/feedback/").content.decode()
    assert "Imports of this cycle" in page and 'id="wb-import-form"' not in page
    assert _post(pub, cycle, HEADER + "aurora,support,4,survey,Acme,,\n", dry_run=False).status_code == 403
    rev = _client(Role.REVIEWER, "rev")
    assert rev.get(f"/admin/workbench/{cycle.slug}/feedback/").status_code == 403
    assert not CustomerFeedback.objects.exists()
