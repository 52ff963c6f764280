"""manage.py compute_tiers CYCLE_SLUG [--seed N]: score a cycle and print its tiers.

Prints one line per provider (tier, tier probabilities, composite with its confidence
interval, coverage, flags), then the snapshot's content hash. The same evidence and seed
print the same hash every time.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from providers.models import Cycle
from ratings.engine_types import TIERS, ScoringInputError
from ratings.services import cycle_scores_compute

SHORT = {"platinum": "Pt", "gold": "Au", "silver": "Ag", "bronze": "Br", "underperforming": "Up"}


class Command(BaseCommand):
    help = "Score a cycle with the bootstrap engine, store the snapshot and print tiers and its hash."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("cycle", help="cycle slug")
        parser.add_argument("--seed", type=int, default=None, help="bootstrap seed (default: from the slug)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            cycle = Cycle.objects.select_related("rubric_version").get(slug=options["cycle"])
        except Cycle.DoesNotExist:
            raise CommandError(f"no cycle with slug {options['cycle']!r}") from None
        try:
            snapshot = cycle_scores_compute(cycle=cycle, seed=options["seed"])
        except ScoringInputError as exc:
            raise CommandError(f"cannot score {cycle.slug}: {exc}") from exc
        result = snapshot.result
        self.stdout.write(
            f"cycle {cycle.slug}  rubric {result['rubric_name']} {result['rubric_version']}  "
            f"engine {result['engine_version']}  seed {result['seed']}  B={result['bootstrap_size']}"
        )
        probs_header = " ".join(f"{SHORT[t]:>5}" for t in TIERS)
        self.stdout.write(
            f"{'provider':<24} {'tier':<16} {probs_header}  {'composite':>9} {'CI':>15} {'cov':>5}  flags"
        )
        for p in result["providers"]:
            probs = dict(p["probabilities"])
            cells = " ".join(f"{probs[t]:>5.2f}" if t in probs else f"{'-':>5}" for t in TIERS)
            composite = "-" if p["composite"] is None else f"{p['composite']:.3f}"
            ci = "-" if p["ci_low"] is None else f"[{p['ci_low']:.3f}, {p['ci_high']:.3f}]"
            tier = p["tier"] + ("*" if p["hysteresis_held"] else "")
            self.stdout.write(
                f"{p['provider']:<24} {tier:<16} {cells}  {composite:>9} {ci:>15} {p['coverage']:>5.2f}  "
                f"{','.join(p['flags'])}"
            )
        self.stdout.write(f"snapshot {snapshot.pk} inputs {snapshot.inputs_hash}")
        self.stdout.write(f"snapshot hash {snapshot.content_hash}")
