"""HTTP plumbing shared by the public pages (reports.views) and the public API (reports.api.views).

One module both import, so neither view module imports the other: the cached, ETag'd
response for a published report's rendering, and the public JSON payload of a report.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control

from reports import rendering, selectors
from reports.models import Report

MAX_AGE = int(getattr(settings, "OPGRADE_REPORT_MAX_AGE", 300))  # seconds shared caches may reuse a page


def report_meta(pk: int) -> dict[str, Any]:
    meta = rendering.meta_cache.get(pk, lambda: selectors.report_public_meta(pk=pk))
    if meta is None:
        raise Http404("No published report with that number.")
    return meta


def etag_for(meta: dict[str, Any], kind: str = "") -> str:
    """Strong ETag: the content hash plus the parts that can still change (status, correction)."""
    tail = f"{meta['status']}-{meta.get('superseded_by__id') or 0}"
    return f'"{meta["content_hash"]}-{tail}{("-" + kind) if kind else ""}"'


def cached_response(
    request: HttpRequest, meta: dict[str, Any], kind: str, render: Callable[[], bytes], content_type: str,
    *, filename: str | None = None,
) -> HttpResponse:
    key = (kind, meta["id"], meta["content_hash"], meta["status"], meta.get("superseded_by__id"))
    # Compressible bodies are also kept gzipped (once per content hash), so clients that
    # accept gzip get a tenth of the bytes at no per-request compression cost.
    gzipped = content_type != "application/pdf" and "gzip" in request.headers.get("Accept-Encoding", "")
    etag = etag_for(meta, kind + (".gz" if gzipped else ""))
    # Django's conditional-response helper: 304 for a matching If-None-Match (weak comparison,
    # "*" included) on GET/HEAD, 412 for a failed precondition on anything else.
    response: HttpResponse | None = get_conditional_response(request, etag=etag)
    if response is None:
        body = rendering.cache.get_or_render(key, render)
        if gzipped:
            body = rendering.cache.get_or_render((*key, "gzip"), lambda: gzip.compress(body, 6, mtime=0))
            response = HttpResponse(body, content_type=content_type)
            response["Content-Encoding"] = "gzip"
        else:
            response = HttpResponse(body, content_type=content_type)
        if filename:
            response["Content-Disposition"] = f'inline; filename="{filename}"'
    response["ETag"] = etag
    response["Vary"] = "Accept-Encoding"
    response["X-Content-Hash"] = meta["content_hash"]
    patch_cache_control(response, public=True, max_age=MAX_AGE)
    return response


def public_report_payload(report: Report) -> dict[str, Any]:
    successor = getattr(report, "superseded_by", None) if report.status == Report.Status.SUPERSEDED else None
    return {
        "id": report.pk,
        "status": report.status,
        "content_hash": report.content_hash,
        "cycle": report.cycle.slug,
        "published_at": report.published_at.isoformat() if report.published_at else None,
        "published_by": report.published_by.get_username() if report.published_by else None,
        "supersedes": report.supersedes_id,
        "correction_notice": report.correction_notice or None,
        "superseded_by": successor.pk if successor else None,
        "superseded_at": report.superseded_at.isoformat() if report.superseded_at else None,
        "withdrawn_at": report.withdrawn_at.isoformat() if report.withdrawn_at else None,
        "withdrawal_notice": report.withdrawal_notice or None,
        "html_url": reverse("reports:overview", args=[report.pk]),
        "document": report.content,
    }


def public_report_bytes(pk: int) -> bytes:
    report = selectors.report_public_queryset().select_related("cycle", "published_by").get(pk=pk)
    return json.dumps(
        public_report_payload(report), ensure_ascii=False, sort_keys=True, separators=(",", ":")
    ).encode("utf-8")
