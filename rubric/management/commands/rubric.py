"""``manage.py rubric``: import, export, diff, freeze and clone rubric versions.

    manage.py rubric import rubric/data/opgrade-2026.1.yaml --freeze
    manage.py rubric export opgrade@2026.1 [-o FILE]
    manage.py rubric diff opgrade@2026.1 opgrade@2026.2
    manage.py rubric freeze opgrade@2026.2
    manage.py rubric clone opgrade@2026.1 --version 2026.2

Versions are named ``NAME@VERSION`` or by id. Each subcommand parses its arguments, calls
one service or selector, and prints the result; errors exit non-zero with the message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rubric.models import FrozenRubricError
from rubric.selectors import (
    RubricVersionNotFound,
    rubric_version_diff,
    rubric_version_export,
    rubric_version_get,
)
from rubric.services import (
    RubricConflictError,
    rubric_version_clone,
    rubric_version_freeze,
    rubric_version_import,
)
from rubric.yaml_format import RubricFormatError


class Command(BaseCommand):
    help = "Import, export, diff, freeze and clone rubric versions (see rubric/README.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help="Import a rubric YAML file (idempotent).")
        imp.add_argument("file")
        imp.add_argument("--freeze", action="store_true", help="Freeze the version after importing it.")
        exp = sub.add_parser("export", help="Print a version as canonical YAML.")
        exp.add_argument("ref", help="NAME@VERSION or id")
        exp.add_argument("-o", "--output", help="Write to this file instead of stdout.")
        diff = sub.add_parser("diff", help="Show what changed from version A to version B.")
        diff.add_argument("a")
        diff.add_argument("b")
        frz = sub.add_parser("freeze", help="Validate and freeze a draft version.")
        frz.add_argument("ref")
        cln = sub.add_parser("clone", help="Clone a version into a new draft.")
        cln.add_argument("ref")
        cln.add_argument("--version", dest="new_version", required=True, help="Label of the new draft.")
        cln.add_argument("--name", dest="new_name", help="Rubric name of the new draft (default: the same).")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            getattr(self, f"_{action}")(options)
        except (RubricFormatError, RubricConflictError, FrozenRubricError, RubricVersionNotFound) as exc:
            raise CommandError(str(exc)) from exc

    def _import(self, options: dict[str, Any]) -> None:
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot read: {exc}") from exc
        result = rubric_version_import(text=text, filename=str(path), freeze=options["freeze"])
        self.stdout.write(result.message)

    def _export(self, options: dict[str, Any]) -> None:
        text = rubric_version_export(rubric_version=rubric_version_get(ref=options["ref"]))
        if options.get("output"):
            Path(options["output"]).write_text(text, encoding="utf-8")
        else:
            # Write the text untouched (no added newline): the export must round-trip byte for byte.
            self.stdout.write(text, ending="")

    def _diff(self, options: dict[str, Any]) -> None:
        a = rubric_version_get(ref=options["a"])
        b = rubric_version_get(ref=options["b"])
        self.stdout.write(rubric_version_diff(a=a, b=b).as_text(), ending="")

    def _freeze(self, options: dict[str, Any]) -> None:
        version = rubric_version_get(ref=options["ref"])
        was_frozen = version.is_frozen
        version = rubric_version_freeze(rubric_version=version)
        state = "was already frozen" if was_frozen else "frozen"
        self.stdout.write(f"{version.label} {state}; fingerprint sha256:{version.fingerprint}")

    def _clone(self, options: dict[str, Any]) -> None:
        source = rubric_version_get(ref=options["ref"])
        clone = rubric_version_clone(source=source, version=options["new_version"], name=options.get("new_name"))
        self.stdout.write(f"cloned {source.label} into draft {clone.label} (id {clone.pk})")
