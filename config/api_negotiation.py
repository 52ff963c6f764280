"""Content negotiation for API actions that answer a document in a format of their own.

An export answers YAML (``application/yaml``) whatever the client accepts, and documents it so;
DRF's default negotiation would refuse a client that asks for exactly that (``Accept:
application/yaml``) with 406, as no renderer of the API speaks YAML. These actions build their
success response themselves; the negotiated renderer only writes their errors, which are JSON
like every other API error (config/api_errors.py), so it is always the JSON renderer.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer


class DocumentExportNegotiation(BaseContentNegotiation):
    def select_parser(self, request: Any, parsers: Any) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Any, renderers: Any, format_suffix: str | None = None) -> Any:
        renderer = next((r for r in renderers if isinstance(r, JSONRenderer)), renderers[0])
        return renderer, renderer.media_type
