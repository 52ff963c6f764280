"""The catalog's one HTTP helper against a real HTTP server on loopback.

It sends basic auth (or a bearer token), never follows a redirect (a provider endpoint that
redirects elsewhere is judged on its own answer), reads at most HTTP_MAX_BYTES, and turns a
refused connection into status 0 with the error instead of raising.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from probes.catalog import _support
from tests.sshd import free_port


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, object]] = []

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        _Handler.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                              "body": self.rfile.read(length).decode() if length else ""})
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "/elsewhere")
            self.end_headers()
            return
        if self.path.startswith("/big"):
            payload = b"x" * (_support.HTTP_MAX_BYTES + 1000)
        else:
            payload = json.dumps({"path": self.path}).encode()
        self.send_response(404 if self.path.startswith("/missing") else 200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = _answer


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_basic_auth_and_query_parameters_are_sent_and_recorded(server):
    result = _support.http("GET", f"{server}/api/v1/query", auth=("tenant-a", "s3cret"), params={"query": "up"})
    assert result.ok and json.loads(result.body) == {"path": "/api/v1/query?query=up"}
    expected = "Basic " + base64.b64encode(b"tenant-a:s3cret").decode()
    assert _Handler.seen[-1]["headers"]["Authorization"] == expected
    assert result.request_headers["Authorization"] == expected
    assert "s3cret" not in json.dumps(result.evidence(secrets_=["s3cret"]))


def test_a_redirect_is_answered_not_followed(server):
    result = _support.http("GET", f"{server}/redirect", auth=("a", "b"))
    assert result.status == 302 and not result.ok
    assert [s["path"] for s in _Handler.seen] == ["/redirect"]


def test_a_bearer_token_and_a_json_body(server):
    result = _support.http("POST", f"{server}/v1/nodes", bearer="tok", body={"count": 2})
    assert result.ok
    seen = _Handler.seen[-1]
    assert seen["headers"]["Authorization"] == "Bearer tok"
    assert seen["headers"]["Content-Type"] == "application/json" and json.loads(seen["body"]) == {"count": 2}


def test_an_error_status_is_returned_and_the_body_is_bounded(server):
    assert _support.http("GET", f"{server}/missing").status == 404
    assert len(_support.http("GET", f"{server}/big").body) == _support.HTTP_MAX_BYTES


def test_no_answer_is_status_zero_with_the_error():
    result = _support.http("GET", f"http://127.0.0.1:{free_port()}/", timeout_s=2)
    assert result.status == 0 and result.error


def test_only_http_urls_with_a_host_are_accepted():
    with pytest.raises(ValueError, match="refusing URL"):
        _support.http("GET", "file:///etc/passwd")
