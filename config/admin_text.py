"""Every admin form refuses NUL and bidirectional-control characters, as the API and imports do.

``config.text`` states the rule. The API applies it in its parsers, the CSV and YAML importers
per cell and the portal forms through a validator; the admin's model forms were the one entry
point left (Django's form ``CharField`` refuses a NUL, but not a bidi override, and a JSON
field refuses neither inside its strings). ``guarded_form`` is applied, once, to every
registered ModelAdmin's add/change form, its list-editable form and its inlines' forms
(by ``config.admin_forms``, from ``config/urls.py``), so a field
holding such a character gets a form error naming the position and nothing is written.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Model

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
