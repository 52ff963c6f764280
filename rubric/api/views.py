"""Rubric API v1: read versions with their areas and criteria; import, export, freeze, clone, diff.

Reads need an authenticated user; writes need the rubric model permissions (the analyst and
admin roles hold them). Edits of a frozen version answer 409 Conflict with the reason; a
malformed upload answers 400 with every problem as file, line, field and message, and
writes nothing (both through the project's exception handler, config/api_errors.py). Each
action parses input, calls one service or selector, formats output.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.parsers import BaseParser
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from config.api_input import BoundedJSONParser, CleanMultiPartParser
from config.api_negotiation import DocumentExportNegotiation
from rubric.api.serializers import (
    RUBRIC_DOCUMENT_SCHEMA,
    CloneInputSerializer,
    CriterionSerializer,
    ImportResultSerializer,
    RubricVersionDiffSerializer,
    RubricVersionSerializer,
)
from rubric.models import Criterion, RubricVersion
from rubric.selectors import rubric_version_diff, rubric_version_export, rubric_version_list
from rubric.services import (
    criterion_update,
    rubric_version_clone,
    rubric_version_freeze,
    rubric_version_import,
    rubric_version_update,
)


class YamlParser(BaseParser):
    """The request body as text: a rubric YAML document (application/yaml, text/yaml, text/plain)."""

    media_type = "application/yaml"
    max_bytes = 2 * 1024 * 1024  # the default rubric is ~30 KiB

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> str:
        data = stream.read(self.max_bytes + 1) if stream is not None else b""
        if len(data) > self.max_bytes:
            raise ParseError(f"the rubric file is larger than {self.max_bytes} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError("the rubric file is not UTF-8 text") from exc


class TextYamlParser(YamlParser):
    media_type = "text/yaml"


class PlainTextParser(YamlParser):
    media_type = "text/plain"


class RubricWritePermission(BasePermission):
    """Anyone signed in reads; writing needs the rubric model permission (analyst, admin)."""

    message = "Changing rubric versions needs the analyst or admin role."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if request.method in SAFE_METHODS:
            return True
        return bool(user.has_perm("rubric.change_rubricversion") and user.has_perm("rubric.add_rubricversion"))


class RubricVersionViewSet(mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Rubric versions with areas and criteria. PATCH edits a draft's title, description or scoring."""

    serializer_class = RubricVersionSerializer
    # The project default (signed in, no outside provider accounts) and, for writes, the rubric permission.
    permission_classes = [*api_settings.DEFAULT_PERMISSION_CLASSES, RubricWritePermission]
    filterset_fields = ["name", "status"]
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self) -> Any:
        return rubric_version_list()

    def perform_update(self, serializer: RubricVersionSerializer) -> None:
        serializer.instance = rubric_version_update(
            rubric_version=serializer.instance, data=dict(serializer.validated_data)
        )

    @extend_schema(responses={(200, "application/yaml"): RUBRIC_DOCUMENT_SCHEMA})
    @action(detail=True, methods=["get"], url_path="export", content_negotiation_class=DocumentExportNegotiation)
    def export(self, request: Request, pk: str | None = None, **kwargs: Any) -> HttpResponse:
        version = self.get_object()
        text = rubric_version_export(rubric_version=version)
        response = HttpResponse(text.encode("utf-8"), content_type="application/yaml; charset=utf-8")
        # Built by Django (quoted, or RFC 5987-encoded), never by string formatting: a label
        # with a quote or a line break must not break or split the header.
        response["Content-Disposition"] = content_disposition_header(
            as_attachment=True, filename=f"{version.name}-{version.version}.yaml"
        )
        return response

    @extend_schema(
        request={"application/yaml": str, "multipart/form-data": {"type": "object", "properties": {
            "file": {"type": "string", "format": "binary"}}}},
        parameters=[OpenApiParameter("freeze", bool, description="Freeze the version once imported.")],
        responses={201: ImportResultSerializer, 200: ImportResultSerializer},
    )
    @action(detail=False, methods=["post"], url_path="import",
            parser_classes=[YamlParser, TextYamlParser, PlainTextParser, CleanMultiPartParser])
    def import_yaml(self, request: Request, **kwargs: Any) -> Response:
        upload = request.FILES.get("file") if hasattr(request, "FILES") else None
        if upload is not None:
            try:
                text, filename = upload.read().decode("utf-8"), upload.name
            except UnicodeDecodeError as exc:
                raise ParseError("the rubric file is not UTF-8 text") from exc
        elif isinstance(request.data, str):
            text, filename = request.data, request.query_params.get("filename", "request body")
        else:
            raise ParseError("send the rubric as an application/yaml body or a multipart 'file'")
        freeze = request.query_params.get("freeze", "").lower() in ("1", "true", "yes")
        result = rubric_version_import(text=text, filename=filename, freeze=freeze)
        payload = ImportResultSerializer({
            "created": result.created, "frozen_now": result.frozen_now, "message": result.message,
            "rubric_version": rubric_version_list().get(pk=result.rubric_version.pk),
        }).data
        return Response(payload, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(request=None, responses={200: RubricVersionSerializer})
    @action(detail=True, methods=["post"])
    def freeze(self, request: Request, pk: str | None = None, **kwargs: Any) -> Response:
        version = rubric_version_freeze(rubric_version=self.get_object())
        return Response(self.get_serializer(rubric_version_list().get(pk=version.pk)).data)

    @extend_schema(request=CloneInputSerializer, responses={201: RubricVersionSerializer})
    @action(detail=True, methods=["post"])
    def clone(self, request: Request, pk: str | None = None, **kwargs: Any) -> Response:
        data = CloneInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        clone = rubric_version_clone(
            source=self.get_object(), version=data.validated_data["version"], name=data.validated_data.get("name")
        )
        body = self.get_serializer(rubric_version_list().get(pk=clone.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("other", int, description="Version to compare against (default: the parent).")],
        responses={200: RubricVersionDiffSerializer},
    )
    @action(detail=True, methods=["get"])
    def diff(self, request: Request, pk: str | None = None, **kwargs: Any) -> Response:
        version = self.get_object()
        other_id = request.query_params.get("other")
        if other_id:
            base = RubricVersion.objects.filter(pk=other_id).first() if other_id.isdigit() else None
            if base is None:
                raise NotFound(f"no rubric version with id {other_id!r}")
        elif version.parent is not None:
            base = version.parent
        else:
            raise ParseError("this version has no parent; pass ?other=<id>")
        diff = rubric_version_diff(a=base, b=version)
        return Response(RubricVersionDiffSerializer({
            "text": diff.as_text(), "from": base.label, "to": version.label,
            "criteria_added": diff.criteria_added, "criteria_removed": diff.criteria_removed,
            "criteria_changed": [c.key for c in diff.criteria_changed],
            "areas_added": diff.areas_added, "areas_removed": diff.areas_removed,
            "areas_changed": [a.key for a in diff.areas_changed],
        }).data)


class CriterionViewSet(mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Criteria of every version; PATCH edits a criterion of a draft and answers 409 when frozen."""

    serializer_class = CriterionSerializer
    # The project default (signed in, no outside provider accounts) and, for writes, the rubric permission.
    permission_classes = [*api_settings.DEFAULT_PERMISSION_CLASSES, RubricWritePermission]
    filterset_fields = ["rubric_version", "is_gate", "probe_id"]
    http_method_names = ["get", "patch", "head", "options"]
    parser_classes = [BoundedJSONParser]

    def get_queryset(self) -> Any:
        return Criterion.objects.select_related("area", "rubric_version").order_by("rubric_version", "position")

    def perform_update(self, serializer: CriterionSerializer) -> None:
        serializer.instance = criterion_update(criterion=serializer.instance, data=dict(serializer.validated_data))
