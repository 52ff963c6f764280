"""The JSON request handler that the provider API and the log service share."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from testbed.errors import TestbedError

if TYPE_CHECKING:
    from testbed.agent.supervisor import Agent


class JsonHandler(BaseHTTPRequestHandler):
    agent: Agent
    server_version = "opgtb/1"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet: one line per request is noise
        return

    def reply(self, code: int, body: Any) -> None:
        data = (json.dumps(body, indent=1) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > 65536:
            raise TestbedError("request body too large")
        raw = self.rfile.read(length) if length else b""
        try:
            data = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            raise TestbedError(f"body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise TestbedError("body must be a JSON object")
        return data
