"""alert_on_fault: does an injected fault reach the customer as an event?

Disruptive. Reads the provider API's event feed (the customer's notification channel in
Opgrade's reference provider API), injects a fault into an idle node and waits for an event about
that node other than the injection itself (the provider noticing: node bad, drained, replacing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from probes.catalog import register
from probes.catalog._support import (
    CatalogProbe,
    fault_clear,
    fault_inject,
    pick_victim,
    provider_call,
    settle,
    wait_for,
)
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target

OWN_EVENTS = {"fault_injected"}


@register
class AlertOnFault(CatalogProbe, definition="alert_on_fault"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        settle(ctx)
        victim = pick_victim(ctx)
        kind = str(self.setting(ctx, "fault"))
        before = provider_call(ctx, "GET", "/v1/events").get("events", [])
        seen = {repr(e) for e in before}  # the feed may be capped, so compare events, not counts

        def alert() -> dict[str, Any] | None:
            events = [
                e for e in provider_call(ctx, "GET", "/v1/events").get("events", []) if repr(e) not in seen
            ]
            return next(
                (e for e in events if e.get("node") == victim and e.get("event") not in OWN_EVENTS), None
            )

        fault_inject(ctx, victim, kind)
        try:
            event, seconds = wait_for(
                alert, timeout_s=float(self.setting(ctx, "alert_timeout_s")), poll_s=1.0
            )
        finally:
            fault_clear(ctx, victim)
        evidence = {"node": victim, "fault": kind, "event": event}
        if event is None:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    evidence=evidence,
                    summary=f"no event about {victim} {seconds:.0f} s after a {kind} fault",
                )
            ]
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"event {event.get('event')!r} about {victim} {seconds:.0f} s after a {kind} fault",
            )
        ]
