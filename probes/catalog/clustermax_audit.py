"""clustermax_audit: run SemiAnalysis's open-source ClusterMAX audit (``cmax``) on the login node.

Clusters may have no internet, so Opgrade brings the audit with it: the ``clustermax`` wheel and
its dependencies (fetched once by ``scripts/fetch-cmax-wheels.sh`` into ``var/wheels/cmax``) are
uploaded over SFTP into ``~/.opgrade-cmax/<version>/wheels`` as the tenant, installed into a venv
there with ``pip --no-index``, and ``cmax audit --local -y security`` runs with ``HOME`` pointed
into that directory. Its ``audit.values.json`` (schema_version 1) is read back and turned into
checks (probes/parsers/cmax.py); the finding's value is the share of decided checks that pass.

The audit's scripts call an outside geo-IP service (ipinfo.io). The probe refuses to run
(``not_applicable``) unless the login node has no default route, i.e. no route out, as in the
testbed's namespaces; it never lets the audit reach the internet.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.cmax import parse_audit_values
from probes.parsers.redaction import clean
from probes.transport import Command

WHEEL_DIR = Path(__file__).resolve().parents[2] / "var" / "wheels" / "cmax"
ROUTES = Command(
    "command -v ip >/dev/null 2>&1 || echo NO-IP-TOOL; ip -4 route show default 2>/dev/null; "
    "ip -6 route show default 2>/dev/null; true"
)
HOME = Command("cd && pwd")


def prepare(base: str) -> Command:
    return Command(
        "mkdir -p {wheels} {home} && chmod 700 {base}",
        base=base,
        wheels=f"{base}/wheels",
        home=f"{base}/home",
    )


def install(base: str, version: str) -> Command:
    return Command(
        "cd {base} && ( test -x venv/bin/cmax || python3 -m venv venv ) && "
        "venv/bin/pip install -q --disable-pip-version-check --no-index --find-links wheels {req} && "
        "venv/bin/cmax --version",
        base=base,
        req=f"clustermax=={version}",
    )


def audit(base: str, profile: str) -> Command:
    return Command(
        "cd {base} && rm -rf home/.clustermax && HOME={home} venv/bin/cmax audit --local -y {profile} > audit.report 2>&1; "
        "echo exit=$?; ls -1d home/.clustermax/audit/*/ 2>/dev/null | tail -n 1",
        base=base,
        home=f"{base}/home",
        profile=profile,
    )


@register
class ClustermaxAudit(CatalogProbe, definition="clustermax_audit"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        version = str(self.setting(ctx, "cmax_version"))
        profile = str(self.setting(ctx, "profile"))
        wheel_dir = Path(str(ctx.settings.get("cmax_wheel_dir") or WHEEL_DIR))
        wheels = sorted(wheel_dir.glob("*.whl"))
        if not any(w.name.startswith(f"clustermax-{version}-") for w in wheels):
            raise Abort(
                Outcome.ERROR,
                f"no clustermax {version} wheel in {wheel_dir}: run scripts/fetch-cmax-wheels.sh",
            )
        routes = run(ctx, target.endpoint, ROUTES, timeout_s=15, what="route check")
        if routes.stdout.strip():
            raise Abort(
                Outcome.NOT_APPLICABLE,
                "the login node has a route out (or no ip tool to prove it has none); cmax would call ipinfo.io",
                ctx.evidence(routes),
            )
        home = run(ctx, target.endpoint, HOME, timeout_s=10, what="home").stdout.strip()
        if not home.startswith("/"):
            raise Abort(Outcome.ERROR, "could not find the tenant's home on the login node")
        base = f"{home}/.opgrade-cmax/{version}"
        run(ctx, target.endpoint, prepare(base), timeout_s=15, what="mkdir")
        conn = ctx.ssh(target.endpoint)  # type: ignore[arg-type]
        for wheel in wheels:
            conn.put(wheel, f"{base}/wheels/{wheel.name}", mode=0o644)
        installed = run(ctx, target.endpoint, install(base, version), timeout_s=240, what="pip install")
        if not installed.ok:
            raise Abort(
                Outcome.ERROR, "could not install cmax from the uploaded wheels", ctx.evidence(installed)
            )
        ran = run(
            ctx,
            target.endpoint,
            audit(base, profile),
            timeout_s=max(60, self.timeout_s - 120),
            what="cmax audit",
        )
        out_dir = ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ""
        if not out_dir.startswith("home/.clustermax/audit/"):
            raise Abort(Outcome.ERROR, "cmax wrote no audit directory", ctx.evidence(ran))
        data, truncated = conn.get(f"{base}/{out_dir.rstrip('/')}/audit.values.json", max_bytes=2 << 20)
        report, _ = conn.get(f"{base}/audit.report", max_bytes=64 << 10)
        try:
            result = parse_audit_values(data)
        except ParseError as exc:
            raise Abort(
                Outcome.ERROR, f"unreadable audit.values.json: {exc}", {"truncated": truncated}
            ) from exc
        checks = [{"id": c.check_id, "status": c.status, "observed": c.observed[:160]} for c in result.checks]
        evidence = {
            "cmax_version": version,
            "profile": profile,
            "installed": installed.stdout.strip()[-80:],
            "checks": checks,
            "critical_failures": [c.check_id for c in result.critical_failures],
            "report_tail": clean(
                "\n".join(report.decode("utf-8", "replace").splitlines()[-40:]),
                secrets=ctx.secrets(),
                max_bytes=3000,
            ),
        }
        counts = {s: result.count(s) for s in ("pass", "fail", "warn", "unknown", "not_applicable")}
        evidence["counts"] = counts
        if result.pass_ratio is None:
            return [
                self.finding(
                    target,
                    Outcome.NOT_APPLICABLE,
                    evidence=evidence,
                    summary="cmax decided no check on this host (all skipped or unknown)",
                )
            ]
        ratio = round(result.pass_ratio, 4)
        outcome, ref = self.judge(ctx, ratio)
        failed = [c.check_id for c in result.checks if c.status in ("fail", "warn")]
        return [
            self.finding(
                target,
                outcome,
                value=ratio,
                evidence=evidence,
                threshold_ref=ref,
                summary=f"cmax {profile}: {counts['pass']} pass, {counts['fail']} fail, "
                f"{counts['warn']} warn, {counts['unknown']} unknown"
                + (f"; failing: {', '.join(failed[:4])}" if failed else ""),
            )
        ]
