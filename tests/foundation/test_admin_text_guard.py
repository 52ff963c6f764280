"""The admin's forms refuse NUL and bidi controls like every other entry point (config/admin_text.py).

Before the guard, an analyst could store "Aurora\u202e" as a provider's name through the admin
(the API, the CSV/YAML importers and the portal all refused it), and a cluster's JSON settings
took the same character inside a string.
"""

from __future__ import annotations

import pytest
from django import forms
from django.contrib import admin
from django.test import Client
from django.urls import get_resolver

from config.access import Role
from config.admin_forms import wrappers_of
from config.admin_text import guarded_form
from providers.models import Cluster, Provider
from tests.factories import ClusterFactory, ProviderFactory
from tests.workbench.builders import user

pytestmark = pytest.mark.django_db

UNSAFE = ["Aurora\u202eevil", "Aurora\u2066x\u2069", "tab\u202a"]


def _admin_client() -> Client:
    c = Client()
    c.force_login(user("admin-text", Role.ADMIN))
    return c


def test_every_registered_admin_is_guarded():
    get_resolver().url_patterns  # noqa: B018 - the URLconf applies the guard once every admin is registered
    unguarded = [type(ma).__name__ for ma in admin.site._registry.values() if guarded_form not in wrappers_of(ma)]
    assert unguarded == []


@pytest.mark.parametrize("name", UNSAFE)
def test_a_provider_name_with_a_bidi_control_is_refused_and_nothing_is_written(name):
    c = _admin_client()
    before = Provider.objects.count()
    resp = c.post("/admin/providers/provider/add/", {
        "name": name, "slug": "evil", "website": "", "status": "active",
        "clusters-TOTAL_FORMS": "0", "clusters-INITIAL_FORMS": "0",
    })
    assert resp.status_code == 200, resp.status_code
    assert "bidirectional control character" in resp.content.decode()
    assert Provider.objects.count() == before


def test_a_change_with_a_bidi_control_leaves_the_row_as_it_was():
    provider = ProviderFactory(name="Boreal")
    c = _admin_client()
    resp = c.post(f"/admin/providers/provider/{provider.pk}/change/", {
        "name": "Boreal\u202e", "slug": provider.slug, "website": "", "status": "active",
        "clusters-TOTAL_FORMS": "0", "clusters-INITIAL_FORMS": "0",
    })
    assert resp.status_code == 200
    assert "bidirectional control character" in resp.content.decode()
    provider.refresh_from_db()
    assert provider.name == "Boreal"


def test_an_inline_row_with_a_bidi_control_is_refused():
    provider = ProviderFactory(name="Cirrus")
    c = _admin_client()
    resp = c.post(f"/admin/providers/provider/{provider.pk}/change/", {
        "name": "Cirrus", "slug": provider.slug, "website": "", "status": "active",
        "clusters-TOTAL_FORMS": "1", "clusters-INITIAL_FORMS": "0",
        "clusters-0-name": "c\u202e1", "clusters-0-region": "eu", "clusters-0-gpu_model": "H100",
        "clusters-0-gpu_count": "8", "clusters-0-orchestrator": "slurm",
    })
    assert resp.status_code == 200
    assert "bidirectional control character" in resp.content.decode()
    assert not Cluster.objects.filter(provider=provider).exists()


def test_good_text_with_right_to_left_marks_is_kept():
    c = _admin_client()
    resp = c.post("/admin/providers/provider/add/", {
        "name": "\u05d0\u05d1\u200f Hosting", "slug": "rtl", "website": "", "status": "active",
        "clusters-TOTAL_FORMS": "0", "clusters-INITIAL_FORMS": "0",
    })
    assert resp.status_code == 302, resp.content.decode()[:2000]
    assert Provider.objects.filter(slug="rtl").exists()


def test_the_guard_reads_strings_inside_json_values():
    class F(forms.Form):
        settings = forms.JSONField()

    form = guarded_form(F)(data={"settings": '{"metrics_url": "http://x/\u202e"}'})
    assert not form.is_valid()
    assert "metrics_url" in str(form.errors["settings"])
    guarded = guarded_form(F)
    assert guarded_form(guarded) is guarded  # wrapping twice adds nothing


def test_a_cluster_change_form_is_guarded():
    cluster = ClusterFactory()
    c = _admin_client()
    resp = c.get(f"/admin/providers/cluster/{cluster.pk}/change/")
    assert resp.status_code == 200
