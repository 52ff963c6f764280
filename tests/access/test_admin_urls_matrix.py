"""Every URL the admin registers, for every role, against another user's / provider B's object.

The page-level matrix (test_access_matrix.py) opens each model's changelist and change page.
This one walks every URL pattern each ModelAdmin registers (`get_urls()`: add, change,
delete, Django's history, django-simple-history's history list and version pages, custom
pages such as rubric import/clone/diff, report correct/withdraw, host-key pinning) plus the
site's autocomplete endpoint, with GET and POST, and checks the rules the change page obeys:

- a role that may not open the model's changelist (ADMIN_ACCESS.view) is refused everywhere;
- a role that sees only its own rows (ADMIN_ACCESS.own_rows_only) is refused on every page
  of another user's object;
- no version page of the history ever writes (a "Revert" POST is refused for every role);
- a POST that the model admin's own permissions do not allow is refused, and the object's
  row is the same afterwards;
- no response carries what the role must never see (tests/access/test_access_matrix.leaks).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import AnonymousUser
from django.forms.models import model_to_dict
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver

from tests.access.matrix import ADMIN_ACCESS
from tests.access.test_access_matrix import ADMIN_MODELS, _admin_object, _body, leaks
from tests.reviews.world import World

DENIED = {401, 403, 404}
PROBE_MARK = "MATRIX-EDIT"


def _patterns(model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
    """(route text, url name) of every pattern the model admin registers."""
    found: list[tuple[str, str]] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                found.append((prefix + str(p.pattern), p.name or ""))

    walk(model_admin.get_urls(), "")
    return found


def _fill(route: str, obj: Any, version_id: int | None) -> str | None:
    """Route text -> a concrete URL path below the model's admin base, or None if it needs
    an object (or a history version) this world lacks."""
    text = route.removeprefix("^").removesuffix("$")
    if text == "<path:object_id>/":
        return None  # Django's legacy redirect to change/
    if "<" not in text and "(" not in text:
        return text
    if obj is None:
        return None
    if text.count("([^/]+)") == 2:  # simple_history's version page: ^([^/]+)/history/([^/]+)/$
        if version_id is None:
            return None
        return text.replace("([^/]+)", str(obj.pk), 1).replace("([^/]+)", str(version_id), 1)
    return re.sub(r"<(?:\w+:)?\w+>|\(\[\^/\]\+\)", str(obj.pk), text)


def _version_id(obj: Any) -> int | None:
    history = getattr(obj, "history", None) if obj is not None else None
    if history is None:
        return None
    record = history.order_by("-history_id").first()
    return record.history_id if record is not None else None


def _row(obj: Any) -> dict[str, Any] | None:
    if obj is None:
        return None
    row = type(obj)._default_manager.filter(pk=obj.pk).values().first()
    return row


def _post_data(obj: Any, world: World) -> dict[str, Any]:
    """The attack body: the object's own fields, text edited, provider moved to A."""
    if obj is None:
        return {"_save": "Save"}
    data: dict[str, Any] = {}
    for key, value in model_to_dict(obj).items():
        if value is None or isinstance(value, (list, dict)):
            continue
        data[key] = f"{value} {PROBE_MARK}" if isinstance(value, str) else getattr(value, "pk", value)
    if "provider" in data:
        data["provider"] = world.a.pk
    data["_save"] = "Revert"
    data["post"] = "yes"  # delete confirmation
    return data


def _is_refused(response: Any, admin_base: str) -> bool:
    if response.status_code in DENIED:
        return True
    if response.status_code == 302:
        location = response.get("Location", "")
        # login redirect, or the admin's "does not exist / not yours" redirect to the index
        return "login" in location or location.rstrip("/") in {"/admin", ""}
    return False


def _user_request(user: Any) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = user if user is not None else AnonymousUser()
    return request


def _may_post(model_admin: admin.ModelAdmin, name: str, user: Any, obj: Any) -> bool:
    """Whether the model admin's own permissions allow this role a write on this page."""
    if user is None or not user.is_staff:
        return False
    request = _user_request(user)
    if name.endswith("_simple_history"):
        return False  # versions are read-only for everyone
    if name.endswith("_delete"):
        return model_admin.has_delete_permission(request, obj)
    if name.endswith("_add"):
        return model_admin.has_add_permission(request)
    if name.endswith("_changelist"):
        return model_admin.has_view_or_change_permission(request)
    if name.endswith("_history"):
        return False  # the history list takes no POST that writes
    return model_admin.has_change_permission(request, obj) or model_admin.has_add_permission(request)


@pytest.mark.django_db
@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m._meta.label_lower)
def test_every_admin_url_obeys_the_change_page_rules(model: Any, world: World):
    label = model._meta.label_lower
    entry = ADMIN_ACCESS.get(label)
    assert entry is not None, f"admin model {label!r} has no entry in tests/access/matrix.py ADMIN_ACCESS"
    model_admin = admin.site._registry[model]
    base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    obj = _admin_object(world, model)
    version_id = _version_id(obj)
    problems: list[str] = []
    for route, name in _patterns(model_admin):
        tail = _fill(route, obj, version_id)
        if tail is None:
            continue
        takes_object = obj is not None and str(obj.pk) in tail.split("/")
        if name.endswith("_pin"):
            continue  # fetches host keys over SSH; checked in tests/probes (no object here either)
        for role in ("anonymous", "analyst", "reviewer", "publisher", "admin", "provider"):
            user = world.user_for(role)
            visible = role in entry.view and not (takes_object and role in entry.own_rows_only)
            for method in ("GET", "POST"):
                if method == "POST" and name.endswith("_delete") and _may_post(model_admin, name, user, obj):
                    continue  # a real delete by a role allowed to delete is not an access question
                client = Client()
                if user is not None:
                    client.force_login(user)
                before = _row(obj)
                url = base + tail
                response = client.get(url) if method == "GET" else client.post(url, _post_data(obj, world))
                where = f"{method} {url} ({name or route}) as {role}"
                refused = _is_refused(response, base)
                if not visible and not refused:
                    problems.append(f"{where}: expected refusal, got {response.status_code}")
                if response.status_code >= 500:
                    problems.append(f"{where}: server error {response.status_code}")
                if method == "POST" and not (visible and _may_post(model_admin, name, user, obj)):
                    if not refused and response.status_code != 200:
                        problems.append(f"{where}: a write it may not make answered {response.status_code}")
                    if before is not None and _row(obj) != before:
                        problems.append(f"{where}: changed the object it may not change")
                if name.endswith("_simple_history") and method == "POST" and not refused:
                    problems.append(f"{where}: a revert went through ({response.status_code})")
                problems.extend(f"{where}: leaks {leak}" for leak in leaks(world, role, _body(response)))
    assert not problems, "\n".join(problems)


def _autocomplete_fields() -> list[tuple[Any, str]]:
    return [(model, field) for model, model_admin in admin.site._registry.items()
            for field in getattr(model_admin, "autocomplete_fields", ())]


@pytest.mark.django_db
@pytest.mark.parametrize(("model", "field"), _autocomplete_fields(),
                         ids=lambda v: v if isinstance(v, str) else v._meta.label_lower)
def test_the_autocomplete_endpoint_obeys_the_related_models_view_permission(model: Any, field: str, world: World):
    related = model._meta.get_field(field).related_model
    related_entry = ADMIN_ACCESS[related._meta.label_lower]
    source_entry = ADMIN_ACCESS[model._meta.label_lower]
    url = (f"/admin/autocomplete/?app_label={model._meta.app_label}&model_name={model._meta.model_name}"
           f"&field_name={field}&term=")
    problems = []
    for role in ("anonymous", "analyst", "reviewer", "publisher", "admin", "provider"):
        client = Client()
        user = world.user_for(role)
        if user is not None:
            client.force_login(user)
        response = client.get(url)
        allowed = role in related_entry.view and role in source_entry.view
        if not allowed and not _is_refused(response, "/admin/"):
            problems.append(f"autocomplete {model._meta.label_lower}.{field} as {role}: got {response.status_code}")
        problems.extend(f"autocomplete as {role}: leaks {leak}" for leak in leaks(world, role, _body(response)))
    assert not problems, "\n".join(problems)
