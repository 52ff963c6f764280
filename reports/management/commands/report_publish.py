"""Publish the tier report of a cycle from its latest score snapshot, in one step.

    manage.py report_publish 2026-q4 --as pat
    manage.py report_publish 2026-q4 --as pat --snapshot 12 --correction "Alpha's NCCL run was mis-keyed."

Builds a draft from the snapshot, opens fact-check and publishes it as the given user
(who must be a publisher). If the cycle already has a published report with the same
content it says so and changes nothing; with different content it refuses unless
--correction gives the public notice, in which case the new report supersedes the old.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.urls import reverse

from providers.models import Cycle
from ratings.models import ScoreSnapshot
from reports import services
from reports.errors import ReportError
from reports.models import Report


class Command(BaseCommand):
    help = "Build, fact-check and publish a cycle's tier report from its latest score snapshot."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("cycle", help="cycle slug")
        parser.add_argument("--as", dest="username", required=True, help="the publishing user's username")
        parser.add_argument("--snapshot", type=int, help="score snapshot id (default: the cycle's latest)")
        parser.add_argument("--correction", default="", help="publish as a correction with this public notice")

    def handle(self, *args: Any, cycle: str, username: str, snapshot: int | None, correction: str,
               **options: Any) -> None:
        target = Cycle.objects.filter(slug=cycle).first()
        if target is None:
            raise CommandError(f"no cycle {cycle!r}")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        snapshots = ScoreSnapshot.objects.filter(cycle=target).order_by("-created_at", "-id")
        chosen = snapshots.filter(pk=snapshot).first() if snapshot else snapshots.first()
        if chosen is None:
            raise CommandError(f"cycle {cycle} has no score snapshot{f' {snapshot}' if snapshot else ''}; compute scores first")
        live = Report.objects.filter(cycle=target, status=Report.Status.PUBLISHED).first()
        try:
            with transaction.atomic():
                draft = services.report_draft_create_from_snapshot(snapshot=chosen, user=user)
                if live is not None and live.content_hash == draft.content_hash:
                    transaction.set_rollback(True)  # drop the duplicate draft
                    unchanged = True
                else:
                    unchanged = False
                if not unchanged and live is not None and not correction:
                    raise CommandError(
                        f"cycle {cycle} already has published report #{live.pk} with other content; "
                        "pass --correction 'public notice' to supersede it"
                    )
                if unchanged:
                    report = live
                elif live is not None:
                    report = services.report_correct(report=live, replacement=draft, notice=correction, user=user)
                else:
                    services.report_fact_check_open(report=draft, user=user)
                    report = services.report_publish(report=draft, user=user)
        except ReportError as exc:
            raise CommandError(str(exc)) from exc
        if unchanged:
            self._say(report, "already published with this content; nothing changed")
        else:
            self._say(report, "published" if live is None else f"published, superseding #{live.pk}")

    def _say(self, report: Report, what: str) -> None:
        url = reverse("reports:overview", args=[report.pk])
        self.stdout.write(f"report #{report.pk} for {report.cycle.slug} {what}: {url} (sha256 {report.content_hash})")
