"""Onboarding a cluster as one guided flow, from the cluster's admin page (issue 15, item 3).

Steps, each a page of the admin (its look, its login): 1 access (login host and port, how nodes
are found and reached, the provider API and its write-only token), 2 tenants (write-only keys
and passwords), 3 host keys (the login node's and the nodes' fingerprints on one page, pinned
by ticking them; each pin can be removed again), 4 settings (named, validated fields instead of
raw JSON), 5 check (each piece tried for real before the first run), 6 evidence (what each cycle
still lacks for this cluster, with the workbench's "run missing probes" one click away).

Roles as on the workbench: analysts and admins act; publishers read the overview; reviewers
and provider accounts never get in. Every write is one call into ``probes.onboarding`` (which
goes through ``probes.services`` and records the admin history); a cluster, tenant or pin id
that is not this cluster's answers 404; bad input re-renders the form with the reason and
changes nothing.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from config.access import Role
from probes import onboarding
from probes import services as probe_services
from probes.admin import SECRET_WIDGET, ClusterAccessForm, TenantAccountForm
from probes.models import ClusterAccess, HostKeyPin, TenantAccount
from probes.secret_binding import password_gaps
from probes.transport import TransportError
from providers.models import Cluster, Cycle
from workbench import selectors
from workbench.services import cycle_probe_ids, probes_needing_a_run
from workbench.views import ACTORS, READERS, _context, _require

STEPS = (
    ("access", "Access"),
    ("tenants", "Tenants"),
    ("hostkeys", "Host keys"),
    ("settings", "Settings"),
    ("check", "Check"),
    ("evidence", "Evidence"),
)


def _cluster(pk: int) -> Cluster:
    return get_object_or_404(Cluster.objects.select_related("provider"), pk=pk)


def _page(request: HttpRequest, cluster: Cluster, step: str, template: str, **extra: Any) -> TemplateResponse:
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    return TemplateResponse(request, template, _context(
        request, cluster=cluster, access=access, step=step, steps=STEPS,
        title=f"Onboard {cluster}: {dict(STEPS).get(step, 'overview')}", **extra,
    ))


def _to(step: str, cluster: Cluster) -> HttpResponseRedirect:
    name = "workbench:onboard" if step == "overview" else f"workbench:onboard_{step}"
    return HttpResponseRedirect(reverse(name, args=[cluster.pk]))


# ------------------------------------------------------------------------------------ overview


def _evidence(cluster: Cluster) -> list[dict[str, Any]]:
    """Per cycle of the provider: the probes this cluster still needs, and the criteria with no evidence."""
    out = []
    for cycle in Cycle.objects.filter(providers=cluster.provider).select_related("rubric_version").order_by("-period_start"):
        probe_ids = cycle_probe_ids(cycle=cycle)
        needed = probes_needing_a_run(cycle=cycle, clusters=[cluster], probe_ids=probe_ids).get(cluster.pk, [])
        wb = selectors.cycle_workbench_get(cycle=cycle)
        row = next((r for r in wb.rows if r.provider.pk == cluster.provider_id), None)
        missing = []
        if row is not None:
            for criterion, cell in zip(wb.criteria, row.cells, strict=True):
                if cell.label == selectors.MISSING:
                    missing.append({"key": criterion.key, "title": criterion.title,
                                    "kinds": ", ".join(criterion.evidence_kinds).replace("_", " ")})
        out.append({"cycle": cycle, "probes_needed": needed, "probes_total": len(probe_ids), "missing": missing,
                    "coverage": row.coverage_now if row else None})
    return out


def _status(cluster: Cluster) -> dict[str, str]:
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    tenants = TenantAccount.objects.filter(cluster=cluster).count()
    pins = HostKeyPin.objects.filter(cluster=cluster)
    login_pinned = bool(access and pins.filter(host=access.login_host, port=access.login_port).exists())
    return {
        "access": (f"login {access.login_host}:{access.login_port}" + (", API token stored" if access.has_api_token else ""))
        if access else "not set",
        "tenants": f"{tenants} account(s)" if tenants else "none yet",
        "hostkeys": f"{pins.count()} pinned" + ("" if login_pinned else " (the login node's key is not pinned)"),
        "settings": f"{len(access.settings or {})} key(s)" if access else "not set",
    }


@require_safe
def onboard(request: HttpRequest, pk: int) -> HttpResponse:
    role = _require(request, READERS)
    cluster = _cluster(pk)
    history = onboarding.onboarding_history(cluster=cluster)
    last_check = next((h for h in history if h.change_message.startswith("Onboarding: checks:")), None)
    return _page(request, cluster, "overview", "workbench/onboarding/overview.html",
                 status=_status(cluster), history=history, last_check=last_check, can_act=role in ACTORS,
                 evidence=_evidence(cluster))


# -------------------------------------------------------------------------------------- access


class AccessStepForm(ClusterAccessForm):
    """The admin's access form (its checks: no port inside the host, no guessed scheme) less the
    cluster and the raw settings, which have their own step."""

    class Meta(ClusterAccessForm.Meta):
        fields = [
            "login_host", "login_port", "inventory_source", "node_access", "compute_nodes", "api_base_url",
            "disruptive_opt_in", "max_concurrency",
        ]  # fmt: skip


@require_http_methods(["GET", "POST"])
def onboard_access(request: HttpRequest, pk: int) -> HttpResponse:
    _require(request, ACTORS)
    cluster = _cluster(pk)
    instance = ClusterAccess.objects.filter(cluster=cluster).first() or ClusterAccess(cluster=cluster)
    form = AccessStepForm(request.POST or None, instance=instance)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            saved = onboarding.cluster_access_save(
                cluster=cluster, values={k: data[k] for k in onboarding.ACCESS_FIELDS if k in data},
                api_token=data.get("api_token") or "", clear_api_token=bool(data.get("clear_api_token")),
                user=request.user,
            )
        except onboarding.OnboardingError as exc:
            form.add_error(None, str(exc))
        except forms.ValidationError as exc:
            form.add_error(None, "; ".join(exc.messages))
        else:
            for note in saved.notes:  # a secret the change unbound: asked for again, in words
                messages.warning(request, note)
            messages.success(request, "Access saved. Next: the tenant accounts Opgrade logs in as.")
            return _to("tenants", cluster)
    return _page(request, cluster, "access", "workbench/onboarding/form.html", form=form,
                 intro="How Opgrade reaches the cluster. The API token is write-only: it is stored encrypted "
                       "and never shown again; leave it empty to keep the stored one.")


# ------------------------------------------------------------------------------------- tenants


HTTP_LOGIN_HELP = (
    "Write-only. The tenant's HTTP login for the metrics and log URLs (with the username above, or the one "
    "the settings' HTTP users name); used for SSH only when no private key is given."
)


class TenantStepForm(TenantAccountForm):
    class Meta(TenantAccountForm.Meta):
        fields = ["label", "username"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["password"].help_text = HTTP_LOGIN_HELP
        self.fields["label"].help_text = "Short name used in findings, e.g. tenant-a. Two tenants are needed " \
                                         "for the isolation probes."


@require_http_methods(["GET", "POST"])
def onboard_tenants(request: HttpRequest, pk: int) -> HttpResponse:
    _require(request, ACTORS)
    cluster = _cluster(pk)
    form = TenantStepForm(None, instance=TenantAccount(cluster=cluster))
    if request.method == "POST" and request.POST.get("action") == "password":
        account = get_object_or_404(TenantAccount, pk=_int(request.POST.get("tenant")), cluster=cluster)
        try:
            onboarding.tenant_password_enter_again(account=account, password=request.POST.get("password") or "",
                                                   user=request.user)
        except onboarding.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Tenant {account.label}: password stored, sent (as the HTTP login, and over SSH "
                                      "without a key) to "
                                      f"{', '.join(account.password_origins) or 'no address yet (settings step)'} only.")
        return _to("tenants", cluster)
    if request.method == "POST" and request.POST.get("action") == "remove":
        account = get_object_or_404(TenantAccount, pk=_int(request.POST.get("tenant")), cluster=cluster)
        try:
            onboarding.tenant_account_remove(account=account, user=request.user)
        except onboarding.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Tenant {account.label} removed.")
        return _to("tenants", cluster)
    if request.method == "POST":
        form = TenantStepForm(request.POST, instance=TenantAccount(cluster=cluster))
        if form.is_valid():
            data = form.cleaned_data
            try:
                onboarding.tenant_account_add(
                    cluster=cluster, label=data["label"], username=data["username"],
                    private_key=data.get("private_key") or "", passphrase=data.get("passphrase") or "",
                    password=data.get("password") or "", user=request.user,
                )
            except onboarding.OnboardingError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Tenant {data['label']} added (secrets stored encrypted).")
                return _to("tenants", cluster)
    tenants = TenantAccount.objects.filter(cluster=cluster).order_by("label")
    gaps = password_gaps(access=ClusterAccess.objects.filter(cluster=cluster).first())
    return _page(request, cluster, "tenants", "workbench/onboarding/tenants.html", form=form, tenants=tenants,
                 password_gaps=gaps)


def _int(value: Any) -> int:
    text = str(value or "")
    if not text.isdigit():
        raise Http404("No such object.")
    return int(text)


# ----------------------------------------------------------------------------------- host keys


@require_http_methods(["GET", "POST"])
def onboard_hostkeys(request: HttpRequest, pk: int) -> HttpResponse:
    _require(request, ACTORS)
    cluster = _cluster(pk)
    if request.method == "POST" and request.POST.get("action") == "unpin":
        pin = get_object_or_404(HostKeyPin, pk=_int(request.POST.get("pin")), cluster=cluster)
        try:
            onboarding.host_key_unpin(pin=pin, user=request.user)
        except onboarding.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Unpinned {pin.host}:{pin.port} {pin.key_type}; runs will refuse that host "
                                      "until a key is pinned again.")
        return _to("hostkeys", cluster)
    if request.method == "POST":
        try:
            pins = onboarding.host_keys_pin_chosen(cluster=cluster, chosen=request.POST.getlist("pin"),
                                                   user=request.user)
        except onboarding.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Pinned {len(pins)} host key(s).")
        return _to("hostkeys", cluster)
    keys, error = [], ""
    if ClusterAccess.objects.filter(cluster=cluster).exists():
        try:
            keys = probe_services.host_keys_fetch(cluster=cluster)
        except (probe_services.ProbeRunError, TransportError) as exc:
            error = str(exc)
    else:
        error = "Save the cluster's access (login host and port) first."
    pins = HostKeyPin.objects.filter(cluster=cluster).order_by("host", "port", "key_type")
    return _page(request, cluster, "hostkeys", "workbench/onboarding/hostkeys.html", keys=keys, error=error,
                 pins=pins, unread=[k for k in keys if k.error], offered=[k for k in keys if not k.error])


# ------------------------------------------------------------------------------------ settings


class SettingsStepForm(forms.Form):
    scale = forms.ChoiceField(
        choices=onboarding.SCALE_CHOICES, required=False, label="Scale",
        help_text="Which threshold rows judge this cluster's timings (the 'scale' fact).",
    )
    overrides = forms.CharField(
        required=False, label="Per-probe settings", widget=forms.Textarea(attrs={"rows": 6, "cols": 70}),
        help_text="One 'probe.setting = value' a line, e.g. metrics_freshness.visible_timeout_s = 60; only "
                  "settings the catalog declares, with a value of their type. Empty: the catalog's defaults.",
    )

    def __init__(self, *args: Any, current: dict[str, Any], tenants: list[TenantAccount] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current = current
        # A password goes only to the web URLs set when it was typed (issue 24): typing it here sends it
        # to the URLs saved with this form. Write-only; empty keeps it where it goes now.
        self.password_labels = {}
        for account in tenants or []:
            name = f"http_password_{account.label}"
            self.password_labels[name] = account.label
            self.fields[name] = forms.CharField(
                required=False, label=f"HTTP password of {account.label}", widget=SECRET_WIDGET,
                help_text="Write-only. Type it to send it to the metrics, Pushgateway and log URLs above as saved; "
                          "empty: it keeps going only to "
                          f"{', '.join(account.password_origins or []) or 'no web address (none was set when it was typed)'}.",
            )
        for field in reversed(onboarding.SETTINGS):
            multi = field.kind in {"paths", "lines", "users"}
            self.fields = {field.key: forms.CharField(
                required=False, label=field.label, help_text=field.help,
                widget=forms.Textarea(attrs={"rows": 3, "cols": 70}) if multi else forms.TextInput(attrs={"size": 60}),
                initial=onboarding.setting_value_text(field, current.get(field.key)),
            ), **self.fields}
        self.fields["scale"].initial = str(dict(current.get("facts") or {}).get("scale", ""))
        self.fields["overrides"].initial = onboarding.probe_overrides_text(current)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for field in onboarding.SETTINGS:
            try:
                onboarding.setting_value_parse(field, data.get(field.key, ""))
            except onboarding.OnboardingError as exc:
                self.add_error(field.key, str(exc))
        try:
            onboarding.probe_overrides_parse(data.get("overrides", ""))
        except onboarding.OnboardingError as exc:
            self.add_error("overrides", str(exc))
        if not self.errors:
            try:
                data["settings"] = onboarding.cluster_settings_build(
                    current=self.current, named={f.key: data.get(f.key, "") for f in onboarding.SETTINGS},
                    scale=data.get("scale", ""), overrides=data.get("overrides", ""),
                )
            except onboarding.OnboardingError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return data


@require_http_methods(["GET", "POST"])
def onboard_settings(request: HttpRequest, pk: int) -> HttpResponse:
    _require(request, ACTORS)
    cluster = _cluster(pk)
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    if access is None:
        messages.error(request, "Save the cluster's access (login host and port) first.")
        return _to("access", cluster)
    tenants = list(TenantAccount.objects.filter(cluster=cluster).exclude(password_encrypted="").order_by("label"))
    form = SettingsStepForm(request.POST or None, current=dict(access.settings or {}), tenants=tenants)
    if request.method == "POST" and form.is_valid():
        passwords = {label: form.cleaned_data.get(name) or "" for name, label in form.password_labels.items()}
        saved = onboarding.cluster_settings_save(access=access, settings=form.cleaned_data["settings"],
                                                 passwords=passwords, user=request.user)
        for note in saved.notes:  # a web URL the tenants' passwords are not bound to: asked for again
            messages.warning(request, note)
        messages.success(request, "Settings saved. Next: check that each piece works.")
        return _to("check", cluster)
    return _page(request, cluster, "settings", "workbench/onboarding/form.html", form=form,
                 other_keys=onboarding.cluster_settings_other_keys(access.settings or {}),
                 intro="The settings the probes read, by name. Only the tenants' HTTP passwords at the end are "
                       "secret: a password goes only to the metrics, Pushgateway and log URLs set when it was "
                       "typed, so type it here when you set or change those URLs.")


# --------------------------------------------------------------------------------------- check


@require_http_methods(["GET", "POST"])
def onboard_check(request: HttpRequest, pk: int) -> HttpResponse:
    _require(request, ACTORS)
    cluster = _cluster(pk)
    checks = None
    if request.method == "POST":
        try:
            checks = onboarding.cluster_onboarding_check(cluster=cluster, user=request.user)
        except onboarding.OnboardingError as exc:
            messages.error(request, str(exc))
    history = onboarding.onboarding_history(cluster=cluster)
    last_check = next((h for h in history if h.change_message.startswith("Onboarding: checks:")), None)
    return _page(request, cluster, "check", "workbench/onboarding/check.html", checks=checks, last_check=last_check,
                 all_ok=bool(checks) and all(c.ok for c in checks))


@require_safe
def onboard_evidence(request: HttpRequest, pk: int) -> HttpResponse:
    role = _require(request, READERS)
    cluster = _cluster(pk)
    return _page(request, cluster, "evidence", "workbench/onboarding/evidence.html", evidence=_evidence(cluster),
                 can_act=role in ACTORS, is_analyst=role == Role.ANALYST)
