"""The catalog's one HTTP helper against real HTTP servers on loopback.

It sends a credential only to the origin it was bound to (issue 24), never follows a redirect (a
provider endpoint that redirects elsewhere is judged on its own answer, and no credential travels
to the Location), refuses addresses the egress policy refuses (loopback without the allow
setting, a name whose connected address is refused), reads at most HTTP_MAX_BYTES, keeps no
answer body in its evidence, and turns a refused connection into status 0 with the error.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from probes import egress
from probes.catalog import _support
from probes.egress import HttpCredential, origin_of
from tests.listeners import RecordingListener, allow_loopback_urls, closed_port

pytestmark = pytest.mark.usefixtures("allow_loopback_urls")
__all__ = ["allow_loopback_urls"]


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, object]] = []
    elsewhere = ""

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        _Handler.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                              "body": self.rfile.read(length).decode() if length else ""})
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", _Handler.elsewhere or "/elsewhere")
            self.end_headers()
            return
        if self.path.startswith("/big"):
            payload = b"x" * (_support.HTTP_MAX_BYTES + 1000)
        else:
            payload = json.dumps({"path": self.path, "internal": "REDIS-CONFIG-requirepass"}).encode()
        self.send_response(404 if self.path.startswith("/missing") else 200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = _answer


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    _Handler.elsewhere = ""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def basic(url: str) -> HttpCredential:
    """tenant-a's password, bound to ``url``'s origin."""
    return HttpCredential(kind="basic", origins=frozenset({origin_of(url)}), username="tenant-a", secret="s3cret")


def test_basic_auth_and_query_parameters_are_sent_to_the_bound_origin(server):
    result = _support.http("GET", f"{server}/api/v1/query", auth=basic(server), params={"query": "up"})
    assert result.ok and json.loads(result.body)["path"] == "/api/v1/query?query=up"
    expected = "Basic " + base64.b64encode(b"tenant-a:s3cret").decode()
    assert _Handler.seen[-1]["headers"]["Authorization"] == expected
    assert result.request_headers["Authorization"] == expected
    assert "s3cret" not in json.dumps(result.evidence(secrets_=["s3cret"]))


def test_the_evidence_never_holds_the_answers_body_only_an_excerpt_a_probe_gives(server):
    result = _support.http("GET", f"{server}/anything")
    evidence = json.dumps(result.evidence())
    assert result.ok and "REDIS-CONFIG" not in evidence and '"bytes"' in evidence
    assert result.evidence(excerpt="matched line")["response"]["body"] == "matched line"


def test_a_credential_bound_to_another_origin_is_not_sent_and_nothing_is_asked(server):
    with RecordingListener() as other:
        with pytest.raises(_support.CredentialNotBound, match="entered for"):
            _support.http("GET", f"{other.url}/api/v1/query", auth=basic(server))
        token = HttpCredential(kind="bearer", origins=frozenset({origin_of(server)}), secret="tok-XYZ")
        with pytest.raises(_support.CredentialNotBound):
            _support.http("GET", f"{other.url}/v1/nodes", auth=token)
        assert other.requests == []


def test_a_bare_secret_or_a_hand_made_authorization_header_is_refused(server):
    with pytest.raises(TypeError):
        _support.http("GET", f"{server}/x", auth=("tenant-a", "s3cret"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="never as a header"):
        _support.http("GET", f"{server}/x", headers={"authorization": "Bearer tok"})
    assert _Handler.seen == []


def test_a_redirect_is_answered_not_followed_and_no_credential_reaches_its_location(server):
    with RecordingListener() as other:
        _Handler.elsewhere = f"{other.url}/steal"
        result = _support.http("GET", f"{server}/redirect", auth=basic(server))
        assert result.status == 302 and not result.ok
        assert [s["path"] for s in _Handler.seen] == ["/redirect"]
        assert other.requests == []


def test_a_bearer_token_and_a_json_body(server):
    token = HttpCredential(kind="bearer", origins=frozenset({origin_of(server)}), secret="tok")
    result = _support.http("POST", f"{server}/v1/nodes", auth=token, body={"count": 2})
    assert result.ok
    seen = _Handler.seen[-1]
    assert seen["headers"]["Authorization"] == "Bearer tok"
    assert seen["headers"]["Content-Type"] == "application/json" and json.loads(seen["body"]) == {"count": 2}


def test_an_error_status_is_returned_and_the_body_is_bounded(server):
    assert _support.http("GET", f"{server}/missing").status == 404
    assert len(_support.http("GET", f"{server}/big").body) == _support.HTTP_MAX_BYTES


def test_no_answer_is_status_zero_with_the_error():
    result = _support.http("GET", f"http://127.0.0.1:{closed_port()}/", timeout_s=2)
    assert result.status == 0 and result.error


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://10.0.0.2/x", "gopher://10.0.0.2/", "http:///nohost",
                                 "http://user:pw@10.0.0.2/"])
def test_only_http_urls_with_a_host_and_no_userinfo_are_asked(url):
    result = _support.http("GET", url)
    assert result.status == 0 and result.error.startswith("not sent:")


def test_loopback_and_metadata_addresses_are_refused_without_the_allow_setting(server, settings):
    settings.OPGRADE_URL_ALLOW_NETWORKS = ()
    for url in (server, "http://169.254.169.254/latest/meta-data/", "http://[::1]:80/", "http://0.0.0.0:80/"):
        result = _support.http("GET", f"{url}/x", timeout_s=2)
        assert result.status == 0 and "not sent" in result.error, url
    assert _Handler.seen == []


def test_a_name_that_resolves_to_an_allowed_address_but_connects_to_loopback_is_refused(server, settings,
                                                                                        monkeypatch):
    """DNS rebinding: the check before connecting sees a public address; the connection lands on
    loopback. The peer address actually connected is checked too, and nothing is sent."""
    settings.OPGRADE_URL_ALLOW_NETWORKS = ()
    monkeypatch.setattr(egress, "resolve", lambda host, port: ["203.0.113.7"])
    port = server.rsplit(":", 1)[1]
    result = _support.http("GET", f"http://localhost:{port}/x", auth=basic(f"http://localhost:{port}"), timeout_s=2)
    assert result.status == 0 and "connected address refused" in result.error
    assert _Handler.seen == []
