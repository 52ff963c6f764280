"""host_privilege_surface: can a tenant read the host's secrets or write what root runs?

The isolation probes ask whether one tenant reaches another. This one asks whether a tenant reaches
the operator: on the login node and every compute node, as a tenant (no sudo, nothing but what any
tenant has), it checks the whole surface the node's own configuration names, not a list of paths:

1. The *gather* (:data:`GATHER_SCRIPT`) prints ``scontrol show config``, the command line of every
   process the tenant does not own, the ``PATH`` lines of the files that set root's and the Slurm
   daemons' search path (``/etc/environment``, ``/etc/login.defs``, cron, the systemd units and
   defaults files of Slurm and munge, every program slurm.conf names) and the ``HostKey`` lines of
   every readable sshd configuration, what cron and systemd run (cron lines, ``Exec*=`` lines of
   every unit), the absolute paths the Slurm programs call, and the ld.so library directories.
   :func:`probes.parsers.privilege.surface_plan` derives the
   paths to check: secrets (munge keys from every munged's ``--key-file``, SSH host keys from every
   sshd's options and configuration, ``/etc/shadow``, ``slurmdbd.conf``, JWT keys), files and
   directories root runs or reads (every program slurm.conf names, slurm.conf, the daemons'
   executables, what cron and systemd run, cron, profile.d, systemd unit directories, every
   directory in those PATHs and in ld.so's, the Slurm configuration and plugin directories) and
   every ancestor of them.
2. The *check* (:data:`CHECK_SCRIPT`) stats each as the tenant (``access(2)``: groups and ACLs
   count), and scans on its own, bounded in time and entries: every setuid/setgid file on each
   filesystem not mounted ``nosuid`` (owned by an installed package? content equal to the package's
   checksum?), unix sockets in the runtime places and every listening one (a container runtime's
   socket the tenant may write is root), device nodes the tenant may write (beyond a documented
   allow-list), and files under ``/etc``, the Slurm directories and ``secret_roots`` that the
   tenant can read and that hold key material (a private-key header, or a key's name).

Any issue is a critical ``fail`` listing each path with why. Fail closed: positive controls (a
setuid file, a ``docker.sock``-like socket, a file with a private-key header, all planted by the
tenant in a private directory of its home and found by the same scans; ``/dev/null`` found among
the writable devices; the private directory seen as writable) and every bound hit make the outcome
``error``, never ``pass``. Evidence names paths, modes and owners only: no secret's content is
ever read back (the key scan prints the file name when a header matched).

``settings.foreign_path_regex`` drops paths that belong to other clusters sharing the machine (the
testbed sets it; a production cluster leaves it empty), counted in the evidence.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.privilege import DEFAULT_DEVICES, judge, parse_gather, surface_plan
from probes.transport import Command, SchedulerRefused

# Prints config/proc/pathline/hostkey/me records (probes/parsers/privilege.py). No argument.
GATHER_SCRIPT = r"""export LC_ALL=C
me=$(id -u)
scontrol show config 2>/dev/null | sed 's/^/config\t/'
daemons=$(n=0; for p in /proc/[0-9]*; do
  [ "$n" -ge 4000 ] && { printf 'proc_cap\n'; break; }
  u=""; while read -r k v _; do [ "$k" = "Uid:" ] && { u=$v; break; }; done < "$p/status"
  [ -z "$u" ] || [ "$u" = "$me" ] && continue
  mapfile -d '' -t a < "$p/cmdline" || continue
  [ "${#a[@]}" -gt 0 ] || continue
  a0=${a[0]%% *}; a0=${a0%:}; a0=${a0##*/}
  case "$a0" in munged|sshd|slurm*|cron|crond|atd|dockerd|containerd*|podman|crio|systemd|rsyslogd|nginx|prometheus*) ;; *) continue;; esac
  IFS=$'\t'; printf 'proc\t%s\t%s\n' "$u" "${a[*]}"; unset IFS; n=$((n+1))
done 2>/dev/null | tr -s '\t')
printf '%s\n' "$daemons"
conf=$(scontrol show config 2>/dev/null)
progs=$(printf '%s\n' "$conf" | sed -n -E 's/^(Prolog|Epilog|PrologSlurmctld|EpilogSlurmctld|HealthCheckProgram|TaskProlog|TaskEpilog|ResumeProgram|SuspendProgram|RebootProgram) *= *(\/.*)$/\2/p' | tr ',' '\n')
for f in /etc/environment /etc/login.defs /etc/crontab /etc/cron.d/* /etc/default/slurm* /etc/default/munge \
         /etc/sysconfig/slurm* /etc/systemd/system/*.service /etc/systemd/system/*.d/*.conf \
         /lib/systemd/system/slurm*.service /lib/systemd/system/munge*.service /usr/lib/systemd/system/slurm*.service \
         $progs; do
  [ -f "$f" ] && [ -r "$f" ] || continue
  grep -E '(^|[[:space:];])(export[[:space:]]+)?(ENV_SUPATH|ENV_PATH|PATH=|Environment=.*PATH=)' -- "$f" 2>/dev/null | head -n 20 |
    while IFS= read -r l; do printf 'pathline\t%s\t%s\n' "$f" "$l"; done
done
cfgs=$(printf '%s\n' "$daemons" | tr '\t ' '\n\n' | grep -A1 -x -e '-f' | grep '^/' | sort -u)
for f in /etc/ssh/sshd_config /etc/ssh/sshd_config.d/*.conf $(printf '%s\n' "$cfgs" | grep -i ssh); do
  [ -f "$f" ] && [ -r "$f" ] || continue
  sed -n -E 's/^[[:space:]]*[Hh][Oo][Ss][Tt][Kk][Ee][Yy][[:space:]]+//p' -- "$f" | head -n 20 | while IFS= read -r k; do printf 'hostkey\t%s\t%s\n' "$f" "$k"; done
done
# what cron and systemd run, and the programs slurm.conf names call by absolute path
for f in /etc/crontab /etc/cron.d/* /var/spool/cron/crontabs/* /var/spool/cron/*; do
  [ -f "$f" ] && [ -r "$f" ] || continue
  grep -v -E '^[[:space:]]*(#|$|[A-Za-z_]+=)' -- "$f" | head -n 200 | while IFS= read -r l; do printf 'cronline\t%s\t%s\n' "$f" "$l"; done
done
grep -h -E '^[[:space:]]*Exec(Start|StartPre|StartPost|Stop|StopPost|Reload|Condition)[A-Za-z]*=' -- /etc/systemd/system/*.service \
  /etc/systemd/system/*/*.conf /lib/systemd/system/*.service /usr/lib/systemd/system/*.service /run/systemd/system/*.service 2>/dev/null |
  sort -u | head -n 3000 | while IFS= read -r l; do printf 'execline\t%s\n' "$l"; done
for f in $progs; do
  [ -f "$f" ] && [ -r "$f" ] || continue
  grep -o -E '(^|[[:space:]"'\''=;(|&])/[A-Za-z0-9_./+@-]+' -- "$f" | sed -E 's/^[^/]*//' | sort -u | head -n 100 | while IFS= read -r r; do printf 'scriptref\t%s\t%s\n' "$f" "$r"; done
done
cat /etc/ld.so.conf /etc/ld.so.conf.d/*.conf 2>/dev/null | grep -E '^[[:space:]]*/' | head -n 100 | while IFS= read -r d; do printf 'libdir\t%s\n' "$d"; done
printf 'me\t%s\t%s\t%s\n' "$me" "$(id -un)" "$(cd ~ && pwd -P)"
printf 'done\n'
"""

# Arguments: seconds, max entries, allowed-device patterns (one word, space separated), then the
# plan as KIND<TAB>DEPTH<TAB>PATH words, then "--", then secret roots.
CHECK_SCRIPT = r"""export LC_ALL=C
t="$1"; maxn="$2"; devallow="$3"; shift 3
end=$((SECONDS + t)); left() { local r=$((end - SECONDS)); [ "$r" -lt 1 ] && r=1; echo "$r"; }
me=$(id -un); home=$(cd ~ && pwd -P)
ctl=$(mktemp -d "$home/.opgrade-hps.XXXXXX") || { printf 'incomplete\tno private directory in %s\n' "$home"; exit 0; }
sockpid=""
trap 'rm -rf -- "$ctl"; [ -n "$sockpid" ] && kill "$sockpid" 2>/dev/null' EXIT
chmod 700 "$ctl"
perms() { local s=""; [ -r "$1" ] && s=${s}r; [ -w "$1" ] && s=${s}w; [ -x "$1" ] && s=${s}x; echo "${s:--}"; }
statf() { local k="$1" p="$2" m; m=$(stat -c $'%a\t%U\t%G\t%F' -- "$p" 2>/dev/null) || { printf 'f\t%s\tabsent\t%s\n' "$k" "$p"; return; }
  local pr; pr=$(perms "$p"); np=$((np+1))
  # only what can be judged: the control, anything writable, a readable secret (the 64 KiB of
  # output a transport keeps would not hold every path of a machine with many clusters)
  case "$k:$pr" in C:*|*w*|S:r*) printf 'f\t%s\t%s\t%s\t%s\n' "$k" "$m" "$pr" "$p";; esac; }
np=0
# positive controls, all in the tenant's private directory
printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nopgrade-control\n' > "$ctl/ctl_host_key"
: > "$ctl/ctl-suid"; chmod 4700 "$ctl/ctl-suid" 2>/dev/null
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import socket,sys,os,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1],0o666); s.listen(1); time.sleep(600)' "$ctl/docker.sock" >/dev/null 2>&1 &
  sockpid=$!; for i in 1 2 3 4 5 6 7 8 9 10; do [ -S "$ctl/docker.sock" ] && break; sleep 0.2; done
else printf 'control\tsocket\tno python3 to make one\n'; fi
statf C "$ctl"
trees=(); n=0
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  IFS=$'\t' read -r k d p <<< "$1"; shift; n=$((n+1))
  [ "$n" -gt "$maxn" ] && { printf 'incomplete\tplan (more than %s paths)\n' "$maxn"; break; }
  case "$k" in
    T) statf T "$p"; [ -d "$p" ] && trees+=("$d"$'\t'"$p");;
    *) if [[ "$p" == *'*'* ]]; then for g in $p; do [ -e "$g" ] && statf "$k" "$g"; done; else statf "$k" "$p"; fi;;
  esac
done
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done; [ "$1" = "--" ] && shift
for e in "${trees[@]}"; do
  d=${e%%$'\t'*}; p=${e#*$'\t'}
  timeout "$(left)" find "$p" -mindepth 1 -maxdepth "$d" -writable ! -user "$me" ! -lname /dev/null -printf 'tw\t%m\t%u\t%y\t%p\n' 2>/dev/null | head -n 500
  [ "${PIPESTATUS[0]}" -eq 124 ] && printf 'incomplete\ttime (tree %s)\n' "$p"
done
printf 'stat\tpaths\t%s\n' "$np"
# setuid/setgid files on every filesystem where the bit counts
prune=(); homeprune=""
while read -r _dev mnt fs opts _; do
  mnt=$(printf '%b' "$mnt")
  case "$fs" in proc|sysfs|cgroup|cgroup2|devpts|mqueue|debugfs|tracefs|securityfs|pstore|bpf|fusectl|configfs|hugetlbfs|binfmt_misc|autofs|nsfs|efivarfs|devtmpfs) prune+=("$mnt"); continue;; esac
  case ",$opts," in *,nosuid,*) [ "$mnt" != / ] && prune+=("$mnt"); case "$home/" in "$mnt"/*|"$mnt/") homeprune=nosuid;; esac;; esac
done < /proc/self/mounts
[ -n "$homeprune" ] && printf 'control\tsetuid_home\tnosuid\n'
expr=(); for m in "${prune[@]}"; do expr+=(-path "$m" -o); done
timeout "$(left)" find / \( "${expr[@]}" -false \) -prune -o -type f -perm /6000 -print 2>/dev/null | head -n "$maxn" > "$ctl/suid"
rc=${PIPESTATUS[0]}; [ "$rc" -eq 124 ] && printf 'incomplete\ttime (setuid scan)\n'
[ "$(wc -l < "$ctl/suid")" -ge "$maxn" ] && printf 'incomplete\tsetuid files (cap %s)\n' "$maxn"
db=nodb; [ -d /var/lib/dpkg/info ] && db=dpkg; [ "$db" = nodb ] && command -v rpm >/dev/null 2>&1 && db=rpm
while IFS= read -r f; do
  alt=$f; case "$f" in /usr/bin/*|/usr/sbin/*|/usr/lib/*|/usr/lib64/*) alt=${f#/usr};; /bin/*|/sbin/*|/lib/*|/lib64/*) alt=/usr$f;; esac
  pkg=-; sum=nodb
  if [ "$db" = dpkg ]; then
    l=$(grep -l -x -F -e "$f" -e "$alt" /var/lib/dpkg/info/*.list 2>/dev/null | head -n 1)
    if [ -n "$l" ]; then pkg=$(basename "$l" .list)
      want=$(awk -v a="${f#/}" -v b="${alt#/}" '$2 == a || $2 == b {print $1; exit}' "/var/lib/dpkg/info/$pkg.md5sums" 2>/dev/null)
      if [ -z "$want" ]; then sum=nodb; elif [ ! -r "$f" ]; then sum=unread
      elif [ "$(md5sum < "$f" | cut -d' ' -f1)" = "$want" ]; then sum=ok; else sum=differs; fi
    fi
  elif [ "$db" = rpm ]; then
    if pkg=$(rpm -qf --qf '%{NAME}' -- "$f" 2>/dev/null); then
      if rpm -Vf -- "$f" 2>/dev/null | grep -q -E "^..5.* $f\$"; then sum=differs; else sum=ok; fi
    else pkg=-; fi
  fi
  printf 'suid\t%s\t%s\t%s\t%s\n' "$(stat -c $'%a\t%U\t%G' -- "$f")" "$(perms "$f")" "$pkg" "$sum"$'\t'"$f"
done < "$ctl/suid"
# unix sockets: runtime places and every listening one
{ timeout "$(left)" find /run /var/run /tmp /var/tmp /dev/shm /var/lib /srv "$ctl" "$@" -maxdepth 5 -type s 2>/dev/null
  awk 'NR > 1 && $NF ~ /^\// {print $NF}' /proc/net/unix 2>/dev/null; } | sort -u | head -n "$maxn" |
  while IFS= read -r s; do [ -S "$s" ] && printf 'sock\t%s\t%s\t%s\n' "$(stat -c $'%a\t%U' -- "$s")" "$(perms "$s")" "$s"; done
# device nodes the tenant may write
timeout "$(left)" find /dev \( -path /dev/pts -o -path /dev/shm -o -path /dev/mqueue -o -path /dev/hugepages \) -prune -o \
  \( -type c -o -type b \) -writable -printf 'dev\t%m\t%u\t%g\t%p\n' 2>/dev/null | head -n 500
# key material the tenant can read (names only; a header match prints the file name, never its text)
timeout "$(left)" find /etc "$ctl" "$@" -maxdepth 6 -type f -readable \( -user "$me" -path "$ctl/*" -o ! -user "$me" \) -size -65k -printf '%m\t%u\t%p\n' 2>/dev/null | head -n 100000 > "$ctl/files"
[ "${PIPESTATUS[0]}" -eq 124 ] && printf 'incomplete\ttime (key scan listing)\n'
[ "$(wc -l < "$ctl/files")" -ge 100000 ] && printf 'incomplete\tkey scan (100000 files)\n'
awk -F '\t' '{ n = $3; sub(/.*\//, "", n); if (n ~ /^(munge\.key|ssh_host_.*_key|shadow|gshadow|slurmdbd\.conf)$/ || n ~ /jwt.*\.key$/ || n ~ /\.keytab$/) printf "secret\tname\t%s\t%s\t%s\n", $1, $2, $3 }' "$ctl/files"
cut -f3 "$ctl/files" | grep -v -E '\.pub$' | tr '\n' '\0' | timeout "$(left)" xargs -0 -r grep -l -s -a -m1 -E -e '-----BEGIN ([A-Z]+ )?PRIVATE KEY-----' -- > "$ctl/keys"
[ "${PIPESTATUS[3]}" -eq 124 ] && printf 'incomplete\ttime (key scan)\n'
awk -F '\t' 'NR == FNR { k[$0] = 1; next } ($3 in k) { printf "secret\theader\t%s\t%s\t%s\n", $1, $2, $3 }' "$ctl/keys" "$ctl/files"
printf 'done\n'
"""


def _script(script: str, name: str, args: Iterable[str | int]) -> Command:
    words = {f"a{i}": str(a) for i, a in enumerate(args)}
    template = "bash -c {script} " + name + " " + " ".join(f"{{{k}}}" for k in words)
    return Command(template, script=script, **words)


GATHER = _script(GATHER_SCRIPT, "gather", [])
RETRY_PAUSE_S = 5
ATTEMPTS = 3
MAX_OUTPUT = 4 << 20  # a machine with many daemons and setuid files prints more than the default 64 KiB


def _run(
    ctx: ProbeContext, endpoint: Any, command: Command, *, tenant: str | None, timeout_s: float, what: str
) -> Any:
    """Run as ``tenant`` with a larger output cap; a deadline or a cut output is never a pass.

    Again (at most ``ATTEMPTS`` times), after a pause, when the scheduler would not start the step (the node is busy with
    another probe's job) or the command was killed before it finished (no exit status): both are
    transient on a shared node and say nothing about the node's surface."""
    if endpoint is None:
        raise Abort(Outcome.NOT_APPLICABLE, "no node to check")
    for attempt in range(1, ATTEMPTS + 1):
        try:
            result = ctx.ssh(endpoint, tenant=tenant).run(
                command, timeout_s=timeout_s, max_output_bytes=MAX_OUTPUT
            )
        except SchedulerRefused:
            if attempt == ATTEMPTS:
                raise
            time.sleep(RETRY_PAUSE_S)
            continue
        killed = result.exit_code is None and not result.timed_out and "\ndone\n" not in f"\n{result.stdout}"
        if not killed or attempt == ATTEMPTS:
            break
        time.sleep(RETRY_PAUSE_S)
    if result.timed_out:
        raise Abort(Outcome.TIMEOUT, f"{what} did not finish in {timeout_s:g} s", ctx.evidence(result))
    if result.truncated:
        raise Abort(
            Outcome.ERROR, f"{what}: output cut at {MAX_OUTPUT} bytes, not a pass", ctx.evidence(result)
        )
    return result


@register
class HostPrivilegeSurface(CatalogProbe, definition="host_privilege_surface"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        endpoint = target.endpoint
        tenant = ctx.tenants[0].label if ctx.tenants else None
        gathered = _run(ctx, endpoint, GATHER, tenant=tenant, timeout_s=60, what="gather")
        try:
            g = parse_gather(gathered.stdout)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not read the gather: {exc}", ctx.evidence(gathered)) from exc
        roots = [str(r) for r in (self.setting(ctx, "secret_roots") or []) if str(r).startswith("/")]
        roots += [str(r) for r in (ctx.settings.get("exposure_extra_roots") or []) if str(r).startswith("/")]
        plan = surface_plan(g)
        seconds = int(self.setting(ctx, "scan_seconds"))
        words = [f"{p.kind}\t{p.depth}\t{p.path}" for p in plan]
        devices = str(self.setting(ctx, "allowed_devices") or DEFAULT_DEVICES)
        result = _run(
            ctx,
            endpoint,
            _script(
                CHECK_SCRIPT,
                "check",
                [seconds, int(self.setting(ctx, "max_entries")), devices, *words, "--", *roots],
            ),
            tenant=tenant,
            timeout_s=seconds + 60,
            what="privilege surface check",
        )
        pattern = str(self.setting(ctx, "foreign_path_regex") or "")
        scan = judge(
            result.stdout,
            plan,
            me=g.user,
            allowed_devices=devices.split(),
            allowed_setuid=[str(s) for s in self.setting(ctx, "allowed_setuid") or []],
            foreign=re.compile(pattern) if pattern else None,
        )
        evidence: dict[str, Any] = {
            "tenant": tenant,
            "user": g.user,
            **scan.evidence(),
            "planned": {k: sum(p.kind == k for p in plan) for k in ("S", "X", "T", "A")},
            "secrets_checked": sorted({p.path for p in plan if p.kind == "S"})[:80],
            "slurm_config": "read" if g.config else f"not read ({g.config_error})",
            "cmd_exit": result.exit_code,
            "stderr": ctx.redact(result.stderr)[:500],
        }
        if scan.issues:
            paths = [f"{i.path} ({i.why})" for i in scan.issues]
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    critical=True,
                    evidence=evidence,
                    summary=f"{len(paths)} privilege path(s) open to a tenant on {target.name}: {'; '.join(paths[:3])}",
                )
            ]
        if not scan.complete:
            return [
                self.finding(
                    target,
                    Outcome.ERROR,
                    evidence=evidence,
                    summary=f"check incomplete, not a pass: {'; '.join(scan.incomplete[:3])}",
                )
            ]
        c = scan.checked
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=(
                    f"no secret readable, nothing root runs writable: {c['paths']} paths, {c['setuid']} setuid files, "
                    f"{c['sockets']} sockets, {c['devices']} writable devices (allowed) checked on {target.name}"
                ),
            )
        ]
