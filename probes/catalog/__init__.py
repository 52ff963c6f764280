"""The probe catalog: one module per probe, each registering its Probe class here.

``probe_get("ssh_reachable")`` and ``probe_list()`` import every module of this package on first
use, so adding a probe is adding a module with a ``@register``-decorated class. Ids are unique;
registering a second class under the same id is an error (it would silently change what a stored
finding means).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from config.errors import BadInput
from probes.catalog.base import Probe

_REGISTRY: dict[str, type[Probe]] = {}
_loaded = False
_lock = threading.Lock()


class UnknownProbe(LookupError, BadInput):
    """No probe with this id is registered."""


def register[P: type[Probe]](cls: P) -> P:
    """Class decorator: add a probe to the catalog under its ``id``."""
    for attr in ("id", "version", "area", "question", "scope", "metric"):
        if not hasattr(cls, attr):
            raise TypeError(f"{cls.__name__} must declare {attr!r}")
    existing = _REGISTRY.get(cls.id)
    if existing is not None and existing is not cls:
        raise ValueError(f"probe id {cls.id!r} is already registered by {existing.__module__}")
    if cls.timeout_s <= 0:
        raise ValueError(f"{cls.id}: timeout_s must be positive")
    _REGISTRY[cls.id] = cls
    return cls


def _load_all() -> None:
    global _loaded
    with _lock:
        if _loaded:
            return
        for module in pkgutil.iter_modules(__path__):
            if module.name != "base" and not module.name.startswith("_"):
                importlib.import_module(f"{__name__}.{module.name}")
        _loaded = True


def probe_get(probe_id: str) -> type[Probe]:
    _load_all()
    try:
        return _REGISTRY[probe_id]
    except KeyError:
        raise UnknownProbe(f"unknown probe {probe_id!r}") from None


def probe_list() -> list[type[Probe]]:
    _load_all()
    return sorted(_REGISTRY.values(), key=lambda cls: cls.id)


def probe_choices() -> list[tuple[str, str]]:
    return [(cls.id, f"{cls.id} ({cls.area}): {cls.question}") for cls in probe_list()]


__all__ = ["Probe", "UnknownProbe", "probe_choices", "probe_get", "probe_list", "register"]
