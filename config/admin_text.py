"""Every admin form refuses NUL and bidirectional-control characters, as the API and imports do.

``config.text`` states the rule. The API applies it in its parsers, the CSV and YAML importers
per cell and the portal forms through a validator; the admin's model forms were the one entry
point left (Django's form ``CharField`` refuses a NUL, but not a bidi override, and a JSON
field refuses neither inside its strings). ``guard_admin_text(site)`` wraps, once, every
registered ModelAdmin's add/change form, its list-editable form and its inlines' forms, so
a field holding such a character gets a form error naming the position and nothing is
written. It is called from ``config/urls.py``, after every app has registered its admins.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from config.text import find_unsafe_text

_GUARD_FLAG = "_opgrade_text_guard"


def _text_problems(cleaned: dict[str, Any]) -> dict[str, str]:
    problems: dict[str, str] = {}
    for name, value in cleaned.items():
        if isinstance(value, Model) or value is None:
            continue
        problem = find_unsafe_text(value)
        if problem:
            problems[name] = problem.removeprefix("value ")
    return problems


def guarded_form(form_class: type[forms.BaseForm]) -> type[forms.BaseForm]:
    """A subclass of ``form_class`` whose ``clean`` refuses unsafe text in any field."""
    if getattr(form_class, _GUARD_FLAG, False):
        return form_class

    def clean(self: forms.BaseForm) -> Any:
        cleaned = super(guarded, self).clean()
        data = cleaned if isinstance(cleaned, dict) else self.cleaned_data
        for name, problem in _text_problems(dict(data)).items():
            self.add_error(name if name in self.fields else None, f"This text {problem}.")
        return cleaned

    guarded = type(form_class.__name__, (form_class,), {"clean": clean, _GUARD_FLAG: True, "__module__": form_class.__module__})
    return guarded


def _guard_inline(inline: admin.options.InlineModelAdmin) -> admin.options.InlineModelAdmin:
    if getattr(inline, _GUARD_FLAG, False):
        return inline
    original = inline.get_formset

    def get_formset(request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = original(request, obj, **kwargs)
        formset.form = guarded_form(formset.form)
        return formset

    inline.get_formset = get_formset  # type: ignore[method-assign]
    setattr(inline, _GUARD_FLAG, True)
    return inline


def guard_model_admin(model_admin: admin.ModelAdmin) -> None:
    if getattr(model_admin, _GUARD_FLAG, False):
        return
    get_form = model_admin.get_form
    get_changelist_form = model_admin.get_changelist_form
    get_inline_instances = model_admin.get_inline_instances

    def guarded_get_form(request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        return guarded_form(get_form(request, obj, change=change, **kwargs))

    def guarded_get_changelist_form(request: HttpRequest, **kwargs: Any) -> Any:
        return guarded_form(get_changelist_form(request, **kwargs))

    def guarded_get_inline_instances(request: HttpRequest, obj: Any = None) -> list[Any]:
        return [_guard_inline(inline) for inline in get_inline_instances(request, obj)]

    model_admin.get_form = guarded_get_form  # type: ignore[method-assign]
    model_admin.get_changelist_form = guarded_get_changelist_form  # type: ignore[method-assign]
    model_admin.get_inline_instances = guarded_get_inline_instances  # type: ignore[method-assign]
    setattr(model_admin, _GUARD_FLAG, True)


def guard_admin_text(site: admin.AdminSite) -> None:
    for model_admin in site._registry.values():
        guard_model_admin(model_admin)
