"""manage.py sample_cycle [--slug S] [--providers N] [--seed N]: write a seeded sample cycle.

Evidence for N synthetic providers under the default rubric (see ratings.sample), ready for
``manage.py compute_tiers S``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ratings.sample import sample_cycle_create


class Command(BaseCommand):
    help = "Write a seeded sample cycle (providers, findings, doc reviews, feedback) under the default rubric."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--slug", default="sample-2026q4")
        parser.add_argument("--providers", type=int, default=8)
        parser.add_argument("--seed", type=int, default=20261130)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["providers"] < 1:
            raise CommandError("--providers must be at least 1")
        try:
            cycle = sample_cycle_create(slug=options["slug"], providers=options["providers"], seed=options["seed"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"sample cycle {cycle.slug}: {cycle.providers.count()} providers; next: compute_tiers {cycle.slug}")
