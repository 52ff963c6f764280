"""Benchmark of the public report endpoints under gunicorn, loaded with wrk
(run: `.venv/bin/python bench/report_bench.py`; install wrk with scripts/install-bench-report.sh).

In one run, on loopback, against one gunicorn server in production mode (DEBUG off,
WhiteNoise serving static files, PostgreSQL), it measures requests/s and p99 latency for:

* a static file (reports/report.css through WhiteNoise): the ceiling, what the server
  stack itself can do with no view code;
* the published report's JSON (/api/public/reports/<id>/): one indexed lookup of the
  report's hash and status, then cached bytes (the per-content-hash render cache);
* the HTML overview (/reports/<id>/): same path, cached rendered HTML;
* the authenticated API lists (/api/v1/<list>/, as a token client; ``--no-api-lists`` skips
  them): what a signed-in client gets, with roles, filters and pagination, over the small
  seeded data set (their query count does not grow with the page: tests/api/test_query_counts.py).

and prints each as a ratio of the static ceiling. The API throttles are lifted for the run
(one client address would be throttled within a second). Aims from the issue: >= 1000 req/s JSON
and >= 200 req/s HTML. The report is synthetic (a 12-provider, 24-criterion document),
seeded into its own database (default opgrade_reports_bench, recreated each run). wrk and
gunicorn share the machine's cores, so figures are a floor for a separate load generator.
Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(db_url: str, var_dir: str) -> dict[str, str]:
    from cryptography.fernet import Fernet

    return {
        **os.environ,
        "DATABASE_URL": db_url, "OPGRADE_DEBUG": "0", "OPGRADE_VAR_DIR": var_dir,
        "SECRET_KEY": "bench-only-" + "x" * 50, "OPGRADE_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "OPGRADE_PSEUDONYM_KEY": "bench-only", "SECURE_SSL_REDIRECT": "0", "ALLOWED_HOSTS": "127.0.0.1",
        "OPGRADE_LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "config.settings",
        # wrk is one client address: lift the throttles, or every list would measure its 429s.
        "OPGRADE_THROTTLE_ANON": "100000000/min", "OPGRADE_THROTTLE_USER": "100000000/min",
        "OPGRADE_THROTTLE_TOKEN": "100000000/min",
    }


# The authenticated API lists (the same set tests/api/test_bad_input.py pages through).
API_LISTS = (
    "rubric-versions", "criteria", "providers", "clusters", "cycles", "score-snapshots", "tier-assignments",
    "reports", "conflicts", "assignments", "reconciliations", "overrides", "feedback-imports", "interview-notes",
    "replies", "audit-events", "probe-runs", "findings", "tenant-accounts",
)


SEED = r'''
import datetime as dt, django
django.setup()
from django.contrib.auth.models import User
from providers.models import Cycle, Provider
from rubric.models import RubricVersion
from reports import context as ctx, services
areas = tuple(ctx.AreaDefinition(key=f"area-{a}", title=f"Area {a}", weight=1.0 + a) for a in range(4))
criteria = tuple(ctx.CriterionDefinition(key=f"c{j:02d}", title=f"Criterion {j}", area_key=f"area-{j % 4}",
                 weight=1.0 + j % 3, unit="s", evidence_kinds=("probe",)) for j in range(24))
rubric = ctx.RubricInput(name="bench", version="1", fingerprint="0" * 64, areas=areas, criteria=criteria)
rv = RubricVersion.objects.create(name="bench", version="1")
cycle = Cycle.objects.create(name="Bench cycle", slug="bench", rubric_version=rv,
                             period_start=dt.date(2026, 10, 1), period_end=dt.date(2026, 12, 31))
tiers = ["platinum", "gold", "gold", "silver", "silver", "silver", "bronze", "bronze", "underperforming",
         "gold", "silver", None]
providers = []
for i, tier in enumerate(tiers):
    Provider.objects.create(name=f"Provider {i}", slug=f"provider-{i}")
    s = 0.9 - i * 0.05
    providers.append(ctx.ProviderResult(
        slug=f"provider-{i}", name=f"Provider {i}", tier=tier, tier_probabilities={tier or "gold": 0.8},
        ci_low=s - 0.05, ci_high=s + 0.05, composite=s, coverage=0.9,
        area_scores={a.key: s for a in areas},
        criteria=tuple(ctx.CriterionResult(key=c.key, value=float(j), normalised=min(1.0, s + j / 100),
                       evidence_counts={"probe": 3}) for j, c in enumerate(criteria))))
doc = ctx.build_report_document(ctx.ReportInput(
    cycle_slug="bench", cycle_name="Bench cycle", period_start="2026-10-01", period_end="2026-12-31",
    rubric=rubric, engine_version="bench", seed=1, inputs_hash="1" * 64, snapshot_hash="2" * 64,
    providers=tuple(providers), methodology_text="Synthetic report for the benchmark."))
user = User.objects.create_superuser("bench", password=None)
report = services.report_draft_create(cycle=cycle, snapshot_document=doc)
services.report_fact_check_open(report=report)
services.report_publish(report=report, user=user)
from reviews.api_tokens import api_token_issue
print(report.pk, api_token_issue(user=user, name="bench", by=user).token)
'''


def _prepare(db_url: str, db_name: str, env: dict[str, str]) -> tuple[int, str]:
    subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", db_name], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", db_name], check=True)
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([PY, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    out = subprocess.run([PY, "-c", SEED], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    pk, token = out.stdout.strip().splitlines()[-1].split()
    return int(pk), token


def _wait(url: str, timeout: float = 60.0, headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 (loopback only)
            with urllib.request.urlopen(request, timeout=2) as response:  # noqa: S310 (loopback only)
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"gunicorn did not answer {url} within {timeout:.0f} s")


def _seconds(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]


def _wrk(url: str, *, duration: int, connections: int, threads: int, gzip: bool,
         extra_headers: dict[str, str] | None = None) -> dict[str, float]:
    headers = ["-H", "Accept-Encoding: gzip"] if gzip else []
    for name, value in (extra_headers or {}).items():
        headers += ["-H", f"{name}: {value}"]
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", *headers, url],
        capture_output=True, text=True, check=True, timeout=duration + 60,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = _seconds(re.search(r"99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    if errors or socket_errors:
        print(f"  warning: {url}: {errors.group(0) if errors else ''} {socket_errors.group(0) if socket_errors else ''}")
    return {"rps": rps, "p99_ms": p99 * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn workers")
    parser.add_argument("--worker-class", default="gthread", help="gunicorn worker class (gthread keeps connections alive)")
    parser.add_argument("--worker-threads", type=int, default=4)
    parser.add_argument("--database", default="opgrade_reports_bench")
    parser.add_argument("--no-api-lists", action="store_true", help="skip the authenticated API lists")
    parser.add_argument("--identity", action="store_true",
                        help="send no Accept-Encoding (uncompressed bodies); default asks for gzip like browsers")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed: run scripts/install-bench-report.sh (Debian package wrk)", file=sys.stderr)
        return 2

    db_url = f"postgres://postgres@127.0.0.1:5432/{args.database}"
    with tempfile.TemporaryDirectory(prefix="opgrade-report-bench-") as var_dir:
        env = _env(db_url, var_dir)
        pk, token = _prepare(db_url, args.database, env)
        auth = {"Authorization": f"Token {token}"}
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [GUNICORN, "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", str(args.workers),
             "--worker-class", args.worker_class, "--threads", str(args.worker_threads),
             "--log-level", "warning", "--backlog", "2048"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        try:
            targets = {
                "static file (ceiling)": f"{base}/static/reports/report.css",
                "report JSON (public API)": f"{base}/api/public/reports/{pk}/",
                "HTML overview": f"{base}/reports/{pk}/",
            }
            api = {} if args.no_api_lists else {f"API list {name}": f"{base}/api/v1/{name}/" for name in API_LISTS}
            for url in targets.values():
                _wait(url)  # also warms every worker's render cache a little
            for url in api.values():
                _wait(url, headers=auth)
            print(f"gunicorn {args.workers} {args.worker_class} workers x {args.worker_threads} threads, wrk {args.threads} threads x {args.connections} connections, "
                  f"{args.duration} s each, cores={os.cpu_count()}, report #{pk}, "
                  f"Accept-Encoding: {'identity' if args.identity else 'gzip'}")
            results = {
                name: _wrk(url, duration=args.duration, connections=args.connections, threads=args.threads,
                           gzip=not args.identity)
                for name, url in targets.items()
            }
            results.update({
                name: _wrk(url, duration=args.duration, connections=args.connections, threads=args.threads,
                           gzip=not args.identity, extra_headers=auth)
                for name, url in api.items()
            })
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)
        subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", args.database], check=False)

    ceiling = results["static file (ceiling)"]["rps"]
    aims = {"report JSON (public API)": 1000, "HTML overview": 200}
    print(f"{'endpoint':32} {'req/s':>9} {'p99 ms':>8} {'vs static':>10} {'aim':>12}")
    for name, r in results.items():
        aim = aims.get(name)
        verdict = "" if aim is None else (f">= {aim} " + ("met" if r["rps"] >= aim else "MISSED"))
        print(f"{name:32} {r['rps']:9.0f} {r['p99_ms']:8.1f} {r['rps'] / ceiling:9.2f}x {verdict:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
