"""The default SQLite setup holds concurrent web writers: WAL, a busy timeout, immediate transactions.

A real gunicorn (two processes, eight threads each) serves a fresh SQLite file on a loopback port,
and 120 PATCH requests arrive at once from a bounded thread pool. Deferred transactions that read
and then write (the rubric's edit services lock the version row first) used to fail at once with
`database is locked` whenever another writer held the file; every one must now answer 2xx.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
REQUESTS = 120

SETUP = """
import json
from django.contrib.auth import get_user_model
from reviews.api_tokens import api_token_issue
from rubric.models import Criterion
from rubric.services import rubric_version_import

text = open("rubric/data/opgrade-2026.1.yaml").read()
version = rubric_version_import(text=text, filename="opgrade-2026.1.yaml").rubric_version
admin = get_user_model().objects.create_superuser("load-admin", "load@example.org", "x" * 16)
ids = list(Criterion.objects.filter(rubric_version=version).values_list("pk", flat=True))
print(json.dumps({"token": api_token_issue(user=admin, name="load", by=admin).token, "criteria": ids}))
"""


def _run(argv: list[str], env: dict[str, str]) -> str:
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture
def sqlite_server(tmp_path: Path):  # type: ignore[no-untyped-def]
    """gunicorn on a fresh, migrated SQLite file; yields (base URL, token, criterion ids)."""
    env = {
        **{k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "REDIS_URL"}},
        "OPGRADE_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'opgrade.sqlite3'}",
        "OPGRADE_VAR_DIR": str(tmp_path),
    }
    _run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], env)
    data = json.loads(_run([sys.executable, "manage.py", "shell", "-c", SETUP], env).strip().splitlines()[-1])
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
            "--workers", "2", "--threads", "8", "--timeout", "120",
        ],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).read()  # noqa: S310 (loopback)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)
        yield base, data["token"], data["criteria"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def _patch(base: str, token: str, criterion_id: int, n: int) -> tuple[int, str]:
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{base}/api/v1/criteria/{criterion_id}/",
        data=json.dumps({"description": f"concurrent edit {n}"}).encode(),
        method="PATCH",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (loopback)
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")[:300]


def test_120_concurrent_patches_on_the_default_sqlite_setup_all_succeed(sqlite_server) -> None:  # type: ignore[no-untyped-def]
    base, token, criteria = sqlite_server
    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(lambda n: _patch(base, token, criteria[n % 8], n), range(REQUESTS)))
    statuses = Counter(status for status, _ in results)
    failures = [body for status, body in results if not 200 <= status < 300]
    assert statuses == {200: REQUESTS}, (statuses, failures[:3])


def test_a_sqlite_connection_runs_in_wal_with_a_busy_timeout_and_immediate_transactions(
    tmp_path: Path,
) -> None:
    probe = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "with connection.cursor() as c:\n"
        "    print(c.execute('PRAGMA journal_mode').fetchone()[0], c.execute('PRAGMA busy_timeout').fetchone()[0],"
        " c.execute('PRAGMA synchronous').fetchone()[0], connection.transaction_mode)\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'opgrade.sqlite3'}",
    }
    journal, busy_ms, synchronous, mode = _run([sys.executable, "-c", probe], env).split()
    assert (journal, synchronous, mode) == ("wal", "1", "IMMEDIATE")  # synchronous 1 = NORMAL
    assert int(busy_ms) >= 5000
