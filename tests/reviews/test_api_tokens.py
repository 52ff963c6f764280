"""API tokens are hashed at rest, shown once, rotated and revoked by their owner or an admin (issue 24.8).

DRF's authtoken kept every token in clear and its admin listed them all. Now only a token's
prefix and SHA-256 digest are stored: these tests prove that the token authenticates, that
no column of any table holds it, that no page shows it after the one that issued it, that
rotating and revoking stop it, that a provider user cannot reach another user's tokens,
that the token throttle still counts token clients per user, that authentication is one
indexed lookup, and that DRF tokens from before keep working once the migration hashed them.
"""

from __future__ import annotations

import hashlib
import importlib
import secrets
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from reviews import api_tokens
from reviews.models import ApiToken
from reviews.services import ReviewsError, RoleRefused
from reviews.tokens import token_new, token_prefix
from tests.reviews.world import World

pytestmark = pytest.mark.django_db

API = "/api/v1/providers/"  # staff read it
REPLIES = "/api/v1/replies/"  # provider users read it
REFUSED = 403  # DRF answers 403, not 401, as its first scheme (session) names no WWW-Authenticate


def _status(token: str, url: str = API) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get(url).status_code


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _tables_holding(text: str) -> list[str]:
    """Every table with a row whose text form contains `text` (PostgreSQL: row::text)."""
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            name = connection.ops.quote_name(table)
            cursor.execute(f"SELECT count(*) FROM {name} AS r WHERE strpos(r::text, %s) > 0", [text])  # noqa: S608
            if cursor.fetchone()[0]:
                found.append(table)
    return found


def _token_on_page(body: str) -> str:
    """The one token an issuing page shows (current format)."""
    start = body.index("opg_")
    return body[start:start + 60].split("<")[0].split()[0]


# --- the token and what is stored -----------------------------------------------------------

def test_a_token_authenticates_as_its_user_and_a_wrong_one_does_not(base: World):
    issued = api_tokens.api_token_issue(user=base.users["analyst"], name="export script", by=base.users["analyst"])
    assert _status(issued.token) == 200
    assert _status(issued.token[:-1] + ("A" if issued.token[-1] != "A" else "B")) == REFUSED
    assert _status(issued.row.prefix) == REFUSED and _status("not-a-token") == REFUSED
    issued.row.refresh_from_db()
    assert issued.row.last_used_at is not None


def test_the_database_holds_no_clear_token(base: World):
    issued = api_tokens.api_token_issue(user=base.users["provider"], name="replies", by=base.users["provider"])
    assert _status(issued.token, REPLIES) == 200  # used once: last_used, sessions, logs all written
    row = ApiToken.objects.get(pk=issued.row.pk)
    assert row.digest == hashlib.sha256(issued.token.encode()).hexdigest() != issued.token
    assert issued.token.startswith(row.prefix) and len(row.prefix) < len(issued.token) // 3
    assert _tables_holding(issued.token) == []
    assert _tables_holding(issued.token[len(row.prefix):]) == []  # not even the secret part alone


def test_token_format_and_prefixes():
    new = token_new()
    assert token_prefix(new.token) == new.prefix and new.prefix.startswith("opg_")
    assert token_prefix("0123456789abcdef0123456789abcdef01234567") == "0123456789ab"  # DRF's old format
    for bad in ("", "opg_", new.prefix, new.token + "x", "0123456789abcdef", "Z" * 40, new.token.upper()):
        assert token_prefix(bad) is None


# --- pages: the token once, then only its prefix ----------------------------------------------

def test_the_admin_shows_a_new_token_once_then_only_its_prefix(base: World):
    admin = _client(base.users["admin"])
    owner = base.users["provider_b"]
    response = admin.post("/admin/reviews/apitoken/add/", {"user": owner.pk, "name": "bravo uploads"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    token = _token_on_page(response.content.decode())
    row = ApiToken.objects.get(user=owner)
    assert token.startswith(row.prefix) and _status(token, REPLIES) == 200
    for url in ("/admin/reviews/apitoken/", f"/admin/reviews/apitoken/{row.pk}/change/",
                "/admin/reviews/apitoken/?q=bravo", "/admin/admin/logentry/", "/admin/reviews/auditevent/"):
        body = admin.get(url).content.decode()
        assert token not in body and row.digest not in body, url
    assert row.prefix in admin.get("/admin/reviews/apitoken/").content.decode()


def test_the_portal_shows_a_new_token_once_then_only_its_prefix(base: World):
    portal = _client(base.users["provider"])
    response = portal.post("/portal/tokens/", {"name": "reply script"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    token = _token_on_page(response.content.decode())
    assert _status(token, REPLIES) == 200
    row = ApiToken.objects.get(user=base.users["provider"])
    listing = portal.get("/portal/tokens/").content.decode()
    assert row.prefix in listing and "reply script" in listing
    assert token not in listing and row.digest not in listing
    assert token not in portal.get("/portal/").content.decode()


def test_a_token_needs_a_name(base: World):
    response = _client(base.users["provider"]).post("/portal/tokens/", {"name": "  "})
    assert response.status_code == 400 and not ApiToken.objects.exists()


# --- rotate and revoke ------------------------------------------------------------------------

def test_rotating_in_the_portal_stops_the_old_token_and_shows_the_new_one_once(base: World):
    user = base.users["provider"]
    old = api_tokens.api_token_issue(user=user, name="reply script", by=user)
    response = _client(user).post(f"/portal/tokens/{old.row.pk}/rotate/")
    assert response.status_code == 200
    new = _token_on_page(response.content.decode())
    assert new != old.token
    assert _status(old.token, REPLIES) == REFUSED and _status(new, REPLIES) == 200
    assert ApiToken.objects.get(prefix=token_prefix(new)).name == "reply script"
    # the rotated token cannot be rotated again
    assert _client(user).post(f"/portal/tokens/{old.row.pk}/rotate/").status_code == 404


def test_revoking_in_the_portal_stops_the_token_and_keeps_its_row(base: World):
    user = base.users["provider"]
    issued = api_tokens.api_token_issue(user=user, name="reply script", by=user)
    response = _client(user).post(f"/portal/tokens/{issued.row.pk}/revoke/", follow=True)
    assert response.status_code == 200 and "revoked" in response.content.decode()
    assert _status(issued.token, REPLIES) == REFUSED
    row = ApiToken.objects.get(pk=issued.row.pk)
    assert row.revoked_at is not None and row.revoked_by == user


def test_an_admin_rotates_and_revokes_from_the_token_list(base: World):
    admin = _client(base.users["admin"])
    a = api_tokens.api_token_issue(user=base.users["analyst"], name="a", by=base.users["analyst"])
    b = api_tokens.api_token_issue(user=base.users["provider"], name="b", by=base.users["provider"])
    response = admin.post("/admin/reviews/apitoken/", {"action": "rotate_selected", "_selected_action": [a.row.pk]})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    new = _token_on_page(response.content.decode())
    assert _status(a.token) == REFUSED and _status(new) == 200
    response = admin.post("/admin/reviews/apitoken/", {"action": "revoke_selected", "_selected_action": [b.row.pk]})
    assert response.status_code == 302
    assert _status(b.token, REPLIES) == REFUSED
    assert ApiToken.objects.get(pk=b.row.pk).revoked_by == base.users["admin"]


# --- whose tokens -----------------------------------------------------------------------------

def test_a_provider_user_can_neither_see_nor_touch_another_users_tokens(base: World):
    other = base.users["provider_b"]
    theirs = api_tokens.api_token_issue(user=other, name="bravo script", by=other)
    portal = _client(base.users["provider"])
    listing = portal.get("/portal/tokens/").content.decode()
    assert theirs.row.prefix not in listing and "bravo script" not in listing
    assert portal.post(f"/portal/tokens/{theirs.row.pk}/rotate/").status_code == 404
    assert portal.post(f"/portal/tokens/{theirs.row.pk}/revoke/").status_code == 404
    assert ApiToken.objects.get(pk=theirs.row.pk).revoked_at is None and _status(theirs.token, REPLIES) == 200
    # and the services refuse too, whatever page calls them
    with pytest.raises(RoleRefused):
        api_tokens.api_token_revoke(token=theirs.row, by=base.users["provider"])
    with pytest.raises(RoleRefused):
        api_tokens.api_token_issue(user=other, name="mine now", by=base.users["analyst"])


def test_only_admins_open_the_token_admin(base: World):
    api_tokens.api_token_issue(user=base.users["provider"], name="x", by=base.users["provider"])
    for role in ("analyst", "publisher", "reviewer", "provider"):
        assert _client(base.users[role]).get("/admin/reviews/apitoken/").status_code in {302, 403}, role
    assert _client(base.users["admin"]).get("/admin/reviews/apitoken/").status_code == 200


def test_a_user_holds_at_most_twenty_active_tokens(base: World):
    user = base.users["provider"]
    for n in range(api_tokens.MAX_ACTIVE_PER_USER):
        api_tokens.api_token_issue(user=user, name=f"t{n}", by=user)
    with pytest.raises(ReviewsError, match="At most"):
        api_tokens.api_token_issue(user=user, name="one more", by=user)


# --- throttle and cost per request ------------------------------------------------------------

def test_the_token_throttle_counts_each_token_user_once_whatever_token_they_use(base: World, settings: Any):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": "100/min", "user": "100/min", "token": "3/min"},
    }
    analyst, admin = base.users["analyst"], base.users["admin"]
    first = api_tokens.api_token_issue(user=analyst, name="one", by=analyst).token
    second = api_tokens.api_token_issue(user=analyst, name="two", by=analyst).token
    assert [_status(first), _status(second), _status(first), _status(second)] == [200, 200, 200, 429]
    assert _status(api_tokens.api_token_issue(user=admin, name="a", by=admin).token) == 200
    session = APIClient()
    session.force_authenticate(analyst)  # a session user is counted under "user", not "token"
    assert session.get(API).status_code == 200


def test_authentication_is_one_indexed_lookup_however_many_tokens_exist(base: World,
                                                                       django_assert_num_queries: Any):
    users = [base.users[r] for r in ("analyst", "publisher", "admin", "provider", "provider_b")]
    ApiToken.objects.bulk_create(
        ApiToken(user=users[1 + n % (len(users) - 1)], name=f"t{n}", prefix=token_new().prefix,
                 digest=secrets.token_hex(32))
        for n in range(300)
    )
    issued = api_tokens.api_token_issue(user=users[0], name="mine", by=users[0])
    with django_assert_num_queries(2) as ctx:  # the lookup, and last_used_at (first use)
        assert api_tokens.api_token_authenticate(token=issued.token) is not None
    lookup = ctx.captured_queries[0]["sql"]
    assert '"prefix" =' in lookup and "LIMIT 1" in lookup
    with django_assert_num_queries(1):  # used again within the minute: the lookup only
        assert api_tokens.api_token_authenticate(token=issued.token) is not None
    with django_assert_num_queries(1):
        assert api_tokens.api_token_authenticate(token=token_new().token) is None


# --- tokens from before: DRF's authtoken table ------------------------------------------------

def _migration() -> Any:
    path = next(Path(apps.get_app_config("reviews").path, "migrations").glob("*_api_tokens.py"))
    return importlib.import_module(f"reviews.migrations.{path.stem}")


def test_the_migration_hashes_drf_tokens_which_keep_working(base: World):
    user, other = base.users["analyst"], base.users["provider"]
    legacy = [secrets.token_hex(20), secrets.token_hex(20)]
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
                       "created timestamp with time zone NOT NULL, user_id integer NOT NULL)")
        cursor.executemany("INSERT INTO authtoken_token VALUES (%s, now(), %s)",
                           [(legacy[0], user.pk), (legacy[1], other.pk)])
        cursor.execute("INSERT INTO authtoken_token VALUES ('hand-made', now(), %s)", [user.pk])
    with connection.schema_editor() as editor:
        _migration().legacy_tokens_hash(apps, editor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0  # the clear rows are gone
    assert _status(legacy[0]) == 200 and _status(legacy[1], REPLIES) == 200
    assert _tables_holding(legacy[0]) == [] and _tables_holding(legacy[1]) == []
    rows = ApiToken.objects.filter(prefix__in=[k[:12] for k in legacy])
    assert {r.user_id for r in rows} == {user.pk, other.pk}
    assert ApiToken.objects.count() == 2  # the hand-made key could not be kept: dropped
    # and a migrated token is rotated like any other
    rotated = api_tokens.api_token_rotate(token=rows.get(user=user), by=user)
    assert _status(legacy[0]) == REFUSED and _status(rotated.token) == 200
