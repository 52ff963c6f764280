"""Admin for API tokens: admins issue, rotate and revoke any user's tokens.

The pages show a token's prefix, owner, name and dates, never the token or its digest.
Issuing and rotating answer with a page that shows the new token once (not cached, not put
in a message: Django's messages may live in a cookie); after that only its prefix is left.
Only the admin role opens these pages (other staff roles see the reviews app read-only,
and a list of everyone's tokens is no business of theirs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers

from config.access import Role, user_role
from reviews import api_tokens
from reviews.models import ApiToken
from reviews.services import ReviewsError


class ApiTokenIssueForm(forms.Form):
    user = forms.ModelChoiceField(queryset=get_user_model().objects.none(), help_text="Who the token acts as.")
    name = forms.CharField(max_length=api_tokens.NAME_MAX_LENGTH, help_text="What the token is for.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        users = get_user_model().objects.filter(is_active=True).order_by("username")
        self.fields["user"].queryset = users  # type: ignore[attr-defined]


class ActiveFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "Active"), ("revoked", "Revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> QuerySet[ApiToken]:
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


def token_issued_response(request: HttpRequest, admin_site: Any, issued: Sequence[api_tokens.IssuedToken],
                          title: str) -> HttpResponse:
    """The one page that ever shows these tokens."""
    context = {**admin_site.each_context(request), "title": title, "issued": issued,
               "opts": ApiToken._meta}
    response = TemplateResponse(request, "admin/reviews/apitoken/issued.html", context)
    add_never_cache_headers(response)
    return response


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix_shown", "name", "user", "provider", "created_at", "last_used_at", "status"]
    list_filter = [ActiveFilter, "created_at"]
    search_fields = ["prefix", "name", "user__username"]
    list_select_related = ["user__provider_membership__provider"]
    fields = ["prefix_shown", "name", "user", "provider", "created_at", "created_by", "last_used_at",
              "status", "revoked_at", "revoked_by"]
    readonly_fields = ["prefix_shown", "user", "provider", "created_at", "created_by", "last_used_at",
                       "status", "revoked_at", "revoked_by"]
    actions = ["rotate_selected", "revoke_selected"]
    ordering = ["-created_at", "-id"]

    # --- who: the admin role only -------------------------------------------------------------
    def _is_admin(self, request: HttpRequest) -> bool:
        return user_role(request.user) == Role.ADMIN

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_admin(request) and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._is_admin(request) and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_admin(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_admin(request) and super().has_delete_permission(request, obj)

    # --- what the pages show ------------------------------------------------------------------
    @admin.display(description="token", ordering="prefix")
    def prefix_shown(self, obj: ApiToken) -> str:
        return f"{obj.prefix}…"

    @admin.display(description="provider")
    def provider(self, obj: ApiToken) -> str:
        membership = getattr(obj.user, "provider_membership", None)
        return str(membership.provider) if membership is not None else "-"

    @admin.display(description="status")
    def status(self, obj: ApiToken) -> str:
        return "active" if obj.is_active else "revoked"

    # --- issue (the add page), rotate, revoke ------------------------------------------------
    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiTokenIssueForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                issued = api_tokens.api_token_issue(
                    user=form.cleaned_data["user"], name=form.cleaned_data["name"], by=request.user
                )
            except ReviewsError as exc:
                form.add_error(None, str(exc))
            else:
                self.log_addition(request, issued.row, [{"added": {}}])
                return token_issued_response(request, self.admin_site, [issued], "API token issued")
        context = {**self.admin_site.each_context(request), "title": "Issue an API token", "form": form,
                   "opts": self.opts, **(extra_context or {})}
        return TemplateResponse(request, "admin/reviews/apitoken/issue.html", context)

    @admin.action(description="Rotate selected tokens (each new token is shown once)", permissions=["change"])
    def rotate_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> HttpResponse | None:
        issued, refused = [], []
        for token in queryset.select_related("user"):
            try:
                issued.append(api_tokens.api_token_rotate(token=token, by=request.user))
            except ReviewsError as exc:
                refused.append(str(exc))
        for reason in refused:
            self.message_user(request, reason, messages.WARNING)
        if not issued:
            return None
        for new in issued:
            self.log_addition(request, new.row, [{"added": {}}])
        return token_issued_response(request, self.admin_site, issued, "API tokens rotated")

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = 0
        for token in queryset.filter(revoked_at__isnull=True).select_related("user"):
            try:
                api_tokens.api_token_revoke(token=token, by=request.user)
            except ReviewsError as exc:
                self.message_user(request, str(exc), messages.WARNING)
            else:
                revoked += 1
        self.message_user(request, f"Revoked {revoked} token(s): they authenticate no more.", messages.SUCCESS)
