"""One writer per model: ratings' evidence and overrides (``CustomerFeedback``, ``ScoreOverride``)
are written only by ``ratings.services``; reviews' workflow (survey imports, their rollback,
interview notes, override proposals) calls it (issue 25, item 6)."""

from __future__ import annotations

import ast
import datetime as dt
import inspect
from pathlib import Path

import pytest
from django.db.models.signals import pre_delete, pre_save

from ratings.models import CustomerFeedback
from reviews import services
from reviews.models import FeedbackImport
from tests.reviews.world import World

ROOT = Path(__file__).resolve().parents[2]
RATINGS_WRITTEN = {"CustomerFeedback", "ScoreOverride"}
WRITES = {"create", "bulk_create", "update", "get_or_create", "update_or_create", "delete", "bulk_update",
          "bulk_history_create"}
HEADER = "provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n"


def _app_modules() -> list[Path]:
    skip = {".venv", "tests", "bench", "migrations", "ratings", "node_modules"}
    return [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]


def _writes_in(path: Path) -> list[str]:
    """Constructions of, and manager write calls on, a ratings-written model in one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in RATINGS_WRITTEN:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} builds {func.id}")
        if isinstance(func, ast.Attribute) and func.attr in WRITES:
            names = {n.id for n in ast.walk(func.value) if isinstance(n, ast.Name)}
            if names & RATINGS_WRITTEN:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {func.attr} on {sorted(names & RATINGS_WRITTEN)}")
    return found


def test_no_app_outside_ratings_builds_or_bulk_writes_a_ratings_written_model():
    modules = _app_modules()
    assert any(p.relative_to(ROOT).as_posix() == "reviews/services.py" for p in modules)
    found = [w for p in modules for w in _writes_in(p)]
    assert found == []


@pytest.fixture
def writers():
    """The module of each frame that saves or deletes a CustomerFeedback row, per write."""
    seen: list[set[str]] = []

    def record(sender, instance, **kwargs):
        seen.append({f.frame.f_globals.get("__name__", "") for f in inspect.stack(0)})

    pre_save.connect(record, sender=CustomerFeedback, dispatch_uid="one-writer-save")
    pre_delete.connect(record, sender=CustomerFeedback, dispatch_uid="one-writer-delete")
    try:
        yield seen
    finally:
        pre_save.disconnect(sender=CustomerFeedback, dispatch_uid="one-writer-save")
        pre_delete.disconnect(sender=CustomerFeedback, dispatch_uid="one-writer-delete")


def test_interview_ratings_and_import_rollbacks_are_written_through_ratings_services(base: World, writers):
    services.interview_note_create(
        cycle=base.cycle, provider=base.a, area_or_criterion="reliability", respondent_org="Acme", notes="n",
        interviewed_on=dt.date(2026, 11, 1), by=base.users["analyst"], rating=4,
    )
    report = services.feedback_import(
        cycle=base.cycle, text=HEADER + "alpha,reliability,4,survey,Org One,,\nbravo,reliability,2,survey,Org Two,,\n",
        filename="survey.csv", by=base.users["analyst"], dry_run=False,
    )
    assert report.ok and report.written == 2
    assert services.feedback_import_rollback(batch=FeedbackImport.objects.get(pk=report.batch_id),
                                             by=base.users["analyst"]) == 2
    assert len(writers) == 3  # the interview's rating saved, the two imported rows deleted
    assert all("ratings.services" in modules for modules in writers)
