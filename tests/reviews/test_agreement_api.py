"""The agreement endpoint finds its cycle the way the other cycle views do."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from config.access import Role

pytestmark = pytest.mark.django_db


def test_an_unknown_cycle_is_the_same_404_as_on_every_other_cycle_view():
    analyst = User.objects.create_user("ana-agreement", is_staff=True)
    analyst.groups.add(Group.objects.get_or_create(name=Role.ANALYST.value)[0])
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=analyst.pk))
    agreement = client.get("/api/v1/agreement/no-such-cycle/")
    costs = client.get("/api/v1/cycle-costs/no-such-cycle/")
    assert agreement.status_code == costs.status_code == 404
    # get_object_or_404 and the project's exception handler, not a body the view writes itself
    assert agreement.json() == costs.json() == {"detail": "No Cycle matches the given query."}
