"""Authentication abuse: login lockout (django-axes) and API throttles answer 429 (issue 11, item 3)."""

from __future__ import annotations

from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import api_token_for

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple 42"


@pytest.fixture
def low_rates(settings: Any) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": "3/min", "user": "4/min", "token": "6/min"},
    }


@pytest.fixture
def staff() -> Any:
    return get_user_model().objects.create_user("staffer", password=PASSWORD, is_staff=True, is_superuser=True)


def _statuses(client: Any, url: str, n: int) -> list[int]:
    return [client.get(url).status_code for _ in range(n)]


def test_anonymous_clients_are_throttled_with_429_and_retry_after(low_rates: None) -> None:
    client = APIClient()
    assert _statuses(client, "/api/public/reports/", 3) == [200, 200, 200]
    response = client.get("/api/public/reports/")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "throttled" in response.json()["detail"].lower()


def test_a_new_x_forwarded_for_on_each_request_does_not_escape_the_anonymous_throttle(low_rates: None) -> None:
    """With no proxies declared (OPGRADE_NUM_PROXIES=0, the default) the client is REMOTE_ADDR:
    a header the client writes itself is not a new client (issue 24, item 7)."""
    client = APIClient()
    statuses = [client.get("/api/public/reports/", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}").status_code
                for i in range(1, 6)]
    assert statuses == [200, 200, 200, 429, 429]
    # Nor does a header that names many hops, or none at all.
    assert client.get("/api/public/reports/", HTTP_X_FORWARDED_FOR="203.0.113.9, 10.0.0.1").status_code == 429
    assert client.get("/api/public/reports/").status_code == 429
    # Another address (REMOTE_ADDR) is another client.
    assert APIClient(REMOTE_ADDR="192.0.2.44").get("/api/public/reports/").status_code == 200


def test_behind_one_declared_proxy_the_client_is_the_address_that_proxy_saw(low_rates: None, settings: Any) -> None:
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = APIClient(REMOTE_ADDR="10.0.0.2")
    # The proxy appends the address it saw; what the client wrote to the left is not believed.
    spoofed = [proxy.get("/api/public/reports/", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}, 203.0.113.7").status_code
               for i in range(1, 5)]
    assert spoofed == [200, 200, 200, 429]
    assert proxy.get("/api/public/reports/", HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 200


def test_signed_in_users_are_throttled_at_the_user_rate(low_rates: None, staff: Any) -> None:
    client = APIClient()
    client.force_authenticate(staff)
    assert _statuses(client, "/api/v1/providers/", 5) == [200, 200, 200, 200, 429]


def test_token_clients_have_their_own_rate(low_rates: None, staff: Any) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(staff)}")
    assert _statuses(client, "/api/v1/providers/", 7) == [200] * 6 + [429]


def test_one_user_spending_their_rate_does_not_throttle_another(low_rates: None, staff: Any) -> None:
    first = APIClient()
    first.force_authenticate(staff)
    _statuses(first, "/api/v1/providers/", 5)
    other = APIClient()
    other.force_authenticate(get_user_model().objects.create_user("other", password=PASSWORD, is_staff=True,
                                                                  is_superuser=True))
    assert other.get("/api/v1/providers/").status_code == 200


def _login(client: Client, url: str, username: str, password: str) -> Any:
    return client.post(url, {"username": username, "password": password})


@pytest.mark.parametrize("url", ["/admin/login/", "/portal/login/"])
def test_repeated_bad_logins_lock_the_account_out_even_with_the_right_password(settings: Any, staff: Any,
                                                                                url: str) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    codes = [_login(client, url, "staffer", "wrong password").status_code for _ in range(3)]
    assert codes[:2] == [200, 200]  # the login form again, with an error
    assert codes[2] == 429
    response = _login(client, url, "staffer", PASSWORD)
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_thirty_bad_admin_logins_do_not_get_through(staff: Any) -> None:
    client = Client()
    codes = [_login(client, "/admin/login/", "staffer", f"guess {i}").status_code for i in range(30)]
    assert codes.count(429) >= 25  # the default limit is 5
    assert _login(client, "/admin/login/", "staffer", PASSWORD).status_code == 429


def test_a_lockout_is_per_username_and_address(settings: Any, staff: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 2
    get_user_model().objects.create_user("bystander", password=PASSWORD, is_staff=True)
    attacker = Client()
    for _ in range(3):
        _login(attacker, "/admin/login/", "staffer", "wrong password")
    # The same address may still sign in as someone else, and the locked name from elsewhere.
    assert _login(Client(), "/admin/login/", "bystander", PASSWORD).status_code == 302
    elsewhere = Client(REMOTE_ADDR="10.9.8.7")
    assert _login(elsewhere, "/admin/login/", "staffer", PASSWORD).status_code == 302


def test_a_new_x_forwarded_for_on_each_attempt_does_not_escape_the_lockout(settings: Any, staff: Any) -> None:
    """django-axes counts per (username, address) with the throttle's reading of the address:
    REMOTE_ADDR while no proxies are declared, whatever X-Forwarded-For says (issue 24, item 7)."""
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    codes = [client.post("/admin/login/", {"username": "staffer", "password": "wrong password"},
                         HTTP_X_FORWARDED_FOR=f"198.51.100.{i}", HTTP_X_REAL_IP=f"198.51.100.{i}").status_code
             for i in range(1, 6)]
    assert codes == [200, 200, 429, 429, 429]
    right = client.post("/admin/login/", {"username": "staffer", "password": PASSWORD},
                        HTTP_X_FORWARDED_FOR="203.0.113.50")
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


def test_behind_one_declared_proxy_the_lockout_counts_the_address_that_proxy_saw(settings: Any, staff: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 2
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = Client(REMOTE_ADDR="10.0.0.2")
    for i in range(3):
        proxy.post("/admin/login/", {"username": "staffer", "password": "wrong password"},
                   HTTP_X_FORWARDED_FOR=f"198.51.100.{i}, 203.0.113.7")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}
    locked = proxy.post("/admin/login/", {"username": "staffer", "password": PASSWORD},
                        HTTP_X_FORWARDED_FOR="198.51.100.99, 203.0.113.7")
    assert locked.status_code == 429
    other = proxy.post("/admin/login/", {"username": "staffer", "password": PASSWORD},
                       HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert other.status_code == 302


def test_a_good_login_below_the_limit_resets_the_count(settings: Any, staff: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    for _ in range(2):
        _login(client, "/admin/login/", "staffer", "wrong password")
    assert _login(client, "/admin/login/", "staffer", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        assert _login(client, "/admin/login/", "staffer", "wrong password").status_code == 200
