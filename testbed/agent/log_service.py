"""The tenants' log query service (Loki-like, on the controller's loopback, port 3100, reached
only through nginx)."""

from __future__ import annotations

import hmac
import time
from datetime import datetime
from urllib.parse import parse_qs, urlparse

from testbed.agent.jsonhttp import JsonHandler


class LogHandler(JsonHandler):
    """Loki-like log query: ``GET /logs/query?contains=TEXT&limit=N``.

    The tenant is the ``X-Scope-OrgID`` header, which nginx sets from the login. With
    ``logs.isolation`` on, a request must carry nginx's proxy secret and a known tenant
    (missing or unknown: refused), and only that tenant's file is read. With it off, the
    header is taken as given and a request without one gets every tenant's lines.
    With ``logs.ingest_delay_s`` a line is returned only that many seconds after rsyslog
    received it (by its ``timegenerated`` stamp): an indexing pipeline that lags behind.
    """

    def do_GET(self) -> None:
        agent = self.agent
        url = urlparse(self.path)
        if url.path.rstrip("/") != "/logs/query":
            return self.reply(404, {"error": "use /logs/query"})
        q = parse_qs(url.query)
        contains = (q.get("contains") or [""])[0]
        try:
            limit = max(1, min(1000, int((q.get("limit") or ["100"])[0])))
        except ValueError:
            return self.reply(400, {"error": "limit must be an integer"})
        users = [t["user"] for t in agent.state["tenants"]]
        tenant = self.headers.get("X-Scope-OrgID", "").strip()
        if agent.knobs["logs"]["isolation"]:
            secret = agent.state["proxy_secret"]
            if not hmac.compare_digest(self.headers.get("X-Testbed-Proxy", "").encode(), secret.encode()):
                return self.reply(403, {"error": "only reachable through the nginx proxy"})
            if tenant not in users:
                return self.reply(401, {"error": "missing or unknown tenant"})
            sources = [tenant]
        else:
            sources = [tenant] if tenant in users else users
        delay = float(agent.knobs["logs"]["ingest_delay_s"])
        cutoff = time.time() - delay
        lines: list[str] = []
        for user in sources:
            path = agent.lay.tenant_log_dir(user) / "messages.log"
            try:
                for line in path.read_text(errors="replace").splitlines():
                    if contains in line and (not delay or received_at(line) <= cutoff):
                        lines.append(line)
            except FileNotFoundError:
                continue
        return self.reply(200, {"tenant": tenant or None, "lines": lines[-limit:]})


def received_at(line: str) -> float:
    """When rsyslog received ``line`` (its first field, ``timegenerated`` in RFC 3339), as a Unix
    time; a line without a readable stamp counts as just received (so a lag hides it too)."""
    try:
        return datetime.fromisoformat(line.split(" ", 1)[0]).timestamp()
    except ValueError:
        return time.time()
