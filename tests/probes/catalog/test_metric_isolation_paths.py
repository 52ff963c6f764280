"""tenant_metric_isolation against a loopback stand-in for a tenant-aware metrics proxy: every path
tenant A asks is answered from A's own data, except what a test breaks. A path with no answer is an
error (never a pass); B's canary on the Pushgateway's read page or through query_range is a fail."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator

import pytest

from probes.catalog import probe_get
from probes.catalog.base import Outcome, ProbeContext, Requirement, Scope, Target, Tenant
from probes.egress import origin_of
from probes.transport import Credentials
from tests.listeners import allow_loopback_urls

pytestmark = pytest.mark.usefixtures("allow_loopback_urls")  # the stand-in proxy listens on loopback
__all__ = ["allow_loopback_urls"]


class Proxy(http.server.ThreadingHTTPServer):
    """/prom/* is the metrics API, /push/* the Pushgateway; the user comes from basic auth."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.groups: dict[str, list[str]] = {"user-a": [], "user-b": []}  # nonces pushed per tenant
        self.broken: set[str] = set()  # paths answering 502
        self.leak: set[str] = set()  # paths that answer from B's data, whoever asks


class Handler(http.server.BaseHTTPRequestHandler):
    server: Proxy

    def _user(self) -> str:
        raw = self.headers.get("Authorization", "").removeprefix("Basic ")
        return base64.b64decode(raw).decode().split(":", 1)[0] if raw else ""

    def _reply(self, status: int, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        if path in self.server.broken:
            return self._reply(502, "bad gateway")
        whose = "user-b" if path in self.server.leak else self._user()
        nonces = self.server.groups.get(whose, [])
        if path.startswith("/push/"):
            return self._reply(200, "".join(f'opgrade_canary{{nonce="{n}"}} 1\n' for n in nonces))
        series = [{"metric": {"__name__": "opgrade_canary", "nonce": n}, "value": [1, "1"]} for n in nonces]
        self._reply(200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": series}}))

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer()

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        nonce = urllib.parse.urlsplit(self.path).path.rsplit("/nonce/", 1)[-1]
        self.server.groups[self._user()].append(nonce)
        self._reply(200, "")

    def do_DELETE(self) -> None:
        self.server.groups[self._user()].clear()
        self._reply(202, "")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    server = Proxy()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()


def _run(proxy: Proxy):
    base = f"http://127.0.0.1:{proxy.server_port}"
    tenants = [Tenant(label=f"tenant-{x}", credentials=Credentials(username=f"user-{x}", password="pw"),
                      http_origins=frozenset({origin_of(base)}))
               for x in ("a", "b")]  # fmt: skip
    ctx = ProbeContext(provider="p", cluster="c", login=None, tenants=tenants,
                       capabilities={Requirement.TWO_TENANTS},
                       settings={"metrics_url": f"{base}/prom", "pushgateway_url": f"{base}/push",
                                 "tenant_metric_isolation.visible_timeout_s": 5})  # fmt: skip
    target = Target(kind=Scope.TENANT_PAIR, name="tenant-a->tenant-b", tenants=("tenant-a", "tenant-b"))
    (finding,) = probe_get("tenant_metric_isolation")().execute(ctx, target)
    return finding


def test_a_proxy_that_answers_every_path_from_the_askers_own_data_passes(proxy):
    finding = _run(proxy)
    assert finding.outcome is Outcome.PASS, finding.summary
    assert "/api/v1/query_range" not in finding.summary and len(finding.evidence["paths"]) == 13


def test_a_path_without_an_answer_is_an_error_never_a_pass(proxy):
    proxy.broken.add("/prom/api/v1/query_range")
    finding = _run(proxy)
    assert finding.outcome is Outcome.ERROR, finding.summary
    assert finding.evidence["unchecked"] == ["query_range nonce=~.+"]


@pytest.mark.parametrize(
    ("path", "name"),
    [("/prom/api/v1/query_range", "query_range nonce=~.+"), ("/push/metrics", "pushgateway metrics page")],
)
def test_b_canary_on_query_range_or_the_pushgateway_page_is_a_critical_fail(proxy, path, name):
    proxy.leak.add(path)
    finding = _run(proxy)
    assert finding.outcome is Outcome.FAIL and finding.critical, finding.summary
    assert [h["path"] for h in finding.evidence["hits"]] == [name]
