"""The host's own secrets and privilege-escalation surface, as a tenant reaches it: judged (pure).

``host_privilege_surface`` runs two fixed bash scripts as a tenant on a node
(:mod:`probes.catalog.host_privilege_surface`). The first, the *gather*, prints what the node's
configuration names, one tab-separated record per line::

    config  <scontrol show config line>        # the whole of `scontrol show config`
    proc    UID  ARGV0  ARG1 ...                # every process the tenant does not own (cmdline)
    pathline  FILE  LINE                        # a PATH= / ENV_SUPATH line of a file root reads
    hostkey   FILE  PATH                        # a HostKey line of a readable sshd_config
    cronline  FILE  LINE                        # a job line of a readable crontab
    execline  LINE                              # an Exec*= line of a systemd unit
    scriptref FILE  PATH                        # an absolute path a Slurm program names
    libdir    DIR                               # a directory of ld.so.conf(.d)
    me      UID  USER  HOME
    done

From it :func:`surface_plan` derives, without a clock or I/O, every path to check and why:

* ``S`` secrets: the munge key (``/etc/munge/munge.key`` and every munged's ``--key-file``), SSH
  host private keys (``/etc/ssh/ssh_host_*_key``, every sshd's ``-h``/``-o HostKey=`` and the
  HostKey lines of its readable configuration), ``/etc/shadow``, ``/etc/gshadow``,
  ``slurmdbd.conf`` beside every Slurm configuration, the JWT keys (``AuthAltParameters
  jwt_key=``, ``StateSaveLocation/jwt_hs256.key``);
* ``X`` files root executes or reads as code/configuration: every program ``scontrol show
  config`` names (Prolog, Epilog, HealthCheckProgram, TaskProlog, ...), slurm.conf itself, the
  executables of the root daemons, /etc/crontab, /etc/profile, /etc/ld.so.preload, ...;
* ``T`` directories whose entries root executes or reads (cron, profile.d, systemd unit dirs,
  every directory in root's and the Slurm daemons' PATH as far as the node's files say it, the
  Slurm configuration and plugin directories): any tenant-writable entry;
* ``R`` paths cron lines, unit ``Exec*=`` arguments and the Slurm programs name: a regular file
  among them the tenant can write is a hole (a directory they name may be data, e.g. /tmp);
* ``A`` every ancestor of those (not of ``R``): a tenant-writable ancestor (without the sticky bit) lets the
  tenant replace the whole subtree.

The second, the *check*, stats each planned path as the tenant (``access(2)``: modes, groups and
ACLs count) and runs three bounded scans of its own::

    f       KIND  MODE  USER  GROUP  TYPE  PERMS  PATH     # a planned path (PERMS: r/w/x or -)
    f       KIND  absent  PATH                              # (printed only when judgeable:
                                                             #  writable, a readable secret, absent)
    stat    paths N                                          # how many planned paths were stat'ed
    tw      MODE  USER  TYPE  PATH                          # a tenant-writable entry of a T dir
    suid    MODE  USER  GROUP  PERMS  PKG  SUM  PATH         # setuid/setgid file (PKG: package
                                                             #  or -, SUM: ok|differs|unread|nodb)
    sock    MODE  USER  PERMS  PATH                          # a unix socket
    dev     MODE  USER  GROUP  PATH                          # a device node the tenant may write
    secret  WHY   MODE  USER  PATH                           # a readable file that holds a key
    control NAME  STATE                                      # positive controls
    incomplete  REASON                                       # a bound was hit
    done

:func:`judge` turns both into issues (each path with why), and says what kept the scan from being
complete. Nothing here ever sees a secret's content: the check prints names, modes and owners.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from probes.parsers import ParseError
from probes.parsers.slurm import parse_scontrol_config

MAX_LISTED = 60

# programs slurm.conf names that root (or slurmd/slurmctld, root here) or the job's user runs
SLURM_PROGRAMS = (
    "Prolog",
    "Epilog",
    "PrologSlurmctld",
    "EpilogSlurmctld",
    "HealthCheckProgram",
    "TaskProlog",
    "TaskEpilog",
    "SrunProlog",
    "SrunEpilog",
    "ResumeProgram",
    "ResumeFailProgram",
    "SuspendProgram",
    "RebootProgram",
    "UnkillableStepProgram",
    "MailProg",
    "ResvProlog",
    "ResvEpilog",
)
DAEMONS = re.compile(
    r"^(munged|sshd|slurmctld|slurmd|slurmdbd|slurmrestd|slurmstepd|cron|crond|atd|dockerd|containerd"
    r"|podman|crio|systemd|rsyslogd|nginx|prometheus\S*)$"
)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # systemd's, sudo's secure_path
FIXED_SECRETS = (
    "/etc/munge/munge.key",
    "/etc/ssh/ssh_host_*_key",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/slurm/slurmdbd.conf",
    "/etc/slurm/jwt*.key",
    "/etc/slurm-llnl/slurmdbd.conf",
    "/var/spool/slurm/statesave/jwt_hs256.key",
    "/var/spool/slurmctld/jwt_hs256.key",
)
FIXED_EXEC = (
    "/etc/crontab",
    "/etc/profile",
    "/etc/bash.bashrc",
    "/etc/environment",
    "/etc/ld.so.preload",
    "/etc/ld.so.conf",
    "/etc/rc.local",
    "/etc/sudoers",
    "/etc/passwd",
    "/etc/group",
    "/etc/shadow",
    "/etc/ssh/sshd_config",
    "/etc/default/slurmd",
    "/etc/default/slurmctld",
    "/etc/sysconfig/slurmd",
    "/etc/sysconfig/slurmctld",
)
FIXED_TREES = (
    ("/etc/cron.d", 1),
    ("/etc/cron.hourly", 1),
    ("/etc/cron.daily", 1),
    ("/etc/cron.weekly", 1),
    ("/etc/cron.monthly", 1),
    ("/var/spool/cron", 2),
    ("/etc/profile.d", 1),
    ("/etc/ld.so.conf.d", 1),
    ("/etc/systemd/system", 2),
    ("/lib/systemd/system", 1),
    ("/usr/lib/systemd/system", 1),
    ("/run/systemd/system", 1),
    ("/etc/init.d", 1),
    ("/etc/sudoers.d", 1),
    ("/etc/pam.d", 1),
    ("/etc/security", 1),
    ("/etc/logrotate.d", 1),
    ("/etc/udev/rules.d", 1),
    ("/etc/modprobe.d", 1),
    ("/etc/munge", 1),
    ("/etc/ssh", 1),
    ("/etc/slurm", 1),
)
CONTAINER_SOCKET = re.compile(
    r"(docker|containerd|podman|crio|cri-dockerd|buildkit|lxd|incus|libvirt|kubelet|firecracker)", re.I
)
SECRET_NAME = re.compile(
    r"(^munge\.key$|^ssh_host_.*_key$|^shadow$|^gshadow$|^slurmdbd\.conf$|jwt.*\.key$|\.keytab$)"
)
DEFAULT_DEVICES = (
    "/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/ptmx /dev/net/tun /dev/fuse "
    "/dev/kvm /dev/vhost-net /dev/vhost-vsock /dev/nvidia* /dev/nvidia-caps/* /dev/dri/renderD* "
    "/dev/infiniband/uverbs* /dev/infiniband/rdma_cm"
)


@dataclass(frozen=True)
class Gathered:
    config: dict[str, str]
    procs: tuple[tuple[int, tuple[str, ...]], ...]
    path_lines: tuple[tuple[str, str], ...]
    host_keys: tuple[tuple[str, str], ...]
    uid: int
    user: str
    home: str
    config_error: str = ""
    runs: tuple[tuple[str, str, str], ...] = ()  # (kind X|R, path, why): what cron/systemd/scripts run
    lib_dirs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Planned:
    kind: str  # S secret, X executed/config file, T tree, A ancestor
    path: str  # may be a glob (S, X)
    why: str
    depth: int = 1  # T only


@dataclass(frozen=True)
class Issue:
    path: str
    why: str


@dataclass(frozen=True)
class SurfaceScan:
    issues: tuple[Issue, ...] = ()
    incomplete: tuple[str, ...] = ()
    checked: dict[str, int] = field(default_factory=dict)
    foreign: int = 0

    @property
    def complete(self) -> bool:
        return not self.incomplete

    def evidence(self) -> dict[str, object]:
        return {
            "issues": [f"{i.path}: {i.why}" for i in self.issues[:MAX_LISTED]],
            "issue_count": len(self.issues),
            "incomplete": list(self.incomplete),
            "checked": dict(self.checked),
            "excluded_other_clusters": self.foreign,
        }


# -- gather ---------------------------------------------------------------------------------------


def parse_gather(text: str) -> Gathered:
    config_lines: list[str] = []
    procs: list[tuple[int, tuple[str, ...]]] = []
    path_lines: list[tuple[str, str]] = []
    host_keys: list[tuple[str, str]] = []
    me: tuple[int, str, str] | None = None
    runs: list[tuple[str, str, str]] = []
    libs: list[str] = []
    done = False
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        if kind == "config":
            config_lines.append(rest)
        elif kind == "proc":
            uid, _, argv = rest.partition("\t")
            if uid.isdigit():
                procs.append((int(uid), tuple(a for a in argv.split("\t") if a)))
        elif kind == "pathline":
            f, _, value = rest.partition("\t")
            path_lines.append((f, value))
        elif kind == "hostkey":
            f, _, value = rest.partition("\t")
            host_keys.append((f, value.strip()))
        elif kind == "cronline":
            f, _, value = rest.partition("\t")
            runs += [("R", p, f"named by cron ({f})") for p in _abs_tokens(value)]
        elif kind == "execline":
            cmd = rest.split("=", 1)[1].lstrip("-@!+: ") if "=" in rest else ""
            tokens = _abs_tokens(cmd)
            if tokens and cmd.startswith(tokens[0]):
                runs.append(("X", tokens[0], f"systemd runs it: {rest.strip()[:80]}"))
                tokens = tokens[1:]
            runs += [("R", p, "named by a systemd unit") for p in tokens]
        elif kind == "scriptref":
            f, _, value = rest.partition("\t")
            if value.startswith("/"):
                runs.append(("R", value.strip(), f"called by {f}"))
        elif kind == "libdir":
            d = rest.strip().split()[0] if rest.strip() else ""
            if d.startswith("/"):
                libs.append(d)
        elif kind == "me":
            parts = rest.split("\t")
            if len(parts) == 3 and parts[0].isdigit():
                me = (int(parts[0]), parts[1], parts[2])
        elif kind == "done":
            done = True
    if not done or me is None:
        raise ParseError("the gather did not finish (no `me`/`done` record)")
    config: dict[str, str] = {}
    error = ""
    try:
        config = parse_scontrol_config("\n".join(config_lines))
    except ParseError as exc:
        error = str(exc)
    return Gathered(
        config,
        tuple(procs),
        tuple(path_lines),
        tuple(host_keys),
        *me,
        config_error=error,
        runs=tuple(dict.fromkeys(runs)),
        lib_dirs=tuple(dict.fromkeys(libs)),
    )


def _abs_tokens(text: str) -> list[str]:
    """Absolute paths in a command line (quotes and shell punctuation around them dropped)."""
    out = []
    for word in re.split(r"[\s;|&()<>`'\"=]+", text):
        if word.startswith("/") and len(word) > 1 and "*" not in word and "$" not in word:
            out.append(word.rstrip(","))
    return out


def _opt_values(argv: Sequence[str], long: str, short: str = "") -> list[str]:
    """Values of ``--long=V``/``--long V``/``-s V``/``-sV`` in ``argv``."""
    out: list[str] = []
    for i, a in enumerate(argv):
        if a.startswith(f"--{long}="):
            out.append(a.split("=", 1)[1])
        elif (a == f"--{long}" and i + 1 < len(argv)) or (short and a == f"-{short}" and i + 1 < len(argv)):
            out.append(argv[i + 1])
        elif short and a.startswith(f"-{short}") and len(a) > 2 and not a.startswith("--"):
            out.append(a[2:])
    return out


def _ssh_options(argv: Sequence[str], key: str) -> list[str]:
    out = []
    for value in _opt_values(argv, "\0", "o"):
        k, _, v = value.replace("=", " ", 1).partition(" ")
        if k.lower() == key.lower() and v.strip():
            out.append(v.strip())
    return out


def _argv(proc_argv: Sequence[str]) -> tuple[str, ...]:
    """sshd rewrites its cmdline to ``sshd: /usr/sbin/sshd -D ...`` (one string): split it back."""
    if len(proc_argv) == 1 and " " in proc_argv[0]:
        text = proc_argv[0]
        if text.startswith("sshd: "):
            text = text[len("sshd: ") :].split(" [", 1)[0]
        try:
            return tuple(shlex.split(text))
        except ValueError:
            return tuple(text.split())
    return tuple(proc_argv)


def path_dirs(line: str) -> list[str]:
    """Directories of a ``PATH=...`` (or ``ENV_SUPATH PATH=...``, ``Environment=PATH=...``) line."""
    match = re.search(r"\bPATH=([^\s;]+|\"[^\"]*\"|'[^']*')", line)
    if not match:
        return []
    value = match.group(1).strip("\"'")
    return [d for d in value.split(":") if d.startswith("/") and "$" not in d]


def _slurm_programs(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip().startswith("/")]


def _ancestors(path: str) -> list[str]:
    parts = PurePosixPath(path.split("*", 1)[0]).parents
    return [str(p) for p in parts]


def surface_plan(g: Gathered, *, extra_secret_roots: Iterable[str] = ()) -> list[Planned]:
    """Every path to check, with why (pure): from the configuration, the daemons and fixed places."""
    plan: list[Planned] = [Planned("S", p, "secret (standard place)") for p in FIXED_SECRETS]
    plan += [Planned("X", p, "root reads or runs it") for p in FIXED_EXEC]
    plan += [Planned("T", p, "root runs or reads its entries", depth) for p, depth in FIXED_TREES]
    c = g.config
    conf = c.get("SLURM_CONF", "")
    if conf.startswith("/"):
        confdir = str(PurePosixPath(conf).parent)
        plan += [
            Planned("X", conf, "slurm.conf (every Slurm daemon, root, reads it)"),
            Planned("T", confdir, "the Slurm configuration directory", 2),
            Planned("S", f"{confdir}/slurmdbd.conf", "slurmdbd.conf (database password)"),
            Planned("S", f"{confdir}/jwt*.key", "Slurm JWT key"),
        ]
    for key in SLURM_PROGRAMS:
        for prog in _slurm_programs(c.get(key, "")):
            plan.append(Planned("X", prog, f"{key} in slurm.conf"))
    plugin = c.get("PluginDir", "")
    for d in plugin.split(":"):
        if d.startswith("/"):
            plan.append(Planned("T", d, "Slurm PluginDir (root loads its .so files)", 1))
    for part in c.get("AuthAltParameters", "").split(","):
        if part.strip().startswith("jwt_key="):
            plan.append(Planned("S", part.strip().split("=", 1)[1], "AuthAltParameters jwt_key"))
    state = c.get("StateSaveLocation", "")
    if state.startswith("/"):
        plan.append(Planned("S", f"{state}/jwt_hs256.key", "Slurm JWT key in StateSaveLocation"))
    for uid, raw in g.procs:
        if uid == g.uid or not raw:
            continue
        argv = _argv(raw)
        name = PurePosixPath(argv[0]).name.rstrip(":")
        if not DAEMONS.match(name):
            continue
        if argv[0].startswith("/") and uid == 0:
            plan.append(Planned("X", argv[0], f"executable of root's {name}"))
        if name == "munged":
            for key in _opt_values(argv, "key-file"):
                plan.append(Planned("S", key, "munged --key-file (forges Slurm credentials)"))
        if name == "sshd":
            for key in [*_opt_values(argv, "\0", "h"), *_ssh_options(argv, "HostKey")]:
                plan.append(Planned("S", key, "sshd host private key"))
            for conf_file in _opt_values(argv, "\0", "f"):
                plan.append(Planned("X", conf_file, "sshd configuration"))
        if name.startswith("slurm"):
            for conf_file in _opt_values(argv, "\0", "f"):
                plan.append(Planned("X", conf_file, f"{name} configuration"))
                confdir = str(PurePosixPath(conf_file).parent)
                plan.append(Planned("S", f"{confdir}/slurmdbd.conf", "slurmdbd.conf (database password)"))
    for kind, path, why in g.runs:
        plan.append(Planned(kind, path, why))
    for d in g.lib_dirs:
        plan.append(
            Planned("T", d, "a shared-library directory (ld.so.conf): root's programs load from it", 1)
        )
    for f, key in g.host_keys:
        if key.startswith("/"):
            plan.append(Planned("S", key, f"HostKey in {f}"))
    dirs = [*SYSTEM_PATH.split(":")]
    for _f, line in g.path_lines:
        dirs += path_dirs(line)
    for d in dict.fromkeys(dirs):
        plan.append(Planned("T", d, "in root's or a Slurm daemon's PATH", 1))
    del extra_secret_roots  # the check scans them for key material itself
    for p in [p for p in plan if p.kind != "R"]:
        for anc in _ancestors(p.path):
            plan.append(Planned("A", anc, f"ancestor of {p.path}"))
    seen: set[tuple[str, str]] = set()
    out = []
    for p in plan:
        if (p.kind, p.path) not in seen:
            seen.add((p.kind, p.path))
            out.append(p)
    return out


def path_sources(config: Mapping[str, str]) -> list[str]:
    """Files whose PATH lines the gather reads: the system's, and every program slurm.conf names."""
    progs = [p for key in SLURM_PROGRAMS for p in _slurm_programs(config.get(key, ""))]
    return progs


# -- check ----------------------------------------------------------------------------------------


def _allowed_device(path: str, allowed: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(path, pat) for pat in allowed)


def judge(
    text: str,
    plan: Sequence[Planned],
    *,
    me: str,
    allowed_devices: Sequence[str],
    allowed_setuid: Sequence[str] = (),
    foreign: re.Pattern[str] | None = None,
) -> SurfaceScan:
    """The check's records, judged: every issue with why, and what kept it from being complete."""
    whys: dict[tuple[str, str], list[str]] = {}
    for p in plan:
        whys.setdefault((p.kind, p.path), []).append(p.why)
    issues: list[Issue] = []
    incomplete: list[str] = []
    controls: dict[str, str] = {}
    counts = {
        "paths": 0,
        "tree_entries_writable": 0,
        "setuid": 0,
        "sockets": 0,
        "devices": 0,
        "secret_files": 0,
    }
    stats: dict[str, tuple[str, str, str]] = {}  # path -> (mode, user, perms) for ancestors
    absent: list[tuple[str, str]] = []
    done = False
    package_setuid = 0
    ctl_dir = ""
    for line in text.splitlines():
        rec = line.split("\t")
        kind = rec[0]
        if kind == "stat" and len(rec) >= 3 and rec[1] == "paths" and rec[2].isdigit():
            counts["paths"] = int(rec[2])
        elif kind == "f" and len(rec) >= 4:
            k = rec[1]
            if rec[2] == "absent":
                absent.append((k, rec[3]))
                continue
            if len(rec) < 8:
                continue
            mode, user, _group, ftype, perms, path = rec[2], rec[3], rec[4], rec[5], rec[6], rec[7]
            stats[path] = (mode, user, perms)
            why = "; ".join(whys.get((k, path), [])) or next(
                (w for (kk, pat), ws in whys.items() if kk == k and fnmatch.fnmatch(path, pat) for w in ws),
                "",
            )
            if k == "C":
                ctl_dir = path  # printed first: this run's own private directory
                controls["writable"] = "found" if "w" in perms else "not writable"
            elif k == "S" and "r" in perms and "socket" not in ftype:
                issues.append(Issue(path, f"readable by the tenant (mode {mode}, owner {user}): {why}"))
            elif (
                (k == "R" and "w" in perms and ftype.startswith("regular"))  # a data dir it names is not code
                or (k == "S" and "w" in perms)
                or (k in ("X", "T") and "w" in perms)
                or (k == "A" and "w" in perms and not _sticky(mode))
            ):
                issues.append(Issue(path, f"writable by the tenant (mode {mode}, owner {user}): {why}"))
        elif kind == "tw" and len(rec) >= 5:
            counts["tree_entries_writable"] += 1
            mode, user, ftype, path = rec[1], rec[2], rec[3], rec[4]
            # a symlink counts only when its target is writable (find's -writable follows it)
            issues.append(
                Issue(
                    path,
                    f"writable by the tenant (mode {mode}, owner {user}) in a directory root runs or reads",
                )
            )
        elif kind == "suid" and len(rec) >= 8:
            counts["setuid"] += 1
            mode, user, group, perms, pkg, csum, path = rec[1:8]
            if user == me and _mine(path, ctl_dir):
                controls["setuid"] = "found"
                continue
            if user == me:
                continue  # the tenant's own setuid file gives the tenant nothing
            if any(fnmatch.fnmatch(path, pat) for pat in allowed_setuid):
                continue
            if pkg == "-":
                issues.append(
                    Issue(
                        path, f"setuid/setgid (mode {mode}, {user}:{group}) and no installed package owns it"
                    )
                )
            elif csum == "differs":
                issues.append(
                    Issue(
                        path,
                        f"setuid/setgid (mode {mode}) and its content differs from package {pkg}'s checksum",
                    )
                )
            elif csum in ("unread", "nodb") and "x" in perms:
                incomplete.append(f"setuid {path} (package {pkg}): content not verifiable ({csum})")
            else:
                package_setuid += 1
            if "w" in perms:
                issues.append(Issue(path, f"setuid/setgid (mode {mode}) and writable by the tenant"))
        elif kind == "sock" and len(rec) >= 5:
            counts["sockets"] += 1
            mode, user, perms, path = rec[1], rec[2], rec[3], rec[4]
            if _mine(path, ctl_dir):
                controls["socket"] = "found" if "w" in perms else "not writable"
                continue
            if "w" in perms and user != me and CONTAINER_SOCKET.search(path):
                issues.append(
                    Issue(
                        path,
                        f"container/runtime control socket writable by the tenant (mode {mode}, owner {user})",
                    )
                )
        elif kind == "dev" and len(rec) >= 5:
            counts["devices"] += 1
            mode, user, _group, path = rec[1], rec[2], rec[3], rec[4]
            if path == "/dev/null":
                controls["device"] = "found"
            if user != me and not _allowed_device(path, allowed_devices):
                issues.append(Issue(path, f"device node writable by the tenant (mode {mode}, owner {user})"))
        elif kind == "secret" and len(rec) >= 5:
            counts["secret_files"] += 1
            why, mode, user, path = rec[1], rec[2], rec[3], rec[4]
            if _mine(path, ctl_dir):
                controls["secret"] = "found"  # noqa: S105 - a control name, no password
                continue
            if user != me:
                issues.append(
                    Issue(
                        path,
                        f"readable by the tenant (mode {mode}, owner {user}) and holds key material ({why})",
                    )
                )
        elif kind == "control" and len(rec) >= 3:
            controls.setdefault(rec[1], rec[2])
        elif kind == "incomplete":
            incomplete.append("\t".join(rec[1:]))
        elif kind == "done":
            done = True
    # a path root runs that does not exist yet is a hole when the tenant can create it
    for k, path in absent:
        parent = str(PurePosixPath(path).parent)
        if k in ("X",) and parent in stats and "w" in stats[parent][2]:
            issues.append(
                Issue(
                    path,
                    f"absent, and the tenant can create it (parent {parent} writable): {'; '.join(whys.get((k, path), []))}",
                )
            )
    if not done:
        incomplete.append("the check did not finish")
    for name in ("setuid", "socket", "device", "secret", "writable"):
        state = controls.get(name, "missing")
        if (
            name == "setuid"
            and state != "found"
            and controls.get("setuid_home") == "nosuid"
            and package_setuid
        ):
            continue  # the home is mounted nosuid: the control cannot be setuid there; packages were seen
        if state != "found":
            incomplete.append(f"positive control {name}: {state}")
    n_foreign = 0
    kept: list[Issue] = []
    for issue in issues:
        if foreign is not None and foreign.search(issue.path):
            n_foreign += 1
        else:
            kept.append(issue)
    uniq = list({(i.path, i.why): i for i in kept}.values())
    return SurfaceScan(tuple(uniq), tuple(dict.fromkeys(incomplete)), counts, n_foreign)


def _mine(path: str, ctl_dir: str) -> bool:
    """In this run's own control directory (not a concurrent run's: they share the home)."""
    return bool(ctl_dir) and path.startswith(ctl_dir + "/")


def _sticky(mode: str) -> bool:
    return len(mode) == 4 and int(mode[0]) & 1 == 1
