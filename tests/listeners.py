"""Real listeners on loopback for the egress tests (issue 24): they record every byte they receive.

* :class:`RecordingListener`: an HTTP server in a thread on 127.0.0.1 (its own port: another
  origin than anything else in the test) that records each request's line, headers and body,
  and answers what the test sets (a Prometheus-like JSON answer by default, or a redirect).
* :class:`RawListener`: a TCP server that answers any bytes like a Redis server does (``-ERR``)
  and closes: a service of another kind.
* ``allow_loopback_urls``: the ``OPGRADE_URL_ALLOW_NETWORKS`` a test needs to reach these
  (production refuses loopback); a test imports it explicitly where it points URLs at loopback.

Every listener is started and stopped by the test (context managers, bounded waits).
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

PROM_OK = {"status": "success", "data": {"resultType": "vector", "result": []}}


@pytest.fixture
def allow_loopback_urls(settings: Any) -> Iterator[None]:
    """Loopback listeners are the testbed here: name loopback as an allowed network, for this test only."""
    settings.OPGRADE_URL_ALLOW_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"),)
    yield


class _Recorder(BaseHTTPRequestHandler):
    server: _RecordingServer
    protocol_version = "HTTP/1.0"

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        raw = self.raw_requestline + bytes(self.headers) + body
        with self.server.lock:
            self.server.requests.append({"method": self.command, "path": self.path,
                                         "headers": dict(self.headers.items()), "raw": raw})
        status, headers, payload = self.server.answer(self)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = _answer


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorder)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.answer = lambda handler: (200, {"Content-Type": "application/json"}, json.dumps(PROM_OK).encode())


class RecordingListener:
    """``with RecordingListener() as rec:`` -> ``rec.url``; ``rec.requests`` after."""

    def __init__(self) -> None:
        self._server = _RecordingServer()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._server.lock:
            return list(self._server.requests)

    def answer_with(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self._server.answer = lambda handler: (status, dict(headers or {}), body)

    def authorizations(self) -> list[str]:
        """Every Authorization, Proxy-Authorization or Cookie header value received."""
        return [v for r in self.requests for k, v in r["headers"].items()
                if k.lower() in ("authorization", "proxy-authorization", "cookie")]

    def secrets_received(self, secrets: list[str]) -> list[str]:
        """Which of ``secrets`` reached this listener anywhere in a request (line, headers, body),
        in clear, URL-encoded or inside a Basic header."""
        found = []
        for request in self.requests:
            haystack = request["raw"]
            for value in self.authorizations():
                if value.lower().startswith("basic "):
                    with contextlib.suppress(ValueError):
                        haystack += b"\n" + base64.b64decode(value.split(" ", 1)[1])
            for secret in secrets:
                if any(form in haystack for form in _forms(secret)):
                    found.append(f"{request['method']} {request['path']}: {secret[:6]}...")
        return found

    def __enter__(self) -> RecordingListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _forms(secret: str) -> list[bytes]:
    """The secret as bytes, and URL-encoded (a Basic header is caught as a header)."""
    import urllib.parse

    return [secret.encode(), urllib.parse.quote(secret, safe="").encode()]


class _RawHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(2)
        try:
            self.request.recv(4096)
            self.request.sendall(b"-ERR unknown command 'GET', with args beginning with: \r\n")
        except OSError:
            pass


class RawListener:
    """A TCP listener that answers like Redis (not HTTP), on ``port`` (0: any free one)."""

    def __init__(self, port: int = 0) -> None:
        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", port), _RawHandler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> RawListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
