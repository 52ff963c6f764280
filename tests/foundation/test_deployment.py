"""The documented deployment (README "Deployment", deploy/) is one that works as written.

The production environment file passes `manage.py check --deploy` with no warning once its secrets
are generated; the systemd units run the web server, named workers and exactly one beat from that
same file; the demo runs beat beside its worker, so dead workers' runs are swept there too.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _env_file(path: Path) -> dict[str, str]:
    pairs = (
        line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#")
    )
    return {key.strip(): value.strip() for key, value in pairs}


def _unit(name: str) -> dict[str, str]:
    """A unit's keys (continuation lines joined); a later key of the same name wins."""
    text = (DEPLOY / "systemd" / name).read_text().replace("\\\n", " ")
    keys = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            keys[key.strip()] = " ".join(value.split())
    return keys


def test_the_documented_production_environment_passes_the_deploy_check_with_no_warnings(
    tmp_path: Path,
) -> None:
    env = _env_file(DEPLOY / "opgrade.env.example")
    placeholders = {k for k, v in env.items() if v.startswith("replace-with-")}
    assert placeholders == {"SECRET_KEY", "OPGRADE_ENCRYPTION_KEYS", "OPGRADE_PSEUDONYM_KEY"}
    assert env["OPGRADE_DEBUG"] == "0" and env["DATABASE_URL"].startswith("postgres://")
    env |= {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "OPGRADE_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "OPGRADE_PSEUDONYM_KEY": secrets.token_urlsafe(40),
        "OPGRADE_VAR_DIR": str(tmp_path / "var"),  # the paths of this machine, not of the server
        "OPGRADE_LOG_FILE": str(tmp_path / "log" / "web.log"),
    }
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_units_run_web_named_workers_and_beat_from_one_environment_file() -> None:
    web, worker, beat = (
        _unit(n) for n in ("opgrade-web.service", "opgrade-worker@.service", "opgrade-beat.service")
    )
    assert {u["EnvironmentFile"] for u in (web, worker, beat)} == {"/etc/opgrade/opgrade.env"}
    assert re.search(r"/gunicorn config\.wsgi:application --bind 127\.0\.0\.1:\d+ ", web["ExecStart"])
    assert "/celery -A config worker -Q probes,default " in worker["ExecStart"]
    assert " -n %i@%H " in worker["ExecStart"]  # one name per instance and host: scale-out safe
    assert beat["ExecStart"].endswith("/celery -A config beat -l info")
    assert all(u["Restart"] == "always" and u["User"] == "opgrade" for u in (web, worker, beat))
    assert int(worker["TimeoutStopSec"]) >= 300  # warm shutdown lets running probes finish


def test_the_demo_runs_beat_beside_its_worker_and_logs_the_web_process_to_var_log() -> None:
    script = ROOT / "scripts" / "demo.sh"
    assert os.access(script, os.X_OK)  # `make demo` runs ./scripts/demo.sh
    demo = script.read_text()
    assert re.search(r"^\.venv/bin/celery -A config worker ", demo, re.M)
    assert re.search(r"^\.venv/bin/celery -A config beat ", demo, re.M)
    assert "worker_log=var/log/demo-worker.log" in demo
    # the web server (scripts/demo-web.sh, DEBUG off) logs Django and gunicorn to var/log/demo-web.log
    web = (ROOT / "scripts" / "demo-web.sh").read_text()
    assert "\n./scripts/demo-web.sh &\n" in demo and os.access(ROOT / "scripts" / "demo-web.sh", os.X_OK)
    assert "log_dir=${OPGRADE_DEMO_LOG_DIR:-var/log}" in web and 'OPGRADE_LOG_FILE="$log_dir/demo-web.log"' in web
