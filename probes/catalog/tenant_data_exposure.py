"""tenant_data_exposure: is anything tenant B left behind readable by tenant A, anywhere A can look?

The other isolation probes test one path each (the log API, the metrics API, the home directory).
This one looks at the whole file surface a tenant reaches, from the observer's side, whatever a
file's age, name or compression:

1. Tenant B leaves traces the way a tenant does: a file named and filled with a fresh nonce (umask
   022, the usual default) in its home, in every temp and shared place it may write (``/tmp``,
   ``/var/tmp``, ``/dev/shm``, ``settings.shared_dirs``, and every world-writable directory found
   under the scanned locations), a batch job named with the nonce that echoes it (the scheduler's
   spool, accounting and completion logs), a syslog line, and requests to the log and metrics
   APIs carrying the nonce (the web server's access log). B reads each file back (positive control).
2. Tenant A then scans every provider location in ``settings.exposure_roots`` (logs, spool,
   scratch, shared and temp places, the homes' parent, backups, mail) with a fixed, bounded bash
   script (:data:`SCAN_SCRIPT`: files, bytes per file and wall time capped): it lists every entry
   owned by B or named after B, and greps every readable file, rotated and compressed ones
   included (gzip, xz, bzip2, zstd), for B's nonces and B's user name. A's own control nonce, in
   a plain and a gzip file in every location A may write, must be found, or the scan did not look.

Any of B's entries readable by A, or any readable file holding B's nonce or naming B, is a critical
fail listing each path; a scan that hit a bound or missed a control is ``error`` (never ``pass``);
the evidence lists every location as open, denied or absent. The scan runs on the login node and
on the first compute node (their temp places may differ). B's canary files are removed at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from probes.catalog import register
from probes.catalog._support import (
    Abort,
    CatalogProbe,
    endpoint_url,
    http,
    log_query,
    new_nonce,
    run,
    syslog_command,
    tenant_http_auth,
    wait_for,
)
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Requirement, Target
from probes.parsers import ParseError
from probes.parsers.exposure import ExposureScan, parse_exposure_scan
from probes.transport import Command, Endpoint

# As tenant B: a nonce file in its home and in every writable place given or found (world-writable
# directories under the scanned locations, 3 levels deep, at most 20), each read back.
PLANT_SCRIPT = r"""n="$1"; shift; umask 022; export LC_ALL=C
if printf '%s\n' "$n" > "$HOME/$n.txt" && grep -q -F -- "$n" "$HOME/$n.txt"; then printf 'planted\t%s\n' "$HOME/$n.txt"; fi
{ for d in "$@"; do printf '%s\n' "$d"; done
  find "$@" -maxdepth 3 -type d -perm -0002 -writable 2>/dev/null | head -n 20; } | sort -u |
while IFS= read -r d; do
  [ -d "$d" ] && [ -w "$d" ] || continue
  if printf '%s\n' "$n" > "$d/$n" 2>/dev/null && grep -q -F -- "$n" "$d/$n"; then printf 'planted\t%s\n' "$d/$n"; fi
done
"""

REMOVE_SCRIPT = r"""cd && for f in "$@"; do rm -f -- "$f"; done; true"""

# As tenant A: the bounded scan. Arguments: seconds, max files, max bytes per file, victim user,
# control nonce, pattern count, patterns..., locations... Records: probes/parsers/exposure.py.
SCAN_SCRIPT = r"""export LC_ALL=C
t="$1"; maxf="$2"; maxb="$3"; victim="$4"; ctl="$5"; np="$6"; shift 6
pats=(); i=0; while [ "$i" -lt "$np" ]; do pats+=(-e "$1"); shift; i=$((i+1)); done
end=$((SECONDS + t))
left() { local r=$((end - SECONDS)); [ "$r" -lt 1 ] && r=1; echo "$r"; }
home=$(cd ~ && pwd -P)
tmp=$(mktemp -d "$home/.opgrade-scan.XXXXXX") || { printf 'incomplete\tno scratch directory in %s\n' "$home"; exit 0; }
ctlroots=()
cleanup() { rm -rf -- "$tmp"; for r in "${ctlroots[@]}"; do rm -f -- "$r/.opgrade-ctl-$ctl.txt" "$r/.opgrade-ctl-$ctl.gz"; done; }
trap cleanup EXIT
open=()
for r in "$@"; do
  if [ ! -e "$r" ]; then printf 'root\tabsent\t%s\n' "$r"; continue; fi
  if [ -d "$r" ] && [ -r "$r" ] && [ -x "$r" ]; then printf 'root\topen\t%s\n' "$r"; open+=("$r")
  else printf 'root\tdenied\t%s\n' "$r"; continue; fi
  if [ -w "$r" ] && ( umask 077; printf '%s\n' "$ctl" > "$r/.opgrade-ctl-$ctl.txt" && printf '%s\n' "$ctl" | gzip -c > "$r/.opgrade-ctl-$ctl.gz" ) 2>/dev/null; then
    ctlroots+=("$r"); printf 'control\tplanted\t%s\n' "$r"
  fi
done
: > "$tmp/files"; : > "$tmp/victim"; : > "$tmp/err"
if id -u "$victim" >/dev/null 2>&1; then owner=(-user "$victim" -o); else owner=(); fi
if [ "${#open[@]}" -gt 0 ]; then
  timeout "$(left)" find "${open[@]}" -maxdepth 16 \( -path "$home" -o -path "$HOME" -o -path /proc -o -path /sys \) -prune -o \
    \( \( "${owner[@]}" -path "*$victim*" \) \( -readable -fprintf "$tmp/victim" 'victim\tR\t%y\t%m\t%p\n' -o -fprintf "$tmp/victim" 'victim\tN\t%y\t%m\t%p\n' \) \) , \
    \( \( -type f -o \( -type l -xtype f \) \) -readable -fprintf "$tmp/files" '%s\t%p\n' \) 2> "$tmp/err"
  [ $? -eq 124 ] && printf 'incomplete\ttime (listing)\n'
fi
sort -u "$tmp/victim" | head -n 500
sed -n "s/^find: '\(.*\)': Permission denied$/denied\t\1/p" "$tmp/err" | sort -u | head -n 200
sort -u -t "$(printf '\t')" -k2 "$tmp/files" > "$tmp/f"
n=$(wc -l < "$tmp/f")
[ "$n" -gt "$maxf" ] && printf 'incomplete\tfiles (%s readable files, cap %s)\n' "$n" "$maxf"
: > "$tmp/small"; : > "$tmp/big"; : > "$tmp/comp"
head -n "$maxf" "$tmp/f" | awk -F '\t' -v m="$maxb" -v s="$tmp/small" -v b="$tmp/big" -v c="$tmp/comp" '
  $2 ~ /\.(gz|tgz|z|Z|xz|txz|bz2|tbz2|zst)$/ { print $2 > c; total += ($1 > m ? m : $1); next }
  $1 > m { print $2 > b; total += m; next }
  { print $2 > s; total += $1 }
  END { printf "%d\n", total > (s ".bytes") }'
tr '\n' '\0' < "$tmp/small" | timeout "$(left)" xargs -0 -r grep -a -o -s -F -H -Z "${pats[@]}" -- > "$tmp/hits"
[ "${PIPESTATUS[1]}" -eq 124 ] && printf 'incomplete\ttime (reading files)\n'
tr '\0' '\t' < "$tmp/hits" | sort -u | sed 's/^/hit\t/'
partial=0
while IFS= read -r f; do
  [ "$SECONDS" -ge "$end" ] && { printf 'incomplete\ttime (large files)\n'; break; }
  partial=$((partial + 1))
  head -c "$maxb" -- "$f" 2>/dev/null | grep -a -o -F "${pats[@]}" | sort -u | while IFS= read -r m; do printf 'hit\t%s\t%s\n' "$f" "$m"; done
done < "$tmp/big"
while IFS= read -r f; do
  [ "$SECONDS" -ge "$end" ] && { printf 'incomplete\ttime (compressed files)\n'; break; }
  case "$f" in *.xz|*.txz) d=xz;; *.bz2|*.tbz2) d=bzip2;; *.zst) d=zstd;; *) d=gzip;; esac
  if ! command -v "$d" >/dev/null 2>&1; then printf 'incomplete\tno %s to read %s\n' "$d" "$f"; continue; fi
  "$d" -dc -- "$f" 2>/dev/null | head -c "$((maxb * 4))" | grep -a -o -F "${pats[@]}" | sort -u | while IFS= read -r m; do printf 'hit\t%s\t%s\n' "$f" "$m"; done
done < "$tmp/comp"
printf 'stat\tfiles\t%s\tbytes\t%s\tpartial\t%s\n' "$(( $(wc -l < "$tmp/small") + $(wc -l < "$tmp/big") + $(wc -l < "$tmp/comp") ))" "$(cat "$tmp/small.bytes" 2>/dev/null || echo 0)" "$partial"
printf 'done\n'
"""


def _script(script: str, name: str, args: Iterable[str | int]) -> Command:
    words = {f"a{i}": str(a) for i, a in enumerate(args)}
    template = "bash -c {script} " + name + " " + " ".join(f"{{{k}}}" for k in words)
    return Command(template, script=script, **words)


ACTIVE_JOB_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}


def submit_job(nonce: str) -> Command:
    return Command(
        "cd && sbatch --parsable -J {name} -n 1 -t 2 -o {out} --wrap {job}",
        name=nonce,
        out=f"{nonce}.out",
        job=f"echo {nonce}; echo {nonce} > /tmp/{nonce}.job",
    )


def job_gone(job_id: str) -> Command:
    return Command("squeue -h -j {job} -o %T", job=job_id)


def _remove(ctx: ProbeContext, host: Endpoint, victim: str, leftovers: list[str]) -> None:
    run(ctx, host, _script(REMOVE_SCRIPT, "rm", leftovers), tenant=victim, timeout_s=30, what="remove")


@register
class TenantDataExposure(CatalogProbe, definition="tenant_data_exposure"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        observer, victim = target.tenants
        if ctx.login is None:
            raise Abort(Outcome.NOT_APPLICABLE, "no login node is configured")
        victim_user = ctx.tenant(victim).credentials.username
        nonce = new_nonce("opgrade-canary")
        traces = self._leave_traces(ctx, victim, nonce)
        roots = [str(r) for r in (self.setting(ctx, "exposure_roots") or []) if str(r).startswith("/")]
        roots += [str(r) for r in (ctx.settings.get("exposure_extra_roots") or []) if str(r).startswith("/")]
        shared = [str(d) for d in (ctx.settings.get("shared_dirs") or []) if str(d).startswith("/")]
        temps = [str(d) for d in self.setting(ctx, "temp_dirs") or []]
        roots = list(dict.fromkeys([*roots, *shared, *temps]))
        hosts = [ctx.login, *ctx.nodes[:1]]
        per_node: dict[str, Any] = {}
        scans: list[ExposureScan] = []
        for host in hosts:
            scan, evidence = self._scan_host(
                ctx, host, observer, victim, victim_user, nonce, roots, [*temps, *shared]
            )
            per_node[host.host] = evidence
            scans.append(scan)
        exposed = [e for s in scans for e in s.exposures]
        evidence = {
            "nonce": nonce,
            "observer": observer,
            "victim": victim,
            "victim_traces": traces,
            "nodes": per_node,
        }
        if exposed:
            paths = list(dict.fromkeys(f"{e.path} ({e.why})" for e in exposed))
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    critical=True,
                    evidence=evidence,
                    summary=f"{observer} reads {victim}'s data in {len(paths)} place(s): {', '.join(paths[:3])}",
                )
            ]
        incomplete = [
            f"{host}: {why}"
            for host, ev in per_node.items()
            for why in [
                *ev["incomplete"],
                *(f"control missing in {r}" for r, s in ev["controls"].items() if s != "found"),
            ]
        ]
        if incomplete:
            return [
                self.finding(
                    target,
                    Outcome.ERROR,
                    evidence=evidence,
                    summary=f"scan incomplete, not a pass: {'; '.join(incomplete[:3])}",
                )
            ]
        files = sum(s.files for s in scans)
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"{observer} found nothing of {victim}'s in {files} readable files of {len(roots)} locations on {len(hosts)} nodes",
            )
        ]

    def _leave_traces(self, ctx: ProbeContext, victim: str, nonce: str) -> dict[str, str]:
        """B's job, syslog line and API requests carrying the nonce (where the cluster has them)."""
        traces: dict[str, str] = {}
        if Requirement.SLURM in ctx.capabilities:
            sub = run(ctx, ctx.login, submit_job(nonce), tenant=victim, timeout_s=30, what="sbatch")
            job_id = sub.stdout.strip().split(";")[0]
            if not sub.ok or not job_id.isdigit():
                raise Abort(Outcome.ERROR, f"{victim} could not submit its canary job", ctx.evidence(sub))

            def finished() -> bool | None:
                res = run(ctx, ctx.login, job_gone(job_id), tenant=victim, timeout_s=20, what="squeue")
                # a finished job stays listed (COMPLETED, FAILED, ...) until Slurm's MinJobAge
                state = res.stdout.strip()
                return True if res.ok and state not in ACTIVE_JOB_STATES else None

            done, _ = wait_for(finished, timeout_s=float(self.setting(ctx, "job_timeout_s")), poll_s=1.0)
            traces["job"] = f"{job_id} finished" if done else f"{job_id} still queued or running"
        syslog = ctx.settings.get("syslog_addr")
        if syslog and ctx.nodes:
            sent = run(
                ctx, ctx.nodes[0], syslog_command(nonce, syslog), tenant=victim, timeout_s=15, what="logger"
            )
            traces["syslog"] = "sent" if sent.ok else f"logger exit {sent.exit_code}"
        if endpoint_url(ctx, "logs_url") and tenant_http_auth(ctx, victim):
            traces["log_api"] = str(log_query(ctx, victim, nonce).status)
        url, auth = endpoint_url(ctx, "metrics_url"), tenant_http_auth(ctx, victim)
        if url and auth:
            query = http("GET", f"{url}/api/v1/query", auth=auth, params={"query": f'up{{job="{nonce}"}}'})
            traces["metrics_api"] = str(query.status)
        return traces

    def _scan_host(
        self,
        ctx: ProbeContext,
        host: Endpoint,
        observer: str,
        victim: str,
        victim_user: str,
        nonce: str,
        roots: list[str],
        writable: list[str],
    ) -> tuple[ExposureScan, dict[str, Any]]:
        planted_res = run(
            ctx,
            host,
            _script(PLANT_SCRIPT, "plant", [nonce, *writable, *roots]),
            tenant=victim,
            timeout_s=60,
            what="plant canaries",
        )
        planted = [
            line.split("\t", 1)[1] for line in planted_res.stdout.splitlines() if line.startswith("planted\t")
        ]
        if not any(p.endswith(f"/{nonce}.txt") for p in planted):
            raise Abort(
                Outcome.ERROR,
                f"positive control failed: {victim} could not write and read its canary on {host.host}",
                ctx.evidence(planted_res),
            )
        seconds = int(self.setting(ctx, "scan_seconds"))
        control = new_nonce("opgrade-ctl")
        leftovers = [*planted, f"{nonce}.out", f"/tmp/{nonce}.job"]  # noqa: S108 - B's own job file
        try:
            result = run(
                ctx,
                host,
                _script(
                    SCAN_SCRIPT,
                    "scan",
                    [
                        seconds,
                        int(self.setting(ctx, "max_files")),
                        int(self.setting(ctx, "max_file_bytes")),
                        victim_user,
                        control,
                        3,
                        nonce,
                        victim_user,
                        control,
                        *roots,
                    ],
                ),
                tenant=observer,
                timeout_s=seconds + 30,
                what="exposure scan",
            )
        except BaseException as scan_error:
            # B's canaries go either way, but a cleanup that fails too must not hide why the scan
            # failed: the scan's error surfaces, the cleanup's is recorded beside it.
            try:
                _remove(ctx, host, victim, leftovers)
            except Exception as cleanup_error:
                note = f"cleanup after the failed scan failed too: {ctx.redact(str(cleanup_error))}"
                scan_error.add_note(note)
                if isinstance(scan_error, Abort):
                    scan_error.evidence["cleanup_error"] = note
            raise
        _remove(ctx, host, victim, leftovers)
        try:
            scan = parse_exposure_scan(
                result.stdout, victim_user=victim_user, victim_nonces=[nonce], control_nonce=control
            )
        except ParseError as exc:
            raise Abort(
                Outcome.ERROR, f"could not read the scan on {host.host}: {exc}", ctx.evidence(result)
            ) from exc
        evidence = {
            **scan.evidence(),
            "victim_canaries": planted[:50],
            "cmd_exit": result.exit_code,
            "stderr": ctx.redact(result.stderr)[:1000],
        }
        if not scan.done:
            evidence["incomplete"] = [
                *evidence["incomplete"],
                f"scan did not finish (exit {result.exit_code})",
            ]
        return scan, evidence
