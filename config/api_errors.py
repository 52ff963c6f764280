"""One place that turns errors into the API's JSON answers.

Every API view raises; none formats its own error responses. DRF's default handler covers
its own exceptions (validation, authentication, permission, not found, throttling); this
module adds the project's domain errors and Django's, so that a refused write answers a
JSON 4xx with a ``detail`` instead of a 500 debug page:

* Django's ``ValidationError`` (``full_clean``, model constraints) -> 400 with the field messages;
* a malformed rubric file -> 400 listing each problem as file, line, field and message;
* the apps' domain errors by their kind (``config.errors``; this module names no app and no
  app's class): ``Forbidden`` -> 403, ``Conflict`` (and database integrity conflicts) -> 409,
  ``BadInput`` -> 400, ``NotFound`` -> 404, in that order of precedence;
* ``SuspiciousOperation`` (oversized or malformed requests) -> 400.

``json_error_view`` serves the same shape for requests that never reach a DRF view (an
unknown /api/ URL, a request Django itself refuses): API clients never get HTML.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from config import errors
from config.constraint_words import constraint_words


class Conflict(exceptions.APIException):
    """409: the request is well formed but clashes with stored state (frozen, immutable, taken)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the stored state."
    default_code = "conflict"


def _django_validation_detail(exc: DjangoValidationError) -> Any:
    if hasattr(exc, "error_dict"):
        return {("non_field_errors" if k == "__all__" else k): v for k, v in exc.message_dict.items()}
    return {"detail": " ".join(exc.messages)}


def api_exception(exc: BaseException) -> exceptions.APIException | Response | None:
    """The DRF exception (or a finished response) for a domain or Django error; None if unknown."""
    if isinstance(exc, errors.MalformedFile):
        return Response(
            {
                "detail": exc.api_detail,
                "errors": [
                    {"file": p.filename, "line": p.line, "field": p.field, "message": p.message}
                    for p in exc.problems
                ],
            },
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(_django_validation_detail(exc))
    if isinstance(exc, SuspiciousOperation):
        return exceptions.ParseError(str(exc) or "the request was refused as malformed")
    if isinstance(exc, errors.Forbidden):
        return exceptions.PermissionDenied(str(exc))
    if isinstance(exc, IntegrityError):
        # Never echo the database's message (it names tables and values); say what happened,
        # in the words of the constraint it broke when the database names one we know.
        words = constraint_words(getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None) or "")
        if words:
            return Conflict(f"{words} Nothing was written.")
        return Conflict("the change conflicts with stored data (a uniqueness or integrity rule); nothing was written")
    if isinstance(exc, errors.Conflict):
        return Conflict(str(exc))
    if isinstance(exc, errors.BadInput):
        return exceptions.ValidationError({"detail": str(exc)})
    if isinstance(exc, errors.NotFound):
        return exceptions.NotFound(str(exc))
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """REST_FRAMEWORK's EXCEPTION_HANDLER: domain and Django errors first, then DRF's own."""
    mapped = api_exception(exc)
    if isinstance(mapped, Response):
        return mapped
    return drf_exception_handler(mapped if mapped is not None else exc, context)


# --- requests that never reach a DRF view -------------------------------------------------------
_STATUS_DETAIL = {
    400: "Bad request.",
    403: "You do not have permission to perform this action.",
    404: "Not found.",
    500: "Server error.",
}


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def json_error_view(code: int, html_handler: Any) -> Any:
    """A Django handler4xx/500 that answers JSON under /api/ and the usual page elsewhere."""

    def view(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
        if _is_api(request):
            return JsonResponse({"detail": _STATUS_DETAIL[code]}, status=code)
        return html_handler(request) if code == 500 else html_handler(request, exception)

    return view
