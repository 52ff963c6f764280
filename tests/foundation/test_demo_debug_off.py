"""The demo runs with DEBUG off, as production does (issue 24, item 6).

Its secrets are generated once into a file (mode 600) that every later run reuses; its web server
(scripts/demo-web.sh, the command scripts/demo.sh starts) serves the static files through
WhiteNoise, writes a server error's traceback to the web log and shows the visitor a plain page.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from cryptography.fernet import Fernet

from tests.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]


def _base_env(tmp_path: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "REDIS_URL"}},
        "OPGRADE_DEMO_SECRETS": str(tmp_path / "var" / "demo-secrets.env"),
        "OPGRADE_DEMO_LOG_DIR": str(tmp_path / "log"),
        "OPGRADE_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unmigrated.sqlite3'}",
        "OPGRADE_DEBUG": "1",  # what a user may have exported: the demo turns it off all the same
    }


def _demo_env(env: dict[str, str]) -> dict[str, str]:
    """The environment scripts/demo-env.sh leaves for the demo's processes."""
    out = subprocess.run(["bash", "-c", ". scripts/demo-env.sh && env -0"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 (loopback)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (loopback)
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def test_the_demo_generates_its_secrets_once_into_a_private_file_and_reuses_them(tmp_path: Path) -> None:
    env = _base_env(tmp_path)
    first = _demo_env(env)
    secrets_file = Path(env["OPGRADE_DEMO_SECRETS"])
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    assert first["OPGRADE_DEBUG"] == "0" and first["SECURE_SSL_REDIRECT"] == "0"
    Fernet(first["OPGRADE_ENCRYPTION_KEYS"])  # a valid key
    assert len(first["SECRET_KEY"]) >= 50 and len(first["OPGRADE_PSEUDONYM_KEY"]) >= 40
    secrets_file.chmod(0o644)  # a later run puts the mode back, and keeps the keys
    second = _demo_env(env)
    keys = ("SECRET_KEY", "OPGRADE_ENCRYPTION_KEYS", "OPGRADE_PSEUDONYM_KEY")
    assert [second[k] for k in keys] == [first[k] for k in keys]
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    other = _demo_env({**env, "OPGRADE_DEMO_SECRETS": str(tmp_path / "other.env")})
    assert other["SECRET_KEY"] != first["SECRET_KEY"]  # generated, not a constant


def test_demo_sh_sources_the_environment_and_starts_the_demo_web_server() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert "\n. scripts/demo-env.sh\n" in demo and "\n./scripts/demo-web.sh &\n" in demo
    assert "OPGRADE_DEBUG=" not in demo and "OPGRADE_DEBUG:-" not in demo
    # the environment is in place before anything imports the settings (migrate, the worker)
    assert demo.index(". scripts/demo-env.sh") < demo.index("manage.py migrate") < demo.index("celery -A config")


def test_the_demo_web_server_serves_static_files_and_a_plain_error_page_with_debug_off(tmp_path: Path) -> None:
    env = _base_env(tmp_path)
    demo_env = _demo_env(env)
    # The demo's collectstatic (WhiteNoise's manifest storage under DEBUG off), less the big
    # Swagger UI bundles this test does not need.
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "collectstatic", "--noinput", "-v0",
         "-i", "drf_spectacular_sidecar", "-i", "rest_framework"],
        cwd=ROOT, env=demo_env, check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    port = free_port()
    server = subprocess.Popen(
        ["./scripts/demo-web.sh"], cwd=ROOT, env={**env, "OPGRADE_DEMO_BIND": f"127.0.0.1:{port}"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).read()  # noqa: S310 (loopback)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the demo web server did not start"
                time.sleep(0.2)
        static = _get(f"{base}/static/admin/css/base.css")
        # A real bug inside Django: DRF's sign-in page names a static file this collectstatic left out,
        # and the manifest storage raises while rendering it.
        error = _get(f"{base}/api-auth/login/")
        # The database answers but was never migrated: a server error, a plain 500 (an outage, the
        # database not answering, is a 503: tests/integration/test_coordination_outages.py).
        unmigrated = _get(f"{base}/reports/")
        missing = _get(f"{base}/no-such-page/")
    finally:
        exited = server.poll()
        if exited is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    assert exited is None, f"the demo web server exited ({exited}) while serving"
    assert static[0] == 200 and static[1].startswith("text/css") and "body" in static[2]
    status, _, body = error
    assert status == 500
    assert "Server Error (500)" in body and len(body) < 2000
    for detail in ("Traceback", "ValueError", "manifest", "rest_framework", "DEBUG", "SECRET_KEY", "settings"):
        assert detail not in body
    assert missing[0] == 404 and "URLconf" not in missing[2]
    log = (tmp_path / "log" / "demo-web.log").read_text()
    assert "ERROR django.request Internal Server Error: /api-auth/login/" in log
    assert "Traceback" in log and "Missing staticfiles manifest entry" in log
    assert unmigrated[0] == 500 and "Server Error (500)" in unmigrated[2] and "no such table" not in unmigrated[2]
    assert "Internal Server Error: /reports/" in log and "no such table" in log
    assert "database unavailable for GET /reports/" not in log
    assert demo_env["SECRET_KEY"] not in log
