"""The web process writes its errors to the log file OPGRADE_LOG_FILE names, not only to the terminal.

A real gunicorn serves a SQLite file that was never migrated, so a token-authenticated API request
fails with a 500 inside Django; the error and its traceback must land in the file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
# Well formed (reviews.tokens), so authentication looks it up in the missing table: a 500.
WELL_FORMED_TOKEN = "opg_0123456789ab_" + "x" * 43


def test_a_server_error_in_the_web_process_is_written_to_the_log_file(tmp_path: Path) -> None:
    log_file = tmp_path / "log" / "web.log"  # the directory does not exist yet
    env = {
        **{k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "REDIS_URL"}},
        "OPGRADE_DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unmigrated.sqlite3'}",
        "OPGRADE_VAR_DIR": str(tmp_path),
        "OPGRADE_LOG_FILE": str(log_file),
    }
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
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
        request = urllib.request.Request(  # noqa: S310 (loopback)
            f"{base}/api/v1/criteria/", headers={"Authorization": f"Token {WELL_FORMED_TOKEN}"}
        )
        try:
            urllib.request.urlopen(request, timeout=30)  # noqa: S310 (loopback)
            status = 200
        except urllib.error.HTTPError as exc:
            status = exc.code
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert status == 500
    text = log_file.read_text()
    assert "ERROR django.request Internal Server Error: /api/v1/criteria/" in text
    assert "Traceback" in text and "no such table" in text
