"""`manage.py feedback_import CYCLE FILE [--dry-run]`: import a customer-survey CSV export.

Every row is validated first; bad rows are listed with their line numbers and the
command exits non-zero without writing anything. Columns: see reviews.feedback_csv.
Progress goes to stdout every 5,000 rows, while validating and while writing
("survey.csv: written 10,000 rows of 50,000 (20%), 3.1 s").
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from providers.models import Cycle
from reviews.feedback_csv import COLUMNS, FeedbackFileError, feedback_csv_decode
from reviews.services import feedback_import


class Command(BaseCommand):
    help = f"Import customer feedback from a CSV with columns: {', '.join(COLUMNS)}."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("cycle", help="Cycle slug.")
        parser.add_argument("file", type=Path, help="CSV file: UTF-8, UTF-16 with a BOM or Latin-1; comma, semicolon or tab separated.")
        parser.add_argument("--dry-run", action="store_true", help="Validate and report; write nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        cycle = Cycle.objects.filter(slug=options["cycle"]).select_related("rubric_version").first()
        if cycle is None:
            raise CommandError(f"no cycle with slug {options['cycle']!r}")
        path: Path = options["file"]
        try:
            decoded = feedback_csv_decode(path.read_bytes())
        except FileNotFoundError as exc:
            raise CommandError(f"{path}: no such file") from exc
        except FeedbackFileError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        text = decoded.text
        if decoded.encoding != "UTF-8":
            self.stdout.write(f"{path.name}: read as {decoded.encoding}")
        started = time.monotonic()

        def progress(phase: str, done: int, total: int) -> None:
            of = f" of {total:,} ({done / total:.0%})" if total else ""
            self.stdout.write(f"{path.name}: {phase} {done:,} rows{of}, {time.monotonic() - started:.1f} s")
            self.stdout.flush()

        report = feedback_import(cycle=cycle, text=text, filename=path.name, by=None, dry_run=options["dry_run"],
                                 progress=progress)
        for error in report.parsed.errors:
            self.stderr.write(f"{path.name}: {error}")
        if not report.ok:
            raise CommandError(
                f"{len(report.parsed.errors)} problem(s) found; nothing was written"
            )
        if report.dry_run:
            self.stdout.write(f"dry run: {len(report.parsed.rows)} rows valid; nothing written")
        else:
            self.stdout.write(f"imported {report.written} rows (import #{report.batch_id})")
