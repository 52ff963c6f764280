"""Provider profiles: the knobs that make a testbed a good or a bad operator.

A profile is a YAML file in ``testbed/profiles/`` (or any path). It may say
``extends: OTHER`` to start from another profile and change a few knobs. Every knob
lives in ``exemplary.yaml`` with its default, so the schema is that file: a profile
or a ``--set section.knob=value`` override can only name a knob that exists there and
must give a value of the same type. Knobs are independent: flipping one changes one
behaviour of the testbed (see testbed/README.md for what each does).

Pure: reads YAML files, no processes, no clock.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from testbed.errors import TestbedError
from testbed.serving import validate as serving_validate

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
BASE_PROFILE = "exemplary"
REMEDIATION_POLICIES = ("replace", "drain", "never")


def profile_names() -> list[str]:
    """Names of the bundled profiles."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def _profile_path(profile: str) -> Path:
    if "/" in profile or profile.endswith((".yaml", ".yml")):
        path = Path(profile)
    else:
        path = PROFILE_DIR / f"{profile}.yaml"
    if not path.is_file():
        raise TestbedError(
            f"unknown profile {profile!r}: no file {path} (bundled: {', '.join(profile_names())})"
        )
    return path


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise TestbedError(f"profile {path}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TestbedError(f"profile {path}: top level must be a mapping")
    return data


def _merge(base: dict[str, Any], over: dict[str, Any], schema: dict[str, Any], where: str) -> None:
    for key, value in over.items():
        if key not in schema:
            raise TestbedError(f"{where}: unknown knob {key!r} (known: {', '.join(sorted(schema))})")
        if isinstance(schema[key], dict):
            if not isinstance(value, dict):
                raise TestbedError(f"{where}: {key} must be a mapping")
            _merge(base[key], value, schema[key], f"{where}.{key}")
        else:
            base[key] = _coerce(value, schema[key], f"{where}.{key}")


def _coerce(value: Any, like: Any, where: str) -> Any:
    """Return ``value`` as the type of the default ``like``, or raise."""
    if isinstance(like, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "on", "off"):
            return value.lower() in ("true", "yes", "on")
        raise TestbedError(f"{where}: expected true/false, got {value!r}")
    if isinstance(like, (int, float)):
        if isinstance(value, bool):
            raise TestbedError(f"{where}: expected a number, got {value!r}")
        try:
            number: int | float = float(value)
        except (TypeError, ValueError) as exc:
            raise TestbedError(f"{where}: expected a number, got {value!r}") from exc
        if number.is_integer():
            number = int(number)
        if number < 0:
            raise TestbedError(f"{where}: must not be negative, got {value!r}")
        return number
    if isinstance(like, str):
        return str(value)
    raise TestbedError(f"{where}: unsupported knob type")


def _load_raw(profile: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    path = _profile_path(profile)
    if str(path) in seen:
        raise TestbedError(f"profile {profile!r}: extends loop")
    data = _read(path)
    parent = data.pop("extends", None)
    if parent is None:
        if path.stem != BASE_PROFILE or path.parent != PROFILE_DIR:
            parent = BASE_PROFILE
        else:
            return data
    base = _load_raw(str(parent), (*seen, str(path)))
    _merge(base, data, _schema(), f"profile {profile}")
    return base


def _schema() -> dict[str, Any]:
    return _read(PROFILE_DIR / f"{BASE_PROFILE}.yaml")


def parse_set(items: list[str]) -> dict[str, Any]:
    """Turn ``["slurm.private_data=false", ...]`` into a nested override mapping."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise TestbedError(f"--set {item!r}: expected section.knob=value")
        dotted, value = item.split("=", 1)
        parts = dotted.strip().split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value.strip()  # typed by the knob's default in _coerce
    return out


def profile_resolve(*, profile: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the full knob mapping of ``profile`` with ``overrides`` applied, validated."""
    knobs = _load_raw(profile)
    schema = _schema()
    full = copy.deepcopy(schema)
    _merge(full, knobs, schema, f"profile {profile}")
    if overrides:
        _merge(full, overrides, schema, "override")
    _validate(full)
    full["name"] = Path(profile).stem
    return full


def knob_differences(knobs: dict[str, Any]) -> list[str]:
    """``section.knob=value`` for each knob that differs from the bundled profile it names."""
    try:
        base = profile_resolve(profile=knobs["name"])
    except TestbedError:
        return []
    return [
        f"{section}.{key}={value}"
        for section, values in sorted(knobs.items())
        if isinstance(values, dict)
        for key, value in sorted(values.items())
        if base.get(section, {}).get(key) != value
    ]


def _validate(knobs: dict[str, Any]) -> None:
    if knobs["remediation"]["policy"] not in REMEDIATION_POLICIES:
        raise TestbedError(
            f"remediation.policy must be one of {REMEDIATION_POLICIES}, got {knobs['remediation']['policy']!r}"
        )
    if not re.fullmatch(r"0?[0-7]{3}", str(knobs["homes"]["mode"])):
        raise TestbedError(
            f'homes.mode must be an octal mode like "0700" (quoted in YAML), got {knobs["homes"]["mode"]!r}'
        )
    nodes = knobs["nodes"]
    if not 1 <= nodes["count"] <= nodes["pool_size"] <= 60:
        raise TestbedError("nodes: need 1 <= count <= pool_size <= 60")
    if knobs["slurm"]["slurmd_timeout_s"] < 3:
        raise TestbedError("slurm.slurmd_timeout_s must be at least 3")
    if not 1 <= knobs["bmc"]["port"] <= 65535:
        raise TestbedError("bmc.port must be a TCP port")
    if not re.fullmatch(r"([0-9]+(y|w|d|h|m|s|ms))+", str(knobs["metrics"]["retention"])):
        raise TestbedError(
            f"metrics.retention must be a Prometheus duration like 30d or 12h, got {knobs['metrics']['retention']!r}"
        )
    if not 1 <= knobs["metrics"]["scrape_interval_s"] <= 300:
        raise TestbedError("metrics.scrape_interval_s must be between 1 and 300")
    if knobs["logs"]["ingest_delay_s"] > 600:
        raise TestbedError("logs.ingest_delay_s must be at most 600")
    serving_validate(knobs)
