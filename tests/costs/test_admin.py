"""The price admin: an analyst records a price through the form (attributed, with history); a bad
figure is refused in words and nothing is written; history pages are read-only."""

from __future__ import annotations

import pytest

from config.access import Role
from costs.models import ClusterPrice
from tests.costs.conftest import cycle_of, provider_with_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def analyst(django_user_model):
    from reviews.services import roles_sync, user_role_set

    roles_sync()
    user = django_user_model.objects.create_user("ana-prices", password="x-not-used-9876", is_staff=True)
    user_role_set(user=user, role=Role.ANALYST)
    return user


def _form(cluster, cycle, **changes):
    data = {"cluster": cluster.pk, "cycle": cycle.pk, "base": "negotiated", "base_per_gpu_hour": "2.10",
            "base_source": "contract 9", "storage_per_gpu_hour": "0", "storage_source": "", "egress_per_gpu_hour": "0",
            "egress_source": "", "support_per_gpu_hour": "0", "support_source": "", "hours_per_year": "8760",
            "power_per_gpu_hour": "0", "space_per_gpu_hour": "0", "staff_per_gpu_hour": "0", "owned_source": "",
            "notes": ""}
    return {**data, **changes}


def test_an_analyst_adds_a_price_and_a_bad_one_writes_nothing(client, analyst):
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    client.force_login(analyst)
    url = "/admin/costs/clusterprice/add/"
    bad = client.post(url, _form(cluster, cycle, base_per_gpu_hour="-2"))
    assert bad.status_code == 200 and "The base price must be greater than 0." in bad.content.decode()
    bad = client.post(url, _form(cluster, cycle, storage_per_gpu_hour="0.2"))
    assert "Say where the storage charge comes from." in bad.content.decode()
    assert not ClusterPrice.objects.exists()
    ok = client.post(url, _form(cluster, cycle))
    assert ok.status_code == 302, ok.content.decode()[:2000]
    price = ClusterPrice.objects.get()
    assert price.recorded_by == analyst and price.history.get().history_user == analyst
    history = f"/admin/costs/clusterprice/{price.pk}/history/{price.history.get().history_id}/"
    assert client.get(history).status_code == 200
    assert client.post(history, {}).status_code == 403  # no revert from the history
