"""The provider portal's API tokens page: a provider user issues, rotates and revokes their own.

Only the signed-in user's own tokens are listed or touched: a token id in the URL is looked
up among them, so another user's id is a 404 (as is an unknown or revoked one). A new or
rotated token is shown once, in the answer to the POST that made it (never cached, never
put in a message or the session); the list shows prefixes only.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods

from config.text import refuse_unsafe_text
from reviews import api_tokens
from reviews.portal import provider_required
from reviews.services import ReviewsError


class TokenForm(forms.Form):
    name = forms.CharField(max_length=api_tokens.NAME_MAX_LENGTH, label="Name",
                           help_text="What the token is for, e.g. 'reply upload script'.",
                           validators=[refuse_unsafe_text])


def _page(request: HttpRequest, provider: Any, *, form: TokenForm, issued: api_tokens.IssuedToken | None = None,
          status: int = 200) -> HttpResponse:
    context = {"provider": provider, "form": form, "issued": issued,
               "tokens": api_tokens.api_token_list(user=request.user)[:100]}
    response = render(request, "reviews/portal/tokens.html", context, status=status)
    add_never_cache_headers(response)
    return response


@provider_required
@require_http_methods(["GET", "POST"])
def portal_tokens(request: HttpRequest, provider: Any) -> HttpResponse:
    if request.method == "GET":
        return _page(request, provider, form=TokenForm())
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, provider, form=form, status=400)
    try:
        issued = api_tokens.api_token_issue(user=request.user, name=form.cleaned_data["name"], by=request.user)
    except ReviewsError as exc:
        form.add_error(None, str(exc))
        return _page(request, provider, form=form, status=400)
    return _page(request, provider, form=TokenForm(), issued=issued)


def _own(request: HttpRequest, token_id: int) -> Any:
    token = api_tokens.api_token_of_owner(user=request.user, token_id=token_id)
    if token is None:
        raise Http404("No such active token of yours.")
    return token


@provider_required
@require_http_methods(["POST"])
def portal_token_rotate(request: HttpRequest, provider: Any, pk: int) -> HttpResponse:
    issued = api_tokens.api_token_rotate(token=_own(request, pk), by=request.user)
    return _page(request, provider, form=TokenForm(), issued=issued)


@provider_required
@require_http_methods(["POST"])
def portal_token_revoke(request: HttpRequest, provider: Any, pk: int) -> HttpResponse:
    token = api_tokens.api_token_revoke(token=_own(request, pk), by=request.user)
    messages.success(request, f"Token {token.prefix}… is revoked: it authenticates no more.")
    return redirect("portal:tokens")
