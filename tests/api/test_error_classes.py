"""Every domain error the API may see is of one of the four kinds in ``config.errors``, and the
handler answers by kind alone (it names no app and no app's class), so a moved or renamed class
keeps its answer and a new one cannot silently become a 500 (issue 25, item 2)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions

from config import errors

APPS = ("rubric", "providers", "probes", "ratings", "costs", "grades", "reports", "reviews", "quickstart", "workbench")

# The errors the handler answers, by kind, as it did when it named them one by one (2, 5, 6).
# A subclass of an error that is also Forbidden (or Conflict) answers as that first kind.
NAMED_BEFORE = {
    errors.Forbidden: ("reviews.services.RoleRefused", "reports.errors.ReportPermissionError"),
    errors.Conflict: ("rubric.models.FrozenRubricError", "rubric.services.RubricConflictError",
                      "config.immutability.ImmutableError", "reports.errors.ReportImmutableError",
                      "reports.errors.ReportStateError"),
    errors.BadInput: ("reviews.services.ReviewsError", "reports.errors.ReportError",
                      "ratings.engine_types.ScoringInputError", "probes.services.ProbeRunError",
                      "probes.catalog.UnknownProbe", "rubric.yaml_format.RubricFormatError"),
}

# Errors the handler leaves alone, as it did before the kinds: a view or a service catches and
# translates them (ScoreOverrideRefused -> ReviewsError, FeedbackFileError -> a 400 the import view
# writes, OnboardingError -> the page's message), or they never leave a task, a command, the
# testbed runner or a pure core. Giving one a kind changes an API answer: a decision, not a default.
NOT_ANSWERED = {
    "rubric.selectors.RubricFingerprintMismatch", "rubric.versioned.DocumentConflictError", "rubric.yaml_kit.FormatError",
    "probes.catalog._support.Abort", "probes.catalog._support.CredentialNotBound", "probes.egress.UrlRefused",
    "probes.onboarding.OnboardingError", "probes.parsers.ParseError", "probes.politeness.CoordinationUnavailable",
    "probes.politeness.SlotUnavailable", "probes.services.QueueUnavailable", "probes.thresholds.DefinitionError",
    "probes.transport.TransportError", "probes.transport.HostUnreachable", "probes.transport.HandshakeFailed",
    "probes.transport.ConnectionLost", "probes.transport.HostKeyChanged", "probes.transport.HostKeyNotPinned",
    "probes.transport.HostKeyUnverified", "probes.transport.SchedulerRefused", "probes.transport.NodeDeparted",
    "probes.transport.AuthFailed", "probes.transport.PasswordNotBound", "probes.transport.CredentialsInvalid",
    "probes.transport.CommandTemplateError", "ratings.services.ScoreOverrideRefused",
    "ratings.services.ScoreOverrideFourEyes", "costs.engine.CostInputError", "costs.services.CostsError",
    "grades.services.GradeConflictError", "grades.services.PriceObservationError", "grades.tracking.NoObservations",
    "reports.context.DocumentError", "reviews.feedback_csv.FeedbackFileError", "quickstart.scheduled.ScheduleError",
    "quickstart.services.DemoError", "workbench.services.WorkbenchError",
}


def _resolve(dotted: str) -> type[BaseException]:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _app_exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in an app's modules (migrations aside), by dotted name.
    DRF's own APIExceptions answer for themselves and Django's ValidationError has its own rule."""
    found: dict[str, type[BaseException]] = {}
    for app in APPS:
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations" in info.name:
                continue
            module = importlib.import_module(info.name)
            for cls in vars(module).values():
                if (inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == module.__name__
                        and not issubclass(cls, exceptions.APIException | DjangoValidationError)):
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_class_the_apps_define_is_of_a_kind_or_listed_as_one_the_api_never_answers():
    classes = _app_exception_classes()
    assert len(classes) > 40 and "reviews.services.RoleRefused" in classes  # the walk reached the apps
    kindless = sorted(n for n, c in classes.items() if not issubclass(c, errors.KINDS) and n not in NOT_ANSWERED)
    assert kindless == [], "give each a base from config.errors, or list it in NOT_ANSWERED saying why"
    listed_with_a_kind = sorted(n for n in NOT_ANSWERED if n in classes and issubclass(classes[n], errors.KINDS))
    assert listed_with_a_kind == []
    assert set(classes) >= NOT_ANSWERED  # a stale name here is a class that moved: look again


@pytest.mark.parametrize(("kind", "answer"), [
    (errors.Forbidden, exceptions.PermissionDenied), (errors.Conflict, None), (errors.BadInput, exceptions.ValidationError),
])
def test_the_errors_the_handler_named_one_by_one_keep_their_kind_and_answer(kind, answer):
    from config.api_errors import Conflict, api_exception

    for dotted in NAMED_BEFORE[kind]:
        cls = _resolve(dotted)
        assert issubclass(cls, kind), dotted
        assert next(k for k in errors.KINDS if issubclass(cls, k)) is kind, dotted  # the kind it answers as
        if dotted == "rubric.yaml_format.RubricFormatError":
            continue  # its own answer, below
        assert isinstance(api_exception(cls(f"{dotted} refused")), answer or Conflict), dotted


def test_a_malformed_rubric_lists_each_problem_and_a_missing_document_is_a_404():
    from config.api_errors import api_exception
    from rubric.selectors import RubricVersionNotFound
    from rubric.yaml_format import RubricFormatError
    from rubric.yaml_kit import Problem

    response = api_exception(RubricFormatError([Problem(filename="r.yaml", line=3, field="areas", message="missing")]))
    assert response.status_code == 400
    assert response.data == {"detail": "the rubric is malformed; nothing was written",
                             "errors": [{"file": "r.yaml", "line": 3, "field": "areas", "message": "missing"}]}
    missing = api_exception(RubricVersionNotFound("no rubric version 'x'"))
    assert isinstance(missing, exceptions.NotFound) and str(missing.detail) == "no rubric version 'x'"


def test_the_handler_names_no_app_and_no_class_by_string():
    source = (Path(__file__).resolve().parents[2] / "config" / "api_errors.py").read_text()
    assert "import_module" not in source
    for app in APPS:
        assert f"{app}." not in source and f"from {app}" not in source, app


def test_a_report_in_the_wrong_lifecycle_state_is_a_conflict_not_bad_input():
    from config.api_errors import Conflict, api_exception
    from reports.errors import ReportInputError, ReportStateError

    assert isinstance(api_exception(ReportStateError("report #1 is draft; only a report in fact-check can be published")), Conflict)
    assert not isinstance(api_exception(ReportInputError("invalid report document")), Conflict)
