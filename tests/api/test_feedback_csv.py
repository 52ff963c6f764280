"""A malformed feedback CSV is refused whole, naming the line (issue 11, item 10)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from ratings.models import CustomerFeedback
from reviews.feedback_csv import feedback_csv_parse

HEADER = "provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n"
GOOD_ROWS = (
    "alpha,reliability,5,survey,Org B,fine,2026-11-01\n"
    "alpha,reliability,4,survey,Org C,fine,2026-11-01\n"
    "bravo,reliability,3,survey,Org D,fine,2026-11-01\n"
)
UNTERMINATED = HEADER + 'bravo,reliability,2,survey,Org A,"unterminated,2026-11-01\n' + GOOD_ROWS
# A quote opened in one row and "closed" in a later one: the rows between fold into one field.
CLOSED_LATER = HEADER + 'bravo,reliability,2,survey,"Org A,x,2026-11-01\n' + GOOD_ROWS + 'alpha,reliability,1,survey,Org E",y,\n'


def _parse(text: str) -> Any:
    return feedback_csv_parse(text, provider_slugs={"alpha", "bravo"}, rating_keys={"reliability"},
                              pseudonym_key="k")


@pytest.mark.parametrize("text", [UNTERMINATED, CLOSED_LATER])
def test_a_quote_left_open_refuses_the_whole_file_naming_its_line(text: str) -> None:
    result = _parse(text)
    assert not result.ok
    assert [e.line for e in result.errors] == [2]
    assert "closing quote" in result.errors[0].message


def test_text_after_a_closing_quote_is_refused() -> None:
    result = _parse(HEADER + 'bravo,reliability,2,survey,"Org" A,x,2026-11-01\n' + GOOD_ROWS)
    assert not result.ok and [e.line for e in result.errors] == [2]


def test_a_comment_may_still_span_lines_when_its_quotes_close() -> None:
    result = _parse(HEADER + 'bravo,reliability,2,survey,Org A,"two\nlines",2026-11-01\n' + GOOD_ROWS)
    assert result.ok and len(result.rows) == 4
    assert result.rows[0].comment == "two\nlines" and result.rows[1].line == 4


@pytest.mark.parametrize("bad", ["a\x00b", "x \u202e y"])
def test_nul_and_bidi_controls_in_a_cell_name_their_line(bad: str) -> None:
    result = _parse(HEADER + GOOD_ROWS + f"bravo,reliability,2,survey,Org A,{bad},2026-11-01\n")
    assert not result.ok and [e.line for e in result.errors] == [5]


@pytest.mark.django_db
def test_the_api_refuses_an_unterminated_file_and_writes_nothing(world: Any) -> None:
    client = APIClient()
    client.force_authenticate(world.users["analyst"])
    before = CustomerFeedback.objects.count()
    upload = SimpleUploadedFile("s.csv", UNTERMINATED.encode(), content_type="text/csv")
    response = client.post("/api/v1/feedback-imports/", {"cycle": world.cycle.slug, "file": upload,
                                                        "dry_run": "false"}, format="multipart")
    assert response.status_code == 400
    body = response.json()
    assert body["ok"] is False and body["written"] == 0 and [e["line"] for e in body["errors"]] == [2]
    assert CustomerFeedback.objects.count() == before
