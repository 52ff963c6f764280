"""OpenAPI: document the error answers every operation can give.

drf-spectacular documents the success responses it can infer; the 4xx answers come from the
permission classes, the filters, the parsers, the throttles and config/api_errors.py, which
it cannot see. This post-processing hook adds them, all with one ``Error`` body (DRF's
``{"detail": ...}``, or a validation error's ``{"field": ["message", ...]}``, or a list of
messages), so that the schema agrees with what clients receive; the fuzz test
(tests/api/test_fuzz.py) holds the two together.

* every operation: 429 (throttled); signed-in operations also 401 and 403;
* operations with path parameters: 404;
* operations with query parameters or a request body: 400;
* writes (POST, PUT, PATCH, DELETE): 400 and 409 (frozen, immutable or taken).

``AutoSchema`` (the project's DEFAULT_SCHEMA_CLASS) marks read-only fields over nullable
model fields as nullable, which drf-spectacular leaves out for read-only related fields.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import FieldDoesNotExist
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema

ERROR_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"detail": {"type": "string"}},
            "additionalProperties": True,
            "description": "`detail` says what was refused; a validation error names each field instead.",
        },
        {"type": "array", "items": {"type": "string"}},
    ]
}
_REASONS = {
    "400": "Bad input: the body, a parameter or a filter was refused; nothing was written.",
    "401": "Not signed in.",
    "403": "Signed in, but this role may not do this.",
    "404": "No such object, or not one this user may see.",
    "409": "Conflicts with stored state (frozen, immutable or already taken); nothing was written.",
    "429": "Too many requests: throttled (see Retry-After).",
}
_WRITES = {"post", "put", "patch", "delete"}
_METHODS = _WRITES | {"get", "head", "options"}


def _codes(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    params = operation.get("parameters", [])
    codes = ["429"]
    if operation.get("security") != [{}] and not path.startswith("/api/public/"):
        codes += ["401", "403"]
    if any(p.get("in") == "path" for p in params) or "{" in path:
        codes.append("404")
    if method in _WRITES or any(p.get("in") == "query" for p in params) or "requestBody" in operation:
        codes.append("400")
    if method in _WRITES:
        codes.append("409")
    return codes


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """POSTPROCESSING_HOOKS entry: add the error responses and the shared ``Error`` schema."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"$ref": "#/components/schemas/Error"}
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for code in _codes(path, method, operation):
                responses.setdefault(code, {
                    "description": _REASONS[code], "content": {"application/json": {"schema": ref}},
                })
    return result


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's AutoSchema, plus: a read-only field over a nullable model field is
    nullable in the schema (a SlugRelatedField over an unset foreign key serializes null)."""

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> dict[str, Any]:
        meta = super()._map_serializer_field(field, direction, bypass_extensions)
        if _over_nullable_model_field(field) and "$ref" not in meta:
            meta["nullable"] = True
        return meta


def _over_nullable_model_field(field: Any) -> bool:
    model = getattr(getattr(getattr(field, "parent", None), "Meta", None), "model", None)
    source = getattr(field, "source", "") or ""
    if model is None or not source or source == "*" or "." in source:
        return False
    try:
        model_field = model._meta.get_field(source)
    except FieldDoesNotExist:
        return False
    return bool(getattr(model_field, "null", False))
