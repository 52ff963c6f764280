"""Typed readers for settings that come from the environment.

Every reader fails loudly with ImproperlyConfigured naming the variable, so a typo in a
deployment's environment stops the process at start instead of surfacing as odd
behaviour later.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0/true/false/yes/no/on/off, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated CIDR networks (``10.200.0.0/16,127.0.0.0/8``); empty or unset: none."""
    out = []
    for item in env_list(name, []):
        try:
            out.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must be comma-separated networks in CIDR form (e.g. 10.200.0.0/16), got {item!r}"
            ) from None
    return tuple(out)


def database_from_url(name: str, url: str, *, base_dir: Path) -> dict[str, Any]:
    """Turn `sqlite:///relative/or//absolute.sqlite3` or `postgres://user:pw@host:port/db`
    into a Django DATABASES entry (parsed by dj-database-url). Anything else is a
    configuration error naming `name`."""
    scheme = urlsplit(url).scheme
    if scheme not in {"sqlite", "postgres", "postgresql", "pgsql"}:
        raise ImproperlyConfigured(f"{name} must start with sqlite:/// or postgres://, got scheme {scheme!r}")
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
    except ValueError as exc:  # dj_database_url.ParseError: e.g. a port that is not a number
        raise ImproperlyConfigured(f"{name}: cannot parse {url!r} ({exc})") from None
    if scheme == "sqlite":
        if config["NAME"] in ("", ":memory:"):
            raise ImproperlyConfigured(f"{name}: a sqlite URL needs a file path, got {url!r}")
        # sqlite:///var/db.sqlite3 is relative to the project; sqlite:////abs/path is absolute.
        path = Path(config["NAME"])
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path if path.is_absolute() else base_dir / path)}
    if not config["NAME"]:
        raise ImproperlyConfigured(f"{name}: a PostgreSQL URL needs a database name, got {url!r}")
    config["PORT"] = str(config.get("PORT") or "")
    config.setdefault("OPTIONS", {})
    return config


def redis_url(name: str, default: str) -> str:
    url = os.environ.get(name, default)
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss", "unix"} or (parts.scheme != "unix" and not parts.hostname):
        raise ImproperlyConfigured(f"{name} must be a redis://host:port/db URL, got {url!r}")
    return url
