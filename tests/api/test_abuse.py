"""Authentication abuse: login lockout (django-axes) and API throttles answer 429 (issue 11, item 3)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

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


def test_signed_in_users_are_throttled_at_the_user_rate(low_rates: None, staff: Any) -> None:
    client = APIClient()
    client.force_authenticate(staff)
    assert _statuses(client, "/api/v1/providers/", 5) == [200, 200, 200, 200, 429]


def test_token_clients_have_their_own_rate(low_rates: None, staff: Any) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff).key}")
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


def test_a_good_login_below_the_limit_resets_the_count(settings: Any, staff: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    for _ in range(2):
        _login(client, "/admin/login/", "staffer", "wrong password")
    assert _login(client, "/admin/login/", "staffer", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        assert _login(client, "/admin/login/", "staffer", "wrong password").status_code == 200
