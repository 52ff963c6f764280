"""The provider portal: server-rendered pages where a provider's own users see their data.

A provider user (role `provider`, tied to ONE provider by ProviderMembership) sees its
draft findings, its tier once scored, customer feedback as counts and means only, its
own section of the draft report in fact-check, and files right-of-reply comments. Every
page resolves the provider from the signed-in user, never from the URL, so there is no
identifier to tamper with; a cycle the provider is not rated in is a 404.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_http_methods

from config.access import user_provider
from config.text import refuse_unsafe_text
from reviews import selectors, services
from reviews.models import RightOfReply

LOGIN_URL = reverse_lazy("portal:login")


def provider_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed in, and a provider user with a provider: otherwise login or 403."""

    @login_required(login_url=LOGIN_URL)
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        provider = user_provider(request.user)
        if provider is None:
            raise PermissionDenied("The portal is for provider accounts.")
        return view(request, provider, *args, **kwargs)

    return wrapped


class ReplyForm(forms.Form):
    fact_ref = forms.CharField(max_length=200, label="Which fact", help_text="A finding id, criterion or section.",
                               validators=[refuse_unsafe_text])
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=10_000, label="Your reply",
                           validators=[refuse_unsafe_text])
    report_id = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=1, max_value=2**63 - 1)


class PortalLoginView(auth_views.LoginView):
    template_name = "reviews/portal/login.html"
    redirect_authenticated_user = False

    def get_default_redirect_url(self) -> str:
        return str(reverse_lazy("portal:home"))


@provider_required
def portal_home(request: HttpRequest, provider: Any) -> HttpResponse:
    cycles = selectors.portal_cycles(provider=provider)
    return render(request, "reviews/portal/home.html", {"provider": provider, "cycles": cycles})


def _cycle_for(provider: Any, cycle_slug: str) -> Any:
    cycle = selectors.portal_cycles(provider=provider).filter(slug=cycle_slug).first()
    if cycle is None:
        raise Http404("No such cycle for your provider.")
    return cycle


@provider_required
def portal_cycle(request: HttpRequest, provider: Any, cycle_slug: str) -> HttpResponse:
    cycle = _cycle_for(provider, cycle_slug)
    report = selectors.portal_report_section(provider=provider, cycle=cycle)
    context = {
        "provider": provider,
        "cycle": cycle,
        "findings": selectors.portal_findings(provider=provider, cycle=cycle)[:500],
        "tiers": selectors.portal_tiers(provider=provider, cycle=cycle),
        "feedback": selectors.portal_feedback_summary(provider=provider, cycle=cycle),
        "report": report,
        "replies": RightOfReply.objects.filter(provider=provider, cycle=cycle).order_by("-created_at"),
        "form": ReplyForm(initial={"report_id": report["report_id"] if report else None}),
    }
    return render(request, "reviews/portal/cycle.html", context)


@provider_required
@require_http_methods(["POST"])
def portal_reply(request: HttpRequest, provider: Any, cycle_slug: str) -> HttpResponse:
    cycle = _cycle_for(provider, cycle_slug)
    form = ReplyForm(request.POST)
    if form.is_valid():
        try:
            services.reply_create(
                by=request.user, cycle=cycle, fact_ref=form.cleaned_data["fact_ref"],
                text=form.cleaned_data["text"], report_id=form.cleaned_data["report_id"],
            )
        except services.ReviewsError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, "Thank you: your reply was filed and will be answered before publication.")
    else:
        problems = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
        messages.error(request, f"Please say which fact and what is wrong with it ({problems}).")
    return redirect("portal:cycle", cycle_slug=cycle.slug)
