"""host_privilege_surface: the plan derived from a node's configuration, and the check judged (pure).

The captured outputs come from a real exemplary testbed, clean and with the nine red-team mutations
of ``testbed/redteam.py`` applied (``tests/probes/captured/privilege/``).
"""

from __future__ import annotations

import re

import pytest

from probes.catalog.host_privilege_surface import CHECK_SCRIPT, GATHER, GATHER_SCRIPT, _script
from probes.parsers import ParseError
from probes.parsers.privilege import DEFAULT_DEVICES, judge, parse_gather, path_dirs, surface_plan
from tests.probes.catalog.captured import captured

ROOT = "/var/lib/opgrade-testbed/h13"
DEVICES = DEFAULT_DEVICES.split()


def _gathered(tag: str):
    return parse_gather(captured(f"privilege/gather_{tag}.txt"))


def _judged(tag: str, **kw):
    g = _gathered(tag)
    plan = surface_plan(g)
    text = kw.pop("text", None) or captured(f"privilege/check_{tag}.txt")
    return judge(text, plan, me=g.user, allowed_devices=DEVICES, **kw)


def test_the_plan_comes_from_the_nodes_own_configuration_and_daemons():
    g = _gathered("clean")
    assert g.config["SLURM_CONF"] == f"{ROOT}/slurm/slurm.conf" and g.user == "h13-tenant-a"
    plan = {(p.kind, p.path): p.why for p in surface_plan(g)}
    # munged's --key-file and every sshd's -o HostKey=, read from their command lines
    assert "munged --key-file" in plan[("S", f"{ROOT}/munge-etc/munge.key")]
    assert ("S", f"{ROOT}/ssh/host_login") in plan and ("S", f"{ROOT}/ssh/host_node1") in plan
    assert ("S", f"{ROOT}/slurm/slurmdbd.conf") in plan and ("S", "/etc/munge/munge.key") in plan
    assert plan[("X", f"{ROOT}/bin/healthcheck.sh")] == "HealthCheckProgram in slurm.conf"
    assert ("X", f"{ROOT}/slurm/slurm.conf") in plan and ("T", "/usr/lib/x86_64-linux-gnu/slurm-wlm") in plan
    assert {("T", d) for d in ("/usr/local/sbin", "/usr/sbin", "/etc/cron.d", "/etc/profile.d")} <= set(plan)
    # and every ancestor, so a writable parent directory is seen too
    assert ("A", f"{ROOT}/bin") in plan and ("A", "/var/lib") in plan


def test_the_mutated_node_names_its_epilog_and_its_path_directory():
    plan = {(p.kind, p.path) for p in surface_plan(_gathered("mutated"))}
    assert ("X", f"{ROOT}/bin/epilog.sh") in plan
    assert ("T", "/srv/opgtb-h13-tools") in plan  # from the HealthCheckProgram's PATH= line


def test_what_cron_and_systemd_run_is_planned_from_their_own_files():
    g = _gathered("clean")
    plan = {(p.kind, p.path): p.why for p in surface_plan(g)}
    assert plan[("R", "/sbin/e2scrub_all")] == "named by cron (/etc/cron.d/e2scrub_all)"
    assert plan[("X", "/usr/sbin/sshd")]  # ExecReload=/usr/sbin/sshd -t, and root's sshd
    assert ("X", "/lib/systemd/systemd-networkd") in plan  # ExecStart=!!/lib/... prefixes dropped
    assert ("T", "/usr/local/lib") in plan  # ld.so.conf.d: root's programs load libraries from it


def test_the_clean_testbed_passes_with_every_control_found():
    scan = _judged("clean")
    assert scan.issues == () and scan.complete, scan.evidence()
    assert scan.checked["setuid"] >= 10 and scan.checked["paths"] >= 100


def test_every_red_team_mutation_is_an_issue_on_its_own_path():
    scan = _judged("mutated")
    paths = {i.path: i.why for i in scan.issues}
    for marker, why in [
        (f"{ROOT}/munge-etc/munge.key", "readable"),
        (f"{ROOT}/config-backup/ssh/ssh_host_ed25519_key", "key material"),
        ("/opt/opgtb-h13/bin/bash", "no installed package owns it"),
        (f"{ROOT}/bin/epilog.sh", "Epilog in slurm.conf"),
        ("/etc/cron.d/opgtb-h13-cleanup", "writable"),
        ("/srv/opgtb-h13-rotate.sh", "named by cron (/etc/cron.d/opgtb-h13-rotate)"),
        (f"{ROOT}/slurm/slurmdbd.conf", "readable"),
        ("/run/opgtb-h13/docker.sock", "container/runtime control socket"),
        ("/srv/opgtb-h13-tools", "PATH"),
        ("/dev/opgtb-h13-kmsg", "device node"),
    ]:
        assert why in paths.get(marker, ""), (marker, sorted(paths))
    # the evidence names paths, modes and owners: never a key's content
    assert "PRIVATE KEY" not in str(scan.evidence()) and "opgrade-control" not in str(scan.evidence())


def test_a_check_cut_short_or_missing_a_control_is_never_a_pass():
    text = captured("privilege/check_clean.txt")
    unfinished = _judged("clean", text=text.replace("\ndone\n", "\n"))
    assert not unfinished.complete and "the check did not finish" in unfinished.incomplete
    no_socket = _judged("clean", text="\n".join(x for x in text.splitlines() if "docker.sock" not in x))
    assert "positive control socket: missing" in no_socket.incomplete
    no_null = _judged("clean", text="\n".join(x for x in text.splitlines() if not x.endswith("/dev/null")))
    assert "positive control device: missing" in no_null.incomplete
    bound = _judged("clean", text=text + "incomplete\ttime (setuid scan)\n")
    assert "time (setuid scan)" in bound.incomplete


def test_setuid_files_are_judged_by_their_package_and_checksum():
    g = _gathered("clean")
    base = captured("privilege/check_clean.txt").replace("\ndone\n", "\n")
    extra = (
        "suid\t4755\troot\troot\tr-x\tutil-linux\tdiffers\t/usr/bin/mount\n"
        "suid\t4755\troot\troot\trx\t-\tnodb\t/opt/vendor/bin/helper\n"
        "suid\t4711\troot\troot\tx\tpasswd\tunread\t/usr/bin/chfn\n"
        f"suid\t4700\t{g.user}\t{g.user}\trwx\t-\tnodb\t{g.home}/bin/mine\n"
        # a concurrent run's control (same tenant, same home) neither counts as this run's nor as an issue
        f"suid\t4700\t{g.user}\t{g.user}\trwx\t-\tnodb\t{g.home}/.opgrade-hps.other/ctl-suid\n"
        "done\n"
    )
    scan = judge(base + extra, surface_plan(g), me=g.user, allowed_devices=DEVICES)
    paths = {i.path: i.why for i in scan.issues}
    assert "differs from package util-linux" in paths["/usr/bin/mount"]
    assert "no installed package owns it" in paths["/opt/vendor/bin/helper"]
    assert f"{g.home}/bin/mine" not in paths  # the tenant's own setuid file gives it nothing
    assert any("/usr/bin/chfn" in why for why in scan.incomplete)  # runnable, not verifiable: not a pass


def test_other_clusters_paths_on_a_shared_machine_are_counted_not_judged():
    text = captured("privilege/check_clean.txt").replace(
        "\ndone\n", "\ndev\t666\troot\troot\t/dev/opgtb-other-kmsg\ndone\n"
    )
    foreign = re.compile(r"(/opgrade-testbed/|opgtb-)(?!h13[-/])[a-z][a-z0-9]*[-/]")
    scan = _judged("clean", text=text, foreign=foreign)
    assert scan.issues == () and scan.foreign == 1
    assert [i.path for i in _judged("clean", text=text).issues] == ["/dev/opgtb-other-kmsg"]


@pytest.mark.parametrize(
    ("line", "dirs"),
    [
        ("export PATH=/srv/tools:$PATH", ["/srv/tools"]),
        ("ENV_SUPATH\tPATH=/usr/local/sbin:/usr/sbin", ["/usr/local/sbin", "/usr/sbin"]),
        ('Environment="PATH=/opt/slurm/bin:/usr/bin"', ["/opt/slurm/bin", "/usr/bin"]),
        ("# no path here", []),
    ],
)
def test_path_lines_give_their_directories(line, dirs):
    assert path_dirs(line) == dirs


def test_a_gather_without_its_end_is_refused():
    with pytest.raises(ParseError):
        parse_gather("config\tClusterName = x\n")


def test_the_scripts_travel_as_single_quoted_words():
    assert GATHER.render().startswith("bash -c ") and "'" in GATHER.render()
    cmd = _script(CHECK_SCRIPT, "check", [90, 5000, DEFAULT_DEVICES, "S\t1\t/etc/it's here", "--"])
    assert "/etc/it" in cmd.render() and GATHER_SCRIPT.count("\n") > 10
