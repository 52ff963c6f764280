"""One way to give every registered admin's forms a behaviour: the add/change form, the
list-editable form and every inline's form, wrapped once.

A *form wrapper* takes a form class and returns a subclass (or the class itself when it has
nothing to add). ``config/urls.py`` applies the project's two, after every app has registered
its admins: ``config.admin_text.guarded_form`` (no NUL or bidi control in any field) and
``config.constraint_words.worded_form`` (database constraints checked and said in words).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

FormWrapper = Callable[[type[forms.BaseForm]], type[forms.BaseForm]]
_WRAPPERS = "_opgrade_form_wrappers"


def wrappers_of(admin_object: Any) -> tuple[FormWrapper, ...]:
    """The form wrappers a ModelAdmin (or inline) carries; () when it was never wrapped."""
    return getattr(admin_object, _WRAPPERS, ())


def _apply(form_class: type[forms.BaseForm], wrappers: tuple[FormWrapper, ...]) -> type[forms.BaseForm]:
    for wrap in wrappers:
        form_class = wrap(form_class)
    return form_class


def _wrap_inline(inline: admin.options.InlineModelAdmin, wrappers: tuple[FormWrapper, ...]) -> Any:
    if wrappers_of(inline):
        return inline
    original = inline.get_formset

    def get_formset(request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = original(request, obj, **kwargs)
        formset.form = _apply(formset.form, wrappers)
        return formset

    inline.get_formset = get_formset  # type: ignore[method-assign]
    setattr(inline, _WRAPPERS, wrappers)
    return inline


def wrap_model_admin(model_admin: admin.ModelAdmin, *wrappers: FormWrapper) -> None:
    if wrappers_of(model_admin):
        return
    get_form, get_changelist_form = model_admin.get_form, model_admin.get_changelist_form
    get_inline_instances = model_admin.get_inline_instances

    def wrapped_get_form(request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        return _apply(get_form(request, obj, change=change, **kwargs), wrappers)

    def wrapped_get_changelist_form(request: HttpRequest, **kwargs: Any) -> Any:
        return _apply(get_changelist_form(request, **kwargs), wrappers)

    def wrapped_get_inline_instances(request: HttpRequest, obj: Any = None) -> list[Any]:
        return [_wrap_inline(inline, wrappers) for inline in get_inline_instances(request, obj)]

    model_admin.get_form = wrapped_get_form  # type: ignore[method-assign]
    model_admin.get_changelist_form = wrapped_get_changelist_form  # type: ignore[method-assign]
    model_admin.get_inline_instances = wrapped_get_inline_instances  # type: ignore[method-assign]
    setattr(model_admin, _WRAPPERS, wrappers)


def wrap_admin_forms(site: admin.AdminSite, *wrappers: FormWrapper) -> None:
    for model_admin in site._registry.values():
        wrap_model_admin(model_admin, *wrappers)
