"""History pages in the admin that obey the same rules as the change page.

django-simple-history's own `SimpleHistoryAdmin` loads the object for its history pages
from the history table (skipping the admin's `get_queryset`), checks only the model-level
view-or-change permission, and saves whatever a POST to a version's page holds ("Revert")
through a form that ignores the change permission. That let an analyst with view-only
access move a provider account to another provider, and let a reviewer read (and wipe) a
peer's blind review through its history.

`GuardedHistoryAdmin` closes that class of hole:

- every history page resolves its object through `get_object` (so through the admin's
  own `get_queryset`, which narrows rows per role) and then checks the object-level view
  permission, exactly as the change page does; an object the user cannot open in the
  change page gives 404 there too (deleted objects' history lives in the audit events);
- a version's page is read-only: every field is shown, none is editable, and a POST is
  refused with 403. Restoring old values is an edit like any other: through the change
  page, which applies the workflow rules (services, blind review, four eyes) and the
  change permission. `SIMPLE_HISTORY_REVERT_DISABLED` hides the button everywhere.
- a version's page shows what can be read off a stored version: the change page's fields,
  less those that exist only on an editing form (a reviewer's `citations_text` box, which
  no model, admin or version has as an attribute, made the page answer 500). An admin
  says what to show instead with `history_field_substitutes`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin import helpers
from django.contrib.admin.utils import flatten_fieldsets, label_for_field, unquote
from django.core.exceptions import PermissionDenied
from django.forms import modelform_factory
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from simple_history.admin import SimpleHistoryAdmin


class GuardedHistoryAdmin(SimpleHistoryAdmin):
    """SimpleHistoryAdmin whose history pages apply the change page's queryset and permissions."""

    # Form-only field of the change page -> read-only field that shows the same thing on a version.
    history_field_substitutes: dict[str, str] = {}

    def history_fieldsets(self, request: HttpRequest, obj: Any) -> list[tuple[Any, dict[str, Any]]]:
        """The change page's fieldsets for this user, every entry one a version can be read with."""
        fieldsets = []
        for name, options in self.get_fieldsets(request, obj):
            fields = []
            for field in options.get("fields", ()):
                if isinstance(field, (list, tuple)):  # a row of fields side by side
                    row = [f for f in (self._history_field(f) for f in field) if f]
                    if row:
                        fields.append(tuple(row))
                elif resolved := self._history_field(field):
                    fields.append(resolved)
            fieldsets.append((name, {**options, "fields": fields}))
        return fieldsets

    def _history_field(self, name: str) -> str | None:
        """`name`, its substitute, or None where it exists only on an editing form."""
        name = self.history_field_substitutes.get(name, name)
        try:
            label_for_field(name, self.model, model_admin=self)
        except AttributeError:
            return None
        return name

    def history_visible_object(self, request: HttpRequest, object_id: str) -> Any:
        """The live object, if this user may open it in the change page; else 404/403."""
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404("No such object, or not yours to see.")
        if not self.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        return obj

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict | None = None) -> HttpResponse:
        self.history_visible_object(request, object_id)
        return super().history_view(request, object_id, extra_context)

    def history_form_view(
        self, request: HttpRequest, object_id: str, version_id: str, extra_context: dict | None = None
    ) -> HttpResponse:
        """One earlier version, read-only, showing the fields the change page shows this user."""
        if request.method not in {"GET", "HEAD"}:
            raise PermissionDenied("Reverting from the history is disabled: edit through the change page.")
        current = self.history_visible_object(request, object_id)
        history = getattr(self.model, self.model._meta.simple_history_manager_attribute)
        record = history.filter(history_id=version_id).first() if str(version_id).isdigit() else None
        if record is None or getattr(record, self.model._meta.pk.attname) != current.pk:
            raise Http404("No such version of this object.")
        version = record.instance
        version._state.adding = False
        fieldsets = self.history_fieldsets(request, current)
        form = modelform_factory(self.model, fields=[])(instance=version)
        admin_form = helpers.AdminForm(
            form, fieldsets, {}, readonly_fields=flatten_fieldsets(fieldsets), model_admin=self
        )
        opts = self.model._meta
        prefix = f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}"
        context = {
            **self.admin_site.each_context(request),
            "title": self.history_form_view_title(request, current),
            "adminform": admin_form,
            "object_id": object_id,
            "original": current,
            "is_popup": False,
            "media": self.media + admin_form.media,
            "errors": helpers.AdminErrorList(form, []),
            "app_label": opts.app_label,
            "original_opts": opts,
            "opts": opts,
            "changelist_url": reverse(f"{prefix}_changelist"),
            "change_url": reverse(f"{prefix}_change", args=(current.pk,)),
            "history_url": reverse(f"{prefix}_history", args=(current.pk,)),
            "change_history": False,
            "revert_disabled": True,
            "add": False,
            "change": True,
            "has_view_permission": True,
            "has_add_permission": False,
            "has_change_permission": False,
            "has_delete_permission": False,
            "has_editable_inline_admin_formsets": False,
            "has_file_field": False,
            "has_absolute_url": False,
            "form_url": "",
            "save_as": False,
            "save_on_top": False,
            "content_type_id": self.content_type_model_cls.objects.get_for_model(self.model).id,
            **(extra_context or {}),
        }
        return TemplateResponse(request, self.object_history_form_template, context)

    def revert_disabled(self, request: HttpRequest, obj: Any = None) -> bool:
        return True

    def history_form_view_title(self, request: HttpRequest, obj: Any) -> str:
        return f"An earlier version of {obj} (read-only)"
