"""Settings come from the environment and fail loudly, naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int, env_networks, redis_url

ROOT = Path(__file__).resolve().parents[2]


def _settings_import(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Import the settings in a fresh interpreter with exactly `env` on top of a clean base."""
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    return subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60, check=False,
    )


def test_the_default_database_is_a_sqlite_file_in_var(tmp_path):
    config = database_from_url("DATABASE_URL", "sqlite:///var/opgrade.sqlite3", base_dir=tmp_path)
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == str(tmp_path / "var" / "opgrade.sqlite3")


def test_a_postgres_url_is_parsed_into_its_parts(tmp_path):
    config = database_from_url("DATABASE_URL", "postgres://postgres:pw@127.0.0.1:5432/opgrade", base_dir=tmp_path)
    assert (config["NAME"], config["USER"], config["PASSWORD"], config["HOST"], config["PORT"]) == (
        "opgrade", "postgres", "pw", "127.0.0.1", "5432",
    )


@pytest.mark.parametrize(
    "url", ["mysql://x/y", "postgres://host:notaport/db", "postgres://host:5432/", "sqlite:///"]
)
def test_a_bad_database_url_names_the_variable(url, tmp_path):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        database_from_url("DATABASE_URL", url, base_dir=tmp_path)


def test_a_bad_boolean_names_the_variable(monkeypatch):
    monkeypatch.setenv("OPGRADE_DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="OPGRADE_DEBUG"):
        env_bool("OPGRADE_DEBUG", True)


def test_a_bad_integer_names_the_variable(monkeypatch):
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", "soon")
    with pytest.raises(ImproperlyConfigured, match="CELERY_VISIBILITY_TIMEOUT"):
        env_int("CELERY_VISIBILITY_TIMEOUT", 10)


def test_a_bad_redis_url_names_the_variable(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "http://127.0.0.1:6379")
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        redis_url("REDIS_URL", "redis://127.0.0.1:6379/0")


def test_url_allow_networks_are_cidrs_and_a_bad_one_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPGRADE_URL_ALLOW_NETWORKS", raising=False)
    assert env_networks("OPGRADE_URL_ALLOW_NETWORKS") == ()  # production: no network allowed beyond the policy
    monkeypatch.setenv("OPGRADE_URL_ALLOW_NETWORKS", "127.0.0.0/8, 10.200.0.0/16,::1/128")
    assert [str(n) for n in env_networks("OPGRADE_URL_ALLOW_NETWORKS")] == ["127.0.0.0/8", "10.200.0.0/16", "::1/128"]
    monkeypatch.setenv("OPGRADE_URL_ALLOW_NETWORKS", "127.0.0.0/8,loopback")
    with pytest.raises(ImproperlyConfigured, match=r"OPGRADE_URL_ALLOW_NETWORKS.*'loopback'"):
        env_networks("OPGRADE_URL_ALLOW_NETWORKS")
    result = _settings_import({"OPGRADE_URL_ALLOW_NETWORKS": "10.0.0.0/33"})
    assert result.returncode != 0 and "OPGRADE_URL_ALLOW_NETWORKS" in result.stderr


def test_settings_load_with_no_environment_at_all():
    result = _settings_import({})
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("value", ["-1", "one", "1.5"])
def test_a_bad_proxy_count_stops_the_settings_naming_the_variable(value: str):
    result = _settings_import({"OPGRADE_NUM_PROXIES": value})
    assert result.returncode != 0
    assert "OPGRADE_NUM_PROXIES must be" in result.stderr


def test_the_proxy_count_defaults_to_none_trusted_and_reads_the_environment():
    code = "import config.settings as s; print(s.REST_FRAMEWORK['NUM_PROXIES'])"
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    for env, expected in (({}, "0"), ({"OPGRADE_NUM_PROXIES": "2"}, "2")):
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**base, **env}, capture_output=True,
                                text=True, timeout=60, check=False)
        assert result.stdout.strip() == expected, result.stderr


def test_production_refuses_to_start_without_a_secret_key():
    result = _settings_import({"OPGRADE_DEBUG": "0"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_refuses_to_start_without_encryption_keys():
    result = _settings_import({"OPGRADE_DEBUG": "0", "SECRET_KEY": "x" * 60})
    assert "OPGRADE_ENCRYPTION_KEYS must be set" in result.stderr


def test_a_malformed_encryption_key_is_refused_by_name():
    result = _settings_import({"OPGRADE_ENCRYPTION_KEYS": "not-a-fernet-key"})
    assert result.returncode != 0
    assert "OPGRADE_ENCRYPTION_KEYS entry 1 is not a valid Fernet key" in result.stderr


def test_production_settings_pass_the_deploy_check_with_no_warnings():
    env = {
        "OPGRADE_DEBUG": "0",
        "SECRET_KEY": "k3!x" + "".join(chr(97 + i % 26) + str(i % 10) for i in range(40)),
        "OPGRADE_ENCRYPTION_KEYS": "paCsoWzOvC18iJ5NrWj_wjCifIvVKLX7zxfsqtfrrgU=",
        "OPGRADE_PSEUDONYM_KEY": "p" * 40,
        "ALLOWED_HOSTS": "opgrade.example",
    }
    base = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_secrets_round_trip_and_rotate_across_keys(settings):
    from cryptography.fernet import Fernet

    from config.crypto import SecretDecryptionError, secret_decrypt, secret_encrypt, secret_rotate

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.OPGRADE_ENCRYPTION_KEYS = [old]
    token = secret_encrypt("ssh-private-key")
    assert "ssh-private-key" not in token
    settings.OPGRADE_ENCRYPTION_KEYS = [new, old]
    assert secret_decrypt(token) == "ssh-private-key"
    rotated = secret_rotate(token)
    settings.OPGRADE_ENCRYPTION_KEYS = [new]
    assert secret_decrypt(rotated) == "ssh-private-key"
    with pytest.raises(SecretDecryptionError):
        secret_decrypt(token)
