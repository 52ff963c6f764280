"""Admin for the probe runner: access and secrets, host-key pinning, schedules, runs, findings.

Secrets are write-only: the forms accept a private key, passphrase, password or API token and hand
them to a service that encrypts them; no page ever renders one back (only "stored: yes/no").
Host keys are pinned only through the "Fetch host keys to pin" action, which shows each
fingerprint and records exactly the ones the analyst ticks; a provider's host CA only through
"Pin a host CA", which shows the pasted key's fingerprint and stores it once the analyst confirms
that fingerprint. Pins are read and removed here, never added or edited. Runs and findings are
read-only.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from config.admin_readonly import ReadOnlyAdminMixin
from probes import secret_binding, selectors, services
from probes.catalog import probe_choices
from probes.egress import UrlRefused, url_validate
from probes.models import (
    ClusterAccess,
    Finding,
    HostCAPin,
    HostKeyPin,
    ProbeRun,
    ProbeSchedule,
    TenantAccount,
)
from probes.transport import TransportError, check_private_key

#: settings keys holding a URL Opgrade or a node requests (checked like the named onboarding fields)
URL_SETTING_KEYS = ("metrics_url", "pushgateway_url", "logs_url", "freshness_sink_url")

SECRET_WIDGET = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})


def host_with_port(host: str) -> bool:
    """True for "10.0.0.3:22", "login.example:2222" or "[fe80::1]:22"; a bare IPv6 address is a host."""
    if host.startswith("["):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return ":" in host
    return False


class ClusterAccessForm(forms.ModelForm):
    api_token = forms.CharField(
        required=False, widget=SECRET_WIDGET, help_text="Write-only. Leave empty to keep the stored token."
    )
    clear_api_token = forms.BooleanField(required=False, help_text="Remove the stored token.")

    class Meta:
        model = ClusterAccess
        fields = [
            "cluster", "login_host", "login_port", "inventory_source", "node_access", "compute_nodes",
            "api_base_url", "disruptive_opt_in", "max_concurrency", "settings",
        ]  # fmt: skip

    def _post_clean(self) -> None:
        super()._post_clean()
        # A secret is never written back into the page, so after an error the token field comes
        # back empty (issue 15): say so beside it, instead of letting it look saved.
        if self._errors and self.cleaned_data.get("api_token") and "api_token" not in self._errors:
            self.add_error("api_token", "Not saved: fix the errors on this page, then type the token again "
                                        "(a stored secret is never shown back on the page).")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # left out of a form (an older client, a script): the model's defaults, not a refusal
        for name in ("inventory_source", "node_access"):
            if name in self.fields:
                self.fields[name].required = False

    def clean_inventory_source(self) -> str:
        return self.cleaned_data.get("inventory_source") or (
            self.instance.inventory_source if self.instance.pk else ClusterAccess.InventorySource.SCHEDULER
        )

    def clean_node_access(self) -> str:
        return self.cleaned_data.get("node_access") or (
            self.instance.node_access if self.instance.pk else ClusterAccess.NodeAccess.SCHEDULER
        )

    def clean_login_host(self) -> str:
        host = self.cleaned_data["login_host"].strip()
        if host_with_port(host):
            raise forms.ValidationError(
                f"Give only the host name or address here ({host.rsplit(':', 1)[0].strip('[]')}); "
                "put the port in the login port field."
            )
        return host

    def clean_api_base_url(self) -> str:
        typed = (self.data.get(self.add_prefix("api_base_url")) or "").strip()
        if typed and "://" not in typed:
            raise forms.ValidationError(
                f"Start the address with http:// or https:// ({typed} has no scheme, and guessing one could "
                "send the token to the wrong service)."
            )
        if typed:  # http(s) only, to an address Opgrade may reach (probes.egress), whatever URLField allows
            try:
                url_validate(typed, what="Provider API URL")
            except UrlRefused as exc:
                raise forms.ValidationError(str(exc)) from None
        return self.cleaned_data.get("api_base_url") or typed

    def clean_settings(self) -> Any:
        value = self.cleaned_data.get("settings")
        if isinstance(value, dict):
            for key in URL_SETTING_KEYS:
                if value.get(key):
                    try:
                        url_validate(str(value[key]), what=f"settings.{key}")
                    except UrlRefused as exc:
                        raise forms.ValidationError(str(exc)) from None
        return value

    def clean_compute_nodes(self) -> str:
        text = self.cleaned_data["compute_nodes"]
        for line in text.splitlines():
            if line.strip():
                try:
                    services.compute_node_parse(line)
                except services.ProbeRunError as exc:
                    raise forms.ValidationError(str(exc)) from exc
        return text


@admin.register(ClusterAccess)
class ClusterAccessAdmin(admin.ModelAdmin):
    form = ClusterAccessForm
    list_display = ["cluster", "login_host", "login_port", "node_count", "api_token_stored", "disruptive_opt_in",
                    "max_concurrency"]  # fmt: skip
    list_filter = ["disruptive_opt_in", "inventory_source", "node_access"]
    readonly_fields = ["inventory_last_seen", "nodes_departed", "nodes_joined", "next_scheduled_runs"]
    search_fields = ["cluster__name", "cluster__provider__name", "login_host"]
    list_select_related = ["cluster__provider"]
    actions = ["action_fetch_host_keys", "action_pin_host_ca"]

    @admin.display(description="compute nodes")
    def node_count(self, obj: ClusterAccess) -> int:
        seen = (obj.inventory or {}).get("nodes")
        if seen is not None and obj.inventory_source != ClusterAccess.InventorySource.LISTED:
            return len(seen)
        return len([line for line in obj.compute_nodes.splitlines() if line.strip()])

    # The inventory the runner read last (issue 18): read-only, written only by probe runs.

    @admin.display(description="inventory as last seen")
    def inventory_last_seen(self, obj: ClusterAccess) -> str:
        inv = obj.inventory or {}
        if "nodes" not in inv:
            return "not read yet (the next probe run reads it)"
        rows = format_html_join(
            "", "<li>{} {} {}{}</li>",
            ((n.get("name"), n.get("address"), n.get("state"),
              "" if n.get("usable", True) else " (not usable now: no target)") for n in inv["nodes"]),
        )  # fmt: skip
        return format_html("from {} at {}<ul>{}</ul>", inv.get("source", "?"), inv.get("seen_at", "?"), rows)

    @admin.display(description="departed nodes")
    def nodes_departed(self, obj: ClusterAccess) -> str:
        gone = (obj.inventory or {}).get("departed") or []
        if not gone:
            return "none"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "", "<li>{} ({}) departed by {}; last seen {} ({}); the scheduler said: {}</li>",
                ((d.get("name"), d.get("address"), d.get("at"), d.get("last_seen"), d.get("last_state"),
                  d.get("scheduler_said")) for d in gone),
            ),
        )  # fmt: skip

    @admin.display(description="joined nodes")
    def nodes_joined(self, obj: ClusterAccess) -> str:
        came = (obj.inventory or {}).get("joined") or []
        if not came:
            return "none"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "", "<li>{} ({}) joined by {} ({})</li>",
                ((j.get("name"), j.get("address"), j.get("at"), j.get("state")) for j in came),
            ),
        )  # fmt: skip

    @admin.display(description="next scheduled runs")
    def next_scheduled_runs(self, obj: ClusterAccess) -> str:
        upcoming = selectors.next_scheduled_runs(cluster=obj.cluster) if obj.pk else []
        if not upcoming:
            return "no probe schedule for this cluster"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "", "<li>{}: {} ({})</li>",
                ((n.name, n.at.isoformat(timespec="seconds") if n.at else f"none ({n.why_not})", ", ".join(n.probes))
                 for n in upcoming),
            ),
        )  # fmt: skip

    @admin.display(description="API token stored", boolean=True)
    def api_token_stored(self, obj: ClusterAccess) -> bool:
        return obj.has_api_token

    def save_model(self, request: HttpRequest, obj: ClusterAccess, form: Any, change: bool) -> None:
        before = ClusterAccess.objects.filter(pk=obj.pk).values(
            "api_base_url", "settings", "login_host", "login_port").first() if obj.pk else None
        super().save_model(request, obj, form, change)
        notes: list[str] = []
        if before is not None:  # a URL (or login host/port) whose origin changed unbinds the secrets entered for the old one
            notes = secret_binding.access_urls_changed(
                access=obj, old_api_base_url=before["api_base_url"], old_settings=before["settings"],
                old_login=(before["login_host"], before["login_port"]),
            )
        if form.cleaned_data.get("clear_api_token"):
            services.cluster_access_set_api_token(access=obj, token="")
        elif form.cleaned_data.get("api_token"):
            services.cluster_access_set_api_token(access=obj, token=form.cleaned_data["api_token"])
            notes = [n for n in notes if "API token was removed" not in n]
        for note in notes:
            self.message_user(request, note, messages.WARNING)

    @admin.action(description="Fetch host keys to pin (shows fingerprints first)")
    def action_fetch_host_keys(
        self, request: HttpRequest, queryset: QuerySet[ClusterAccess]
    ) -> HttpResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one cluster.", messages.ERROR)
            return None
        return HttpResponseRedirect(reverse("admin:probes_clusteraccess_pin", args=[queryset.get().pk]))

    @admin.action(description="Pin a host CA (shows its fingerprint first)")
    def action_pin_host_ca(self, request: HttpRequest, queryset: QuerySet[ClusterAccess]) -> HttpResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one cluster.", messages.ERROR)
            return None
        return HttpResponseRedirect(reverse("admin:probes_clusteraccess_pin_ca", args=[queryset.get().pk]))

    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/pin/", wrap(self.pin_view), name="probes_clusteraccess_pin"),
            path("<int:pk>/pin-ca/", wrap(self.pin_ca_view), name="probes_clusteraccess_pin_ca"),
            *super().get_urls(),
        ]

    def pin_ca_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Paste the provider's host CA public key -> see its type and fingerprint -> confirm to pin.

        Nothing is fetched over the network: the CA key comes from the provider out of band, and
        the analyst compares the fingerprint shown with the one the provider published.
        """
        access = get_object_or_404(ClusterAccess.objects.select_related("cluster"), pk=pk)
        if not self.has_change_permission(request, access):
            return HttpResponseRedirect(reverse("admin:index"))
        public_key = str(request.POST.get("public_key", "")).strip() if request.method == "POST" else ""
        preview = None
        if request.method == "POST":
            try:
                preview = services.host_ca_preview(public_key=public_key)
                if request.POST.get("confirm_fingerprint"):
                    services.host_ca_pin(
                        access=access, public_key=public_key, fingerprint=request.POST["confirm_fingerprint"],
                        user=request.user,
                    )  # fmt: skip
                    self.message_user(
                        request, f"Pinned host CA {preview.fingerprint} for {access.cluster}.", messages.SUCCESS
                    )
                    return HttpResponseRedirect(
                        reverse("admin:probes_hostcapin_changelist") + f"?access__id__exact={access.pk}"
                    )
            except services.ProbeRunError as exc:
                self.message_user(request, str(exc), messages.ERROR)
                preview = None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Pin a host CA for {access.cluster}",
            "access": access,
            "public_key": public_key if preview else "",
            "preview": preview,
            "pinned": list(HostCAPin.objects.filter(access=access).order_by("pk")),
        }
        return TemplateResponse(request, "admin/probes/clusteraccess/pin_host_ca.html", context)

    def pin_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """GET: fetch and show the offered keys. POST: pin exactly the fingerprints ticked."""
        access = get_object_or_404(ClusterAccess.objects.select_related("cluster"), pk=pk)
        if not self.has_change_permission(request, access):
            return HttpResponseRedirect(reverse("admin:index"))
        if request.method == "POST":
            pinned = 0
            for value in request.POST.getlist("pin"):
                host, port, key_type, fingerprint = value.rsplit("|", 3)
                try:
                    services.host_key_pin(
                        cluster=access.cluster, host=host, port=int(port), key_type=key_type,
                        fingerprint=fingerprint, user=request.user,
                    )  # fmt: skip
                except ValueError as exc:
                    self.message_user(request, f"{host}:{port}: {exc}", messages.ERROR)
                    continue
                pinned += 1
            self.message_user(request, f"Pinned {pinned} host key(s) for {access.cluster}.", messages.SUCCESS)
            return HttpResponseRedirect(
                reverse("admin:probes_hostkeypin_changelist") + f"?cluster__id__exact={access.cluster_id}"
            )
        try:
            keys = services.host_keys_fetch(cluster=access.cluster)
        except (services.ProbeRunError, TransportError) as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(reverse("admin:probes_clusteraccess_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Pin host keys for {access.cluster}",
            "access": access,
            "keys": keys,
        }
        return TemplateResponse(request, "admin/probes/clusteraccess/pin_host_keys.html", context)


class TenantAccountForm(forms.ModelForm):
    private_key = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "autocomplete": "off"}),
        help_text="Write-only: OpenSSH or PEM private key. Leave empty to keep the stored one.",
    )
    passphrase = forms.CharField(required=False, widget=SECRET_WIDGET, help_text="Write-only.")
    password = forms.CharField(
        required=False, widget=SECRET_WIDGET,
        help_text="Write-only. The tenant's HTTP login for the metrics and log URLs (with the username, or the "
        "one the settings' http_users name); used for SSH only when no private key is given. It is sent only to "
        "the web addresses and the login host and port set when it is typed: after a URL or login host/port "
        "change, type it again.",
    )

    class Meta:
        model = TenantAccount
        fields = ["cluster", "label", "username"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        has_stored = bool(
            self.instance.pk and (self.instance.private_key_encrypted or self.instance.password_encrypted)
        )
        if not (data.get("private_key") or data.get("password") or has_stored):
            raise forms.ValidationError("Give a private key or a password.")
        return data

    def _post_clean(self) -> None:
        super()._post_clean()
        # The secrets are checked here so that a bad key shows on the form and nothing is saved.
        key = self.cleaned_data.get("private_key") if hasattr(self, "cleaned_data") else None
        if key:
            try:
                check_private_key(key, self.cleaned_data.get("passphrase") or None)
            except TransportError as exc:
                self.add_error("private_key", str(exc))


@admin.register(TenantAccount)
class TenantAccountAdmin(admin.ModelAdmin):
    form = TenantAccountForm
    list_display = ["label", "username", "cluster", "auth_kind", "created_at"]
    list_filter = ["cluster__provider"]
    search_fields = ["label", "username", "cluster__name"]
    list_select_related = ["cluster__provider"]
    readonly_fields = ["password_sent_to"]

    @admin.display(description="Password sent to")
    def password_sent_to(self, obj: TenantAccount) -> str:
        """The origins the password was typed for (web URLs, and ssh://login_host:port for SSH); a URL or
        login host changed since gets it only once it is typed again."""
        if not obj.pk or not obj.password_encrypted:
            return "no password stored"
        origins = list(obj.password_origins or [])
        web = [o for o in origins if not o.startswith("ssh://")]
        ssh = [o for o in origins if o.startswith("ssh://")]
        said = "HTTP login: " + (", ".join(web) or "no web address: type the password again once the metrics and "
                                 "log URLs are set")
        said += "; SSH: " + (", ".join(ssh) or "no login node")
        login = secret_binding.login_origin(ClusterAccess.objects.filter(cluster_id=obj.cluster_id).first())
        if login and not obj.private_key_encrypted and login not in ssh:
            said += (f". Not offered over SSH to the login node {login}: it was entered for another login host or "
                     "port. Type the password again to use it there.")
        return said

    def save_model(self, request: HttpRequest, obj: TenantAccount, form: Any, change: bool) -> None:
        data = form.cleaned_data
        if data.get("private_key") or data.get("password"):
            services.tenant_account_set_secrets(
                account=obj,
                private_key=data.get("private_key") or None,
                passphrase=data.get("passphrase") or None,
                password=data.get("password") or None,
            )
        else:
            obj.save()


@admin.register(HostKeyPin)
class HostKeyPinAdmin(admin.ModelAdmin):
    """Pins are created only by the ClusterAccess action; here they can be read and removed."""

    list_display = ["host", "port", "key_type", "fingerprint", "cluster", "recorded_by", "recorded_at"]
    list_filter = ["key_type", "cluster__provider"]
    search_fields = ["host", "fingerprint", "cluster__name"]
    list_select_related = ["cluster__provider", "recorded_by"]
    readonly_fields = ["cluster", "host", "port", "key_type", "fingerprint", "recorded_by", "recorded_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(HostCAPin)
class HostCAPinAdmin(admin.ModelAdmin):
    """Host CA pins are created only by the ClusterAccess action; here they are read and removed."""

    list_display = ["fingerprint", "key_type", "access", "recorded_by", "recorded_at"]
    list_filter = ["key_type", "access__cluster__provider"]
    search_fields = ["fingerprint", "access__cluster__name"]
    list_select_related = ["access__cluster__provider", "recorded_by"]
    readonly_fields = ["access", "key_type", "fingerprint", "public_key", "recorded_by", "recorded_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ProbeScheduleForm(forms.ModelForm):
    probes = forms.MultipleChoiceField(choices=probe_choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = ProbeSchedule
        fields = ["name", "cluster", "cycle", "probes", "crontab", "interval", "enabled"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("crontab")) == bool(data.get("interval")):
            raise forms.ValidationError("Choose exactly one of a crontab or an interval.")
        return data


@admin.register(ProbeSchedule)
class ProbeScheduleAdmin(admin.ModelAdmin):
    form = ProbeScheduleForm
    list_display = ["name", "cluster", "probe_list", "crontab", "interval", "enabled", "last_run_at", "next_run_at"]
    list_filter = ["enabled", "cluster__provider"]
    search_fields = ["name", "cluster__name"]
    list_select_related = ["cluster__provider", "crontab", "interval", "periodic_task", *selectors.SCHEDULE_TIMING]
    actions = ["action_run_now"]

    @admin.display(description="probes")
    def probe_list(self, obj: ProbeSchedule) -> str:
        return ", ".join(obj.probes)

    @admin.display(description="last fired")
    def last_run_at(self, obj: ProbeSchedule) -> Any:
        return obj.periodic_task.last_run_at if obj.periodic_task else None

    @admin.display(description="next run")
    def next_run_at(self, obj: ProbeSchedule) -> Any:
        upcoming = selectors.next_scheduled_run_of(schedule=obj)
        return upcoming.at or f"none ({upcoming.why_not})"

    @admin.action(description="Run now")
    def action_run_now(self, request: HttpRequest, queryset: QuerySet[ProbeSchedule]) -> None:
        started: list[int] = []
        try:
            with transaction.atomic():  # all schedules or none
                for schedule in queryset.select_related("cluster", "cycle"):
                    started.extend(run.pk for run in services.probe_schedule_run_now(schedule=schedule))
        except services.QueueUnavailable:
            self.message_user(request, "The queue is unavailable, nothing was started.", messages.ERROR)
            return
        if not started:
            self.message_user(request, "Started no probe run.", messages.WARNING)
            return
        runs = reverse("admin:probes_proberun_changelist") + "?id__in=" + ",".join(map(str, started))
        self.message_user(request, format_html('Started {} probe run(s): <a href="{}">follow them</a> '
                                               "(the run list refreshes itself while they run).", len(started), runs),
                          messages.SUCCESS)


class FindingInline(admin.TabularInline):
    model = Finding
    extra = 0
    can_delete = False
    fields = ["target", "metric", "outcome", "value", "unit", "summary", "attempt"]
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ProbeRun)
class ProbeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "probe_id", "cluster", "status_shown", "progress", "attempt", "flagged", "error_code",
                    "finding_count", "scheduled_for", "finished_at"]  # fmt: skip
    list_filter = ["status", "flagged", "probe_id", "cluster__provider", "cycle"]
    search_fields = ["probe_id", "cluster__name", "error_code", "idempotency_key"]
    list_select_related = ["cluster__provider"]
    date_hierarchy = "scheduled_for"
    inlines = [FindingInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProbeRun]:
        harness_errors = Finding.objects.filter(run=OuterRef("pk"), outcome="error")
        return super().get_queryset(request).annotate(_findings=Count("findings"), _errors=Exists(harness_errors))

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """While any listed run is pending or running, the list refreshes itself (no JavaScript)."""
        response = super().changelist_view(request, extra_context)
        changelist = getattr(response, "context_data", {}).get("cl") if hasattr(response, "context_data") else None
        if changelist is not None:
            response.context_data["runs_active"] = changelist.queryset.filter(
                status__in=[ProbeRun.Status.PENDING, ProbeRun.Status.RUNNING]
            ).count()
        return response

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj: ProbeRun) -> str:
        """"Done" would hide that our harness broke on some targets: those runs say so."""
        if obj.status == ProbeRun.Status.DONE and getattr(obj, "_errors", False):
            return "Done with errors"
        return obj.get_status_display()

    @admin.display(description="findings", ordering="_findings")
    def finding_count(self, obj: ProbeRun) -> int:
        return getattr(obj, "_findings", 0)

    @admin.display(description="progress (targets)")
    def progress(self, obj: ProbeRun) -> str:
        return obj.progress

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in ProbeRun._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Finding)
class FindingAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "probe_id",
        "target",
        "metric",
        "outcome",
        "value",
        "unit",
        "critical",
        "run",
        "created_at",
    ]
    list_filter = ["outcome", "critical", "probe_id", "run__cycle", "run__cluster__provider", "run__cluster"]
    search_fields = ["probe_id", "target", "summary"]
    list_select_related = ["run"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in Finding._meta.fields]
