"""``manage.py grade``: import, export, diff, freeze and clone grade definitions; show a cycle's sheet.

    manage.py grade import grades/data/testbed-slurm-t1.yaml --freeze
    manage.py grade export testbed-slurm-t1@2026.1 [-o FILE]
    manage.py grade diff h100-sxm-managed-a@2026.1 h100-sxm-managed-b@2026.1
    manage.py grade freeze testbed-slurm-t1@2026.2
    manage.py grade clone testbed-slurm-t1@2026.1 --version 2026.2
    manage.py grade sheet CYCLE-SLUG

Grades are named ``NAME@VERSION`` or by id. The verbs but ``sheet`` are ``rubric.versioned``'s command
(the same as ``manage.py rubric``'s); each calls the one service or selector named here and prints
the result; errors exit non-zero with the message.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from grades import selectors, services
from grades.models import GradeDefinition
from grades.spec import GradeDiff
from providers.models import Cycle
from rubric.versioned import VersionedDocumentCommand


class Command(VersionedDocumentCommand):
    help = "Import, export, diff, freeze and clone grade definitions; print a cycle's grade sheet."
    kind = "grade"
    thing = "grade"

    def get(self, ref: str) -> GradeDefinition:
        return selectors.grade_definition_get(ref=ref)

    def import_text(self, *, text: str, filename: str, freeze: bool) -> str:
        return services.grade_definition_import(text=text, filename=filename, freeze=freeze).message

    def export(self, document: Any) -> str:
        return selectors.grade_definition_export(grade=document)

    def diff(self, a: Any, b: Any) -> GradeDiff:
        return selectors.grade_definition_diff(a=a, b=b)

    def freeze(self, document: Any) -> GradeDefinition:
        return services.grade_definition_freeze(grade=document)

    def clone(self, source: Any, *, version: str, name: str | None) -> GradeDefinition:
        return services.grade_definition_clone(source=source, version=version, name=name)

    def add_actions(self, sub: Any) -> None:
        sheet = sub.add_parser("sheet", help="Which clusters of a cycle qualify for which grade (latest scores).")
        sheet.add_argument("cycle", help="cycle slug")

    def _sheet(self, options: dict[str, Any]) -> None:
        cycle = Cycle.objects.filter(slug=options["cycle"]).first()
        if cycle is None:
            raise CommandError(f"no cycle '{options['cycle']}'")
        for _row, grade, results in selectors.grade_eligibility(cycle=cycle):
            self.stdout.write(f"{grade.label}: {grade.title}")
            for e in results:
                status = "QUALIFIES" if e.qualifies else "near miss" if e.near_miss else "no"
                self.stdout.write(f"  {e.cluster}: {status}")
                for c in e.shortfalls if not e.qualifies else ():
                    how = f": {c.gap_text}" if c.gap_text else ""
                    self.stdout.write(f"    {c.verdict.value} {c.requirement.key} ({c.evidence}){how}")
