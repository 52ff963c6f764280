"""``manage.py rubric``: import, export, diff, freeze and clone rubric versions.

    manage.py rubric import rubric/data/opgrade-2026.1.yaml --freeze
    manage.py rubric export opgrade@2026.1 [-o FILE]
    manage.py rubric diff opgrade@2026.1 opgrade@2026.2
    manage.py rubric freeze opgrade@2026.2
    manage.py rubric clone opgrade@2026.1 --version 2026.2

Versions are named ``NAME@VERSION`` or by id. The verbs are ``rubric.versioned``'s command (the
same as ``manage.py grade``'s); each calls the one service or selector named here and prints the
result; errors exit non-zero with the message.
"""

from __future__ import annotations

from typing import Any

from rubric.models import RubricVersion
from rubric.selectors import rubric_version_diff, rubric_version_export, rubric_version_get
from rubric.services import rubric_version_clone, rubric_version_freeze, rubric_version_import
from rubric.versioned import VersionedDocumentCommand
from rubric.yaml_format import RubricDiff


class Command(VersionedDocumentCommand):
    help = "Import, export, diff, freeze and clone rubric versions (see rubric/README.md)."
    kind = "rubric"
    thing = "version"

    def get(self, ref: str) -> RubricVersion:
        return rubric_version_get(ref=ref)

    def import_text(self, *, text: str, filename: str, freeze: bool) -> str:
        return rubric_version_import(text=text, filename=filename, freeze=freeze).message

    def export(self, document: Any) -> str:
        return rubric_version_export(rubric_version=document)

    def diff(self, a: Any, b: Any) -> RubricDiff:
        return rubric_version_diff(a=a, b=b)

    def freeze(self, document: Any) -> RubricVersion:
        return rubric_version_freeze(rubric_version=document)

    def clone(self, source: Any, *, version: str, name: str | None) -> RubricVersion:
        return rubric_version_clone(source=source, version=version, name=name)
