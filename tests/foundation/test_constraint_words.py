"""Every database constraint an analyst can break in the admin is said in words (issue 15.4).

The walk: each CheckConstraint and UniqueConstraint of each model the admin edits has a
sentence in config.constraint_words (a new constraint without one fails here), and the admin's
forms, bound with a row that breaks a constraint, show that sentence and never the
constraint's name, and never let the row reach the database (which would answer a 500)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.db.models import CheckConstraint, UniqueConstraint
from django.test import Client, RequestFactory

import config.urls  # noqa: F401 - registers every admin and wraps its forms
from config.access import Role
from config.constraint_words import CONSTRAINT_WORDS, constraint_words
from providers.models import Cluster
from rubric.models import Area, Criterion, RubricVersion
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, ProviderFactory
from tests.workbench.builders import user


def _admin_constraints():
    for model in admin.site._registry:
        for constraint in model._meta.constraints:
            yield model, constraint


def test_every_constraint_of_every_admin_edited_model_has_words():
    missing, bad = [], []
    for model, constraint in _admin_constraints():
        assert isinstance(constraint, CheckConstraint | UniqueConstraint), constraint
        entry = CONSTRAINT_WORDS.get(constraint.name)
        if entry is None:
            missing.append(f"{model._meta.label}: {constraint.name}")
            continue
        field, words = entry
        names = {f.name for f in model._meta.get_fields()}
        if field and field not in names:
            bad.append(f"{constraint.name}: {field!r} is not a field of {model._meta.label}")
        if constraint.name in words or "_" in words.replace("e.g. ", "") or not words.endswith("."):
            bad.append(f"{constraint.name}: not a sentence in words: {words!r}")
    assert not missing, f"constraints without words in config/constraint_words.py: {missing}"
    assert not bad, bad
    assert len(list(_admin_constraints())) >= 60  # the walk really walked


def test_no_words_for_a_constraint_that_no_longer_exists():
    names = {c.name for m in apps.get_models() for c in m._meta.constraints}
    assert not set(CONSTRAINT_WORDS) - names


def _bound(model, obj, username="ana", **changes):
    """The admin's own (wrapped) form for ``obj``, bound with its current values and ``changes``."""
    request = RequestFactory().post("/")
    request.user = user(username, Role.ANALYST)
    model_admin = admin.site._registry[model]
    form_class = model_admin.get_form(request, obj, change=obj is not None and obj.pk is not None)
    unbound = form_class(instance=obj)
    data = {}
    for name in unbound.fields:
        value = unbound[name].value()
        if value is None:
            continue
        if isinstance(value, bool):
            if value:
                data[name] = "on"
            continue
        data[name] = [str(v) for v in value] if isinstance(value, list | tuple) and name != "evidence_kinds" else value
    data.update(changes)
    return form_class(data=data, instance=obj)


CASES = [
    # (model, how to build the row, changes that break a constraint, the constraint)
    (Cluster, lambda: ClusterFactory(), {"list_price_per_gpu_hour": "-1"}, "cluster_price_not_negative"),
    (RubricVersion, lambda: draft_rubric_version(), {"coverage_floor": "1.5"}, "rubric_coverage_floor_0_1"),
    (RubricVersion, lambda: draft_rubric_version(), {"tier_floor_gold": "0.99", "tier_floor_platinum": "0.5"},
     "rubric_tier_floors_ordered"),
    (Area, lambda: AreaFactory(), {"weight": "0"}, "area_weight_positive"),
    (Criterion, lambda: CriterionFactory(), {"anchor_best": "0.5", "anchor_worst": "0.5"}, "criterion_anchors_distinct"),
    (Criterion, lambda: CriterionFactory(), {"is_gate": "on", "gate_cap_tier": ""}, "criterion_gate_has_cap_tier"),
    (Criterion, lambda: CriterionFactory(), {"scale": "log", "anchor_worst": "0"}, "criterion_log_anchors_positive"),
    (Criterion, lambda: CriterionFactory(), {"weight": "0"}, "criterion_weight_positive"),
]


def draft_rubric_version():
    return AreaFactory().rubric_version


@pytest.mark.django_db
@pytest.mark.parametrize(("model", "build", "changes", "constraint"), CASES,
                         ids=[c[3] for c in CASES])
def test_an_admin_form_breaking_a_constraint_says_so_in_words(model, build, changes, constraint):
    obj = build()
    before = model.objects.filter(pk=obj.pk).values().get()
    form = _bound(model, obj, **changes)
    assert not form.is_valid()
    shown = " ".join(str(e) for errors in form.errors.values() for e in errors)
    assert constraint_words(constraint) in shown, form.errors
    assert constraint not in shown and "is violated" not in shown
    assert model.objects.filter(pk=obj.pk).values().get() == before


@pytest.mark.django_db
def test_the_same_row_without_the_break_is_accepted():
    cluster = ClusterFactory()
    form = _bound(Cluster, cluster, list_price_per_gpu_hour="2.5")
    assert form.is_valid(), form.errors


@pytest.mark.django_db
def test_a_cluster_with_no_gpus_and_no_model_is_refused_in_words_on_the_admin_page():
    provider = ProviderFactory(slug="nogpu")
    client = Client()
    client.force_login(user("ana", Role.ANALYST))
    body = client.post("/admin/providers/cluster/add/", {
        "provider": provider.pk, "name": "empty", "region": "", "gpu_model": "", "gpu_count": "0",
        "orchestrator": "slurm", "list_price_per_gpu_hour": "-3",
    }).content.decode()
    assert "A cluster has at least one GPU: give the number ordered." in body
    assert "Name the GPU model as ordered" in body
    assert "The list price per GPU-hour cannot be negative." in body
    assert "cluster_price_not_negative" not in body and not Cluster.objects.filter(name="empty").exists()
    ClusterFactory(provider=provider, name="main")
    dup = client.post("/admin/providers/cluster/add/", {
        "provider": provider.pk, "name": "main", "gpu_model": "H100", "gpu_count": "8", "orchestrator": "slurm",
    }).content.decode()
    assert "This provider already has a cluster with this name." in dup
    ok = client.post("/admin/providers/cluster/add/", {
        "provider": provider.pk, "name": "second", "gpu_model": "H100", "gpu_count": "8", "orchestrator": "slurm",
    })
    assert ok.status_code == 302 and Cluster.objects.filter(name="second").exists()


@pytest.mark.django_db
def test_the_api_says_a_broken_constraint_in_the_same_words_and_never_the_database_message():
    from django.db import IntegrityError, transaction

    from config.api_errors import Conflict, api_exception

    cluster = ClusterFactory()
    with pytest.raises(IntegrityError) as caught, transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(list_price_per_gpu_hour=-1)
    mapped = api_exception(caught.value)
    assert isinstance(mapped, Conflict)
    assert str(mapped.detail) == "The list price per GPU-hour cannot be negative. Nothing was written."
    assert "ratings_cluster" not in str(mapped.detail)
