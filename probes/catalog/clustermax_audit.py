"""clustermax_audit: run SemiAnalysis's open-source ClusterMAX audit (``cmax``) on the login node.

Clusters may have no internet, so Opgrade brings the audit with it: the ``clustermax`` wheel and
its dependencies (fetched once by ``scripts/fetch-cmax-wheels.sh`` into ``var/wheels/cmax``) are
uploaded over SFTP into ``~/.opgrade-cmax/<version>/wheels`` as the tenant, installed into a venv
there with ``pip --no-index``, and the **full** audit (``cmax audit --slurm -y``; setting
``profile`` narrows it, e.g. ``security``) runs with ``HOME`` pointed into that directory.

Per check, cmax's own verdict is kept: a small helper (``_cmax_checks.py``, uploaded beside the
venv) asks cmax to grade its ``audit.values.json`` as its report does, and each check id is mapped
to the Opgrade rubric criterion that asks the same question, or listed as unmapped
(probes/thresholds/cmax_checks.yaml), so a reader can compare Opgrade's findings with ClusterMAX's
checklist. GPU/fabric checks on a cluster without GPUs are not_applicable. The finding's value is
the share of decided checks that pass; a failed check ClusterMAX grades critical (BMC reachable,
newer kernel not booted) makes the finding critical.

The audit's scripts call an outside geo-IP service (ipinfo.io). Whether that may happen is a
per-cluster setting, ``clustermax_audit.allow_outbound`` (default false): on a provider's cluster
the audit's own look-ups are the provider's business once the analyst allows them. Without it, a
login node with a default route is not audited (``error``: our choice, not the provider's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.cmax import grade_checks, pass_ratio
from probes.parsers.redaction import clean
from probes.thresholds import cmax_check_map
from probes.transport import Command

HELPER = Path(__file__).resolve().parent / "_cmax_checks.py"
TARGETS = ("slurm", "local", "standalone", "vm", "container", "k8s")
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


def audit(base: str, target: str, profile: str) -> Command:
    """``cmax audit --TARGET -y [PROFILE]``: the full audit without a profile."""
    if target not in TARGETS:
        raise ValueError(f"unknown cmax target {target!r}")
    template = (
        "cd {base} && rm -rf home/.clustermax && HOME={home} venv/bin/cmax audit --{target} -y"
        + (" {profile}" if profile else "")
        + " > audit.report 2>&1; echo exit=$?; ls -1 home/.clustermax/audit/*/audit.values.json 2>/dev/null | tail -n 1"
    )
    values = {"base": base, "home": f"{base}/home", "target": target}
    return Command(template, **values, **({"profile": profile} if profile else {}))


def grade(base: str, values: str) -> Command:
    return Command("cd {base} && venv/bin/python _cmax_checks.py {values}", base=base, values=values)


@register
class ClustermaxAudit(CatalogProbe, definition="clustermax_audit"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        version = str(self.setting(ctx, "cmax_version"))
        profile = str(self.setting(ctx, "profile") or "")
        harness = str(self.setting(ctx, "target") or "slurm")
        wheel_dir = Path(str(ctx.settings.get("cmax_wheel_dir") or WHEEL_DIR))
        wheels = sorted(wheel_dir.glob("*.whl"))
        if not any(w.name.startswith(f"clustermax-{version}-") for w in wheels):
            raise Abort(
                Outcome.ERROR,
                f"no clustermax {version} wheel in {wheel_dir}: run scripts/fetch-cmax-wheels.sh",
            )
        routes = run(ctx, target.endpoint, ROUTES, timeout_s=15, what="route check")
        outbound = bool(routes.stdout.strip())
        if outbound and not bool(self.setting(ctx, "allow_outbound")):
            raise Abort(
                Outcome.ERROR,
                "not run: the login node has a route out (or no ip tool to prove it has none) and this "
                "cluster's settings do not allow cmax's outbound look-ups (clustermax_audit.allow_outbound)",
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
        conn.put(HELPER, f"{base}/_cmax_checks.py", mode=0o644)
        installed = run(ctx, target.endpoint, install(base, version), timeout_s=240, what="pip install")
        if not installed.ok:
            raise Abort(
                Outcome.ERROR, "could not install cmax from the uploaded wheels", ctx.evidence(installed)
            )
        # The full audit and the security profile decide different checks on the same host (the
        # profile reads the kernel and CVE exposure the full run skips): run both, keep each
        # check's decided (worst) verdict.
        profiles = [profile] if profile else ["", "security"]
        budget = max(60, (self.timeout_s - 120) // (2 * len(profiles)))
        graded: list[str] = []
        incomplete = ""
        for prof in profiles:
            harness_now = harness
            ran = run(
                ctx, target.endpoint, audit(base, harness_now, prof), timeout_s=budget, what="cmax audit"
            )
            values = ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ""
            if not values.endswith("/audit.values.json") and harness_now != "local":
                # cmax refuses to publish a cluster audit it could not complete (workers it cannot
                # reach over SSH from the login node, say): keep why, and audit the login node alone
                report, _ = conn.get(f"{base}/audit.report", max_bytes=64 << 10)
                lines = report.decode("utf-8", "replace").splitlines()
                incomplete = clean(
                    "\n".join(line for line in lines if "ERROR" in line or "incomplete" in line)[-600:],
                    secrets=ctx.secrets(),
                    max_bytes=600,
                )
                harness_now = "local"
                ran = run(
                    ctx, target.endpoint, audit(base, harness_now, prof), timeout_s=budget, what="cmax audit"
                )
                values = ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ""
            if not values.endswith("/audit.values.json"):
                raise Abort(
                    Outcome.ERROR,
                    f"cmax {prof or 'full'} audit wrote no audit.values.json",
                    ctx.evidence(ran),
                )
            verdicts = run(
                ctx,
                target.endpoint,
                grade(base, f"{base}/{values}"),  # cmax reads the harness from the values file
                timeout_s=60,
                what="cmax grading",
            )
            graded.append(verdicts.stdout)
        harness = harness_now
        report, _ = conn.get(f"{base}/audit.report", max_bytes=64 << 10)
        gpu_cluster = int(ctx.facts.get("gpu_count") or 0) > 0
        try:
            checks = grade_checks(graded, cmax_check_map(), gpu_cluster=gpu_cluster)
        except ParseError as exc:
            raise Abort(
                Outcome.ERROR,
                f"could not read cmax's per-check verdicts: {exc}",
                {"verdicts": [clean(g, max_bytes=1000) for g in graded]},
            ) from exc
        counts = Counter(c.outcome for c in checks)
        by_criterion: dict[str, dict[str, int]] = {}
        for c in checks:
            by_criterion.setdefault(c.criterion, Counter())[c.outcome] += 1  # type: ignore[index]
        evidence = {
            "cmax_version": version,
            "target": harness,
            **({"cluster_audit_incomplete": incomplete} if incomplete else {}),
            "profiles": [p or "full" for p in profiles],
            "outbound_route": outbound,
            "installed": installed.stdout.strip()[-80:],
            "checks": [c.as_evidence() for c in checks],
            "by_criterion": {k: dict(v) for k, v in sorted(by_criterion.items())},
            "unmapped": [c.check_id for c in checks if c.criterion == "unmapped"],
            "counts": dict(counts),
            "critical_failures": [c.check_id for c in checks if c.critical],
            "report_tail": clean(
                "\n".join(report.decode("utf-8", "replace").splitlines()[-40:]),
                secrets=ctx.secrets(),
                max_bytes=3000,
            ),
        }
        ratio = pass_ratio(checks)
        if ratio is None:
            return [
                self.finding(
                    target,
                    Outcome.NOT_APPLICABLE,
                    evidence=evidence,
                    summary="cmax decided no check on this cluster (all skipped or not applicable)",
                )
            ]
        ratio = round(ratio, 4)
        outcome, ref = self.judge(ctx, ratio)
        critical = [c.check_id for c in checks if c.critical]
        failed = [c.check_id for c in checks if c.outcome in ("fail", "warn")]
        if critical:
            outcome = Outcome.FAIL
        return [
            self.finding(
                target,
                outcome,
                value=ratio,
                evidence=evidence,
                threshold_ref=ref,
                critical=bool(critical),
                summary=f"cmax {' + '.join(p or 'full' for p in profiles)} audit ({harness}): {counts['pass']} pass, {counts['fail']} fail, "
                f"{counts['warn']} warn, {counts['not_applicable']} n/a"
                + (f"; critical: {', '.join(critical)}" if critical else "")
                + (f"; failing: {', '.join(failed[:4])}" if failed else ""),
            )
        ]
