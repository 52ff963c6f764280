"""``manage.py grade``: import, export, diff, freeze and clone grade definitions; show a cycle's sheet.

    manage.py grade import grades/data/testbed-slurm-t1.yaml --freeze
    manage.py grade export testbed-slurm-t1@2026.1 [-o FILE]
    manage.py grade diff h100-sxm-managed-a@2026.1 h100-sxm-managed-b@2026.1
    manage.py grade freeze testbed-slurm-t1@2026.2
    manage.py grade clone testbed-slurm-t1@2026.1 --version 2026.2
    manage.py grade sheet CYCLE-SLUG

Grades are named ``NAME@VERSION`` or by id. Like ``manage.py rubric``, each subcommand parses its
arguments, calls one service or selector and prints the result; errors exit non-zero with the message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from config.immutability import ImmutableError
from grades import selectors, services
from grades.spec import GradeFormatError
from providers.models import Cycle


class Command(BaseCommand):
    help = "Import, export, diff, freeze and clone grade definitions; print a cycle's grade sheet."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help="Import a grade YAML file (idempotent).")
        imp.add_argument("file")
        imp.add_argument("--freeze", action="store_true", help="Freeze the grade after importing it.")
        exp = sub.add_parser("export", help="Print a grade as canonical YAML.")
        exp.add_argument("ref", help="NAME@VERSION or id")
        exp.add_argument("-o", "--output", help="Write to this file instead of stdout.")
        diff = sub.add_parser("diff", help="Show what changed from grade A to grade B.")
        diff.add_argument("a")
        diff.add_argument("b")
        frz = sub.add_parser("freeze", help="Validate and freeze a draft grade.")
        frz.add_argument("ref")
        cln = sub.add_parser("clone", help="Clone a grade into a new draft.")
        cln.add_argument("ref")
        cln.add_argument("--version", dest="new_version", required=True)
        cln.add_argument("--name", dest="new_name")
        sheet = sub.add_parser("sheet", help="Which clusters of a cycle qualify for which grade (latest scores).")
        sheet.add_argument("cycle", help="cycle slug")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except (GradeFormatError, services.GradeConflictError, ImmutableError, selectors.GradeNotFound) as exc:
            raise CommandError(str(exc)) from exc

    def _import(self, options: dict[str, Any]) -> None:
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot read: {exc}") from exc
        result = services.grade_definition_import(text=text, filename=str(path), freeze=options["freeze"])
        self.stdout.write(result.message)

    def _export(self, options: dict[str, Any]) -> None:
        text = selectors.grade_definition_export(grade=selectors.grade_definition_get(ref=options["ref"]))
        if options.get("output"):
            Path(options["output"]).write_text(text, encoding="utf-8")
        else:
            self.stdout.write(text, ending="")  # untouched: the export round-trips byte for byte

    def _diff(self, options: dict[str, Any]) -> None:
        a = selectors.grade_definition_get(ref=options["a"])
        b = selectors.grade_definition_get(ref=options["b"])
        self.stdout.write(selectors.grade_definition_diff(a=a, b=b).as_text(), ending="")

    def _freeze(self, options: dict[str, Any]) -> None:
        grade = selectors.grade_definition_get(ref=options["ref"])
        was = grade.is_frozen
        grade = services.grade_definition_freeze(grade=grade)
        self.stdout.write(f"{grade.label} {'was already frozen' if was else 'frozen'}; fingerprint sha256:{grade.fingerprint}")

    def _clone(self, options: dict[str, Any]) -> None:
        source = selectors.grade_definition_get(ref=options["ref"])
        clone = services.grade_definition_clone(source=source, version=options["new_version"], name=options.get("new_name"))
        self.stdout.write(f"cloned {source.label} into draft {clone.label} (id {clone.pk})")

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
