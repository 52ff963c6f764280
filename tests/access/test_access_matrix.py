"""The access matrix: every route and admin page, for every role, against provider B's objects.

Routes are enumerated from the URL resolver (so DRF router routes and format-suffix
variants included), admin pages from the admin site's registry. Each must have a
declared entry in tests/access/matrix.py; a missing one fails with the exact key to add.
For each role (anonymous, analyst, reviewer, publisher, admin, provider-of-A) the test
checks the status against the declaration, then checks the body: provider B's private
markers, reviewer identities and customer identities/comments never reach the provider
or anonymous roles, and a list a provider user gets holds only their own provider's rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from reviews.models import AuditEvent
from tests.access.matrix import ACCESS, ADMIN_ACCESS, ANON, PROVIDER, REVIEWER, Entry
from tests.reviews.world import B_SECRET, RAW_ORG, ROLES, SECRET_CIPHERTEXT, World

DENIED = {401, 403, 404}
# Statuses that show a request got past the access checks: success, redirect, or the
# view's own refusal of an empty or wrongly typed body (400/405/409/415).
PASSED = {200, 201, 202, 204, 301, 302, 303, 400, 405, 409, 415}


@dataclass(frozen=True)
class Route:
    key: str
    raw: str
    formatted: bool
    methods: frozenset[str]  # HTTP methods the view implements (empty when unknown)
    view: str


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, prefix + str(p.pattern))
        else:
            yield prefix + str(p.pattern), p


def normalise(raw: str) -> tuple[str, bool]:
    """Route text -> matrix key; True when it is a DRF format-suffix variant."""
    formatted = "(?P<format>" in raw or "<drf_format_suffix:format>" in raw
    key = raw.replace("^", "").replace("$", "")
    key = re.sub(r"\\\.\(\?P<format>\[a-z0-9\]\+\)/\?", "/", key)
    key = key.replace("<drf_format_suffix:format>", "")
    key = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", key)
    key = re.sub(r"<\w+:(\w+)>", r"<\1>", key)
    return key.replace("\\", ""), formatted


def _methods(pattern: URLPattern) -> tuple[frozenset[str], str]:
    callback = pattern.callback
    actions = getattr(callback, "actions", None)
    cls = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if actions:
        return frozenset(m.upper() for m in actions), cls.__name__
    if cls is not None:
        names = [m for m in cls.http_method_names if m not in {"options", "head"} and hasattr(cls, m)]
        return frozenset(m.upper() for m in names), cls.__name__
    return frozenset(), getattr(callback, "__name__", repr(callback))


def routes() -> list[Route]:
    found: dict[tuple[str, bool], Route] = {}
    for raw, pattern in _walk(get_resolver().url_patterns):
        # The admin site's own pages have their table (ADMIN_ACCESS); pages mounted below
        # admin/ by an app (the cycle workbench) are routes like any other.
        if (raw.startswith("admin/") and not raw.startswith("admin/workbench/")) or raw.startswith("static/"):
            continue
        key, formatted = normalise(raw)
        methods, view = _methods(pattern)
        found.setdefault((key, formatted), Route(key, raw, formatted, methods, view))
    return sorted(found.values(), key=lambda r: (r.key, r.formatted))


ROUTES = routes()


def _missing_entry_message(route: Route) -> str:
    return (
        f"route {route.key!r} (view {route.view}, methods {sorted(route.methods) or '?'}) has no entry in "
        f"tests/access/matrix.py ACCESS. Add: {route.key!r}: Entry(methods={{...}}, obj=...) declaring which "
        "roles may use each method."
    )


def test_every_route_and_admin_page_has_a_declared_entry():
    missing = [_missing_entry_message(r) for r in ROUTES if r.key not in ACCESS and not r.formatted]
    for route in ROUTES:
        entry = ACCESS.get(route.key)
        if entry is not None and not route.formatted:
            undeclared = route.methods - set(entry.methods)
            if undeclared:
                missing.append(f"route {route.key!r}: method(s) {sorted(undeclared)} have no roles declared")
    for model in admin.site._registry:
        label = f"{model._meta.app_label}.{model._meta.model_name}"
        if label not in ADMIN_ACCESS:
            missing.append(f"admin model {label!r} has no entry in tests/access/matrix.py ADMIN_ACCESS")
    assert not missing, "\n".join(missing)


def _login(client: Client, world: World, role: str) -> None:
    user = world.user_for(role)
    if user is not None:
        client.force_login(user)


def _object(world: World, name: str) -> Any:
    if name == "b":
        return world.b
    if name in {"cycle", "cycle_b_only"}:
        return getattr(world, name)
    if name == "rubric_version":
        return world.cycle.rubric_version
    if name == "criterion":
        return world.criterion
    if name == "audit_event":
        return AuditEvent.objects.order_by("pk").first()
    return world.objects[name]


def _url(route: Route, entry: Entry, world: World) -> str:
    url = "/" + route.key
    obj = _object(world, entry.obj) if entry.obj else None
    for name in re.findall(r"<(\w+)>", route.key):
        if name in entry.kwargs:
            value = entry.kwargs[name]
            if value == "__rubric_version__":
                value = world.cycle.rubric_version.version
        elif name == "pk":
            value = obj.pk
        elif name in {"slug", "cycle_slug"}:
            value = obj.slug
        else:
            raise AssertionError(f"route {route.key!r}: declare kwargs={{{name!r}: ...}} in its matrix entry")
        url = url.replace(f"<{name}>", str(value), 1)
    if route.formatted:
        url = url + ".json" if route.raw.endswith("<drf_format_suffix:format>") else url.rstrip("/") + ".json"
    return url


def _request(client: Client, method: str, url: str) -> Any:
    if method == "GET":
        return client.get(url)
    if url.startswith("/api/"):
        return client.generic(method, url, data=b"{}", content_type="application/json")
    return client.generic(method, url, data=b"", content_type="application/x-www-form-urlencoded")


def _is_denied(response: Any) -> bool:
    if response.status_code in DENIED:
        return True
    return response.status_code == 302 and "login" in response.get("Location", "")


def _body(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


# What only Django's technical pages (DEBUG on: the 500 traceback page, its text version for
# non-HTML clients, the 404 page listing the URLconf, the CSRF failure help) print.
_DEBUG_PAGE = re.compile(
    r"you have (?:<code>)?DEBUG\s*=\s*True|Traceback \(most recent call last\)|id=\"traceback\"|id=\"requestinfo\"|"
    r"DJANGO_SETTINGS_MODULE|Using the URLconf defined in",
)


def debug_page(body: str) -> bool:
    """Whether this body is (or quotes) one of Django's debug pages: a traceback, settings, URLconf."""
    return bool(_DEBUG_PAGE.search(body))


def leaks(world: World, role: str, body: str) -> list[str]:
    """What in this body the role must never see."""
    found = []
    if debug_page(body):
        found.append("Django's debug page (traceback, settings or URLconf)")
    if RAW_ORG in body:
        found.append("a raw respondent organisation")
    if SECRET_CIPHERTEXT in body:
        found.append("stored credentials")
    token = world.objects.get("b_api_token")
    if token is not None and (world.objects["b_api_token_clear"] in body or token.digest in body):
        found.append("an API token or its digest")
    if role in {ANON, PROVIDER} and B_SECRET in body:
        found.append("provider B's private data")
    if role == REVIEWER and ("A-OWN review notes" in body or "A-OWN quote" in body):
        # rev1 has not submitted alpha's review: rev2's review of it is still blind to rev1
        found.append("a blind peer review")
    if role == PROVIDER:
        for username in ("rev1", "rev2", "rev3"):
            if re.search(rf"\b{username}\b", body):
                found.append(f"reviewer identity {username}")
        for text in ("A-OWN feedback comment", "A-OWN interview notes"):
            if text in body:
                found.append("a customer's comment")
        for response in world.objects["b_feedback_import"].rows.all():
            if response.respondent_org_hash in body:
                found.append("a customer's identity (hash)")
    return found


def _foreign_items(body: str) -> list[str]:
    """Providers other than A named by items of a JSON list response."""
    try:
        data = json.loads(body)
    except ValueError:
        return []
    items = data.get("results", []) if isinstance(data, dict) else data if isinstance(data, list) else []
    return [str(i.get("provider")) for i in items if isinstance(i, dict) and i.get("provider") not in (None, "alpha")]


def _route_param(route: Route) -> Any:
    entry = ACCESS.get(route.key)
    marks = []
    if entry is not None and entry.format_defect and route.formatted:
        marks.append(pytest.mark.xfail(reason=f"{route.key} (.json): {entry.format_defect}", strict=False))
    return pytest.param(route, marks=marks, id=route.key + (".json" if route.formatted else ""))


@pytest.mark.django_db
@pytest.mark.parametrize("route", [_route_param(r) for r in ROUTES])
def test_route_access_for_every_role(route: Route, world: World):
    entry = ACCESS.get(route.key)
    assert entry is not None, _missing_entry_message(route)
    methods = sorted(route.methods or entry.methods)
    if route.formatted:  # same view as the base route: one safe method is enough
        methods = [m for m in methods if m == "GET"] or methods[:1]
    problems: list[str] = []
    for role in ROLES:
        for method in methods:
            client = Client()
            _login(client, world, role)
            allowed = role in entry.methods.get(method, frozenset())
            hidden = bool(entry.obj) and (
                role in entry.hidden_from or (role == PROVIDER and entry.provider_owned)
            )
            response = _request(client, method, _url(route, entry, world))
            status, where = response.status_code, f"{method} {route.key} as {role}"
            if not allowed or hidden:
                if not _is_denied(response) and status != 405:
                    problems.append(f"{where}: expected 401/403/404 (or login redirect), got {status}")
            elif status in {401, 403, 404} or status >= 500 or (_is_denied(response) and not entry.public):
                problems.append(f"{where}: expected access, got {status}")
            elif status not in PASSED:
                problems.append(f"{where}: unexpected {status}")
            body = _body(response)
            problems.extend(f"{where}: leaks {leak}" for leak in leaks(world, role, body))
            if role == PROVIDER and status == 200:
                foreign = _foreign_items(body)
                if foreign:
                    problems.append(f"{where}: lists other providers' rows: {sorted(set(foreign))}")
    assert not problems, "\n".join(problems)


ADMIN_MODELS = sorted(admin.site._registry, key=lambda m: m._meta.label_lower)


def _admin_object(world: World, model: Any) -> Any:
    label = model._meta.label_lower
    if label == "reviews.reviewassignment":
        return world.objects["b_assignment_other"]
    if label == "reviews.conflictofinterest":
        return world.objects["b_conflict"]
    return model._default_manager.order_by("-pk").first()


@pytest.mark.django_db
@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m._meta.label_lower)
def test_admin_pages_for_every_role(model: Any, world: World):
    label = model._meta.label_lower
    entry = ADMIN_ACCESS.get(label)
    assert entry is not None, f"admin model {label!r} has no entry in tests/access/matrix.py ADMIN_ACCESS"
    base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    obj = _admin_object(world, model)
    problems: list[str] = []
    for role in ROLES:
        client = Client()
        _login(client, world, role)
        pages = [("changelist", base, role in entry.view)]
        if obj is not None:
            pages.append(("change page", f"{base}{obj.pk}/change/",
                          role in entry.view and role not in entry.own_rows_only))
        for page, url, allowed in pages:
            response = client.get(url)
            where = f"admin {label} {page} as {role}"
            if allowed and response.status_code != 200:
                problems.append(f"{where}: expected 200, got {response.status_code}")
            if not allowed and response.status_code == 200:
                problems.append(f"{where}: expected refusal, got 200")
            problems.extend(f"{where}: leaks {leak}" for leak in leaks(world, role, _body(response)))
    assert not problems, "\n".join(problems)


def matrix_size() -> dict[str, int]:
    """Routes x roles, as quoted in the closing note (`python -m tests.access.size`)."""
    api = len(ROUTES)
    return {"routes": api, "admin_models": len(ADMIN_MODELS), "roles": len(ROLES),
            "route_cells": api * len(ROLES), "admin_cells": len(ADMIN_MODELS) * len(ROLES)}


def test_matrix_size_is_reported(capsys: Any):
    size = matrix_size()
    assert size["routes"] > 40 and size["roles"] == 6
    with capsys.disabled():
        print(f"\naccess matrix: {size}")
