"""Catalog probes over a fake transport, answering with outputs captured from the real tools."""

from __future__ import annotations

import re

from probes.catalog import probe_get
from probes.catalog.base import Outcome, Scope, Target
from tests.probes.catalog.captured import captured
from tests.probes.catalog.fake import LOGIN, FakeCluster, result

PAIR = Target(
    kind=Scope.TENANT_PAIR, name="tenant-a->tenant-b", endpoint=LOGIN, tenants=("tenant-a", "tenant-b")
)
CLUSTER = Target(kind=Scope.CLUSTER, name="cluster", endpoint=LOGIN)


def scheduler(private: bool, *, control_ok: bool = True):
    jobs: dict[str, tuple[str, str]] = {}

    def handler(user, host, cmd):
        if cmd.startswith("cd && sbatch"):
            name = re.search(r"-J (\S+)", cmd).group(1)
            jobs["4242"] = (name, user)
            return result("4242\n")
        if cmd.startswith("squeue"):
            lines = [
                f"{jid}|{name}|{owner}|PENDING||JobHeldUser"
                for jid, (name, owner) in jobs.items()
                if (owner == user or not private) and control_ok
            ]
            return result("\n".join(lines) + "\n")
        if cmd.startswith("sacct"):
            return result("Slurm accounting storage is disabled\n", exit_code=1)
        if cmd.startswith("scontrol -o show jobs"):
            return result(
                "".join(
                    f"JobId={j} JobName={n} UserId={o}(1)\n"
                    for j, (n, o) in jobs.items()
                    if owner_visible(o, user, private)
                )
            )
        if cmd.startswith("scancel"):
            return result()
        raise AssertionError(cmd)

    return FakeCluster(handler)


def owner_visible(owner: str, user: str, private: bool) -> bool:
    return owner == user or not private


def test_scheduler_privacy_passes_when_privatedata_hides_the_canary():
    cluster = scheduler(private=True)
    (finding,) = probe_get("scheduler_privacy")().execute(cluster.context(), PAIR)
    assert finding.outcome is Outcome.PASS and not finding.critical
    assert finding.evidence["paths"]["sacct -a"].startswith("not available")
    assert any(cmd.startswith("scancel 4242") for user, _, cmd in cluster.log if user == "user-b")


def test_scheduler_privacy_is_a_critical_fail_with_the_path_when_the_canary_shows():
    (finding,) = probe_get("scheduler_privacy")().execute(scheduler(private=False).context(), PAIR)
    assert finding.outcome is Outcome.FAIL and finding.critical
    assert {h["path"] for h in finding.evidence["hits"]} == {"squeue -a", "scontrol show jobs"}
    assert all(finding.evidence["nonce"] in h["excerpt"] for h in finding.evidence["hits"])


def test_scheduler_privacy_without_a_positive_control_is_an_error_never_a_pass():
    (finding,) = probe_get("scheduler_privacy")().execute(
        scheduler(private=True, control_ok=False).context(), PAIR
    )
    assert finding.outcome is Outcome.ERROR and "positive control" in finding.summary


def test_kernel_pending_reboot_on_captured_listings():
    clean = FakeCluster(lambda u, h, c: result(captured("kernel/devhost_no_pending.txt")))
    pending_text = captured("kernel/devhost_no_pending.txt").replace(
        "==boot==\n", "==boot==\nvmlinuz-6.18.45-fc-v669\n"
    )
    pending = FakeCluster(lambda u, h, c: result(pending_text))
    probe = probe_get("kernel_pending_reboot")()
    target = Target(kind=Scope.NODE, name="n", endpoint=LOGIN)
    assert probe.execute(clean.context(), target)[0].outcome is Outcome.PASS
    (bad,) = probe.execute(pending.context(), target)
    assert bad.outcome is Outcome.FAIL and bad.critical and "6.18.45-fc-v669" in bad.summary


def test_health_check_configured_on_a_captured_config():
    config = captured("slurm/scontrol_show_config_private_hc.txt")
    probe = probe_get("health_check_configured")()
    assert (
        probe.execute(FakeCluster(lambda u, h, c: result(config)).context(), CLUSTER)[0].outcome
        is Outcome.PASS
    )
    without = config.replace("HealthCheckProgram      = /usr/sbin/nhc", "HealthCheckProgram      = (null)")
    assert (
        probe.execute(FakeCluster(lambda u, h, c: result(without)).context(), CLUSTER)[0].outcome
        is Outcome.FAIL
    )
    garbage = FakeCluster(lambda u, h, c: result("", exit_code=127, stderr="scontrol: command not found"))
    assert probe.execute(garbage.context(), CLUSTER)[0].outcome is Outcome.ERROR


def home_cluster(mode: str):
    planted: dict[str, str] = {}

    def handler(user, host, cmd):
        if cmd.startswith("cd && umask"):
            name = re.search(r"> \.(\S+) &&", cmd).group(1)
            planted["name"] = name
            return result(f"{name}\nHOME=/home/{user}\n")
        if cmd.startswith("stat -c"):
            name = planted["name"]
            if mode == "0755":
                return result(f"755|user-b|user-b|directory|/home/user-b\n.\n..\n.{name}\n{name}\n")
            return result(
                "700|user-b|user-b|directory|/home/user-b\n",
                stderr="ls: cannot open directory '/home/user-b': Permission denied\n",
                exit_code=1,
            )
        if cmd.startswith("cd && rm -f"):
            return result()
        raise AssertionError(cmd)

    return FakeCluster(handler)


def test_home_isolation_open_home_is_a_critical_fail_closed_home_passes():
    probe = probe_get("home_isolation")()
    (leak,) = probe.execute(home_cluster("0755").context(), PAIR)
    assert leak.outcome is Outcome.FAIL and leak.critical and leak.evidence["mode"] == "0755"
    (ok,) = probe.execute(home_cluster("0700").context(), PAIR)
    assert ok.outcome is Outcome.PASS and ok.evidence["denied"]


def test_bmc_scan_from_a_node_that_reaches_ipmi_is_a_critical_fail():
    scan = captured("net/bmc_scan_mixed.txt").replace("127.0.0.1", "10.200.9.11")

    def handler(user, host, cmd):
        return result("10.200.9.11 \n") if cmd == "hostname -I" else result(scan)

    cluster = FakeCluster(handler)
    probe = probe_get("bmc_reachable")()
    targets = probe.targets(cluster.context())
    assert [t.name for t in targets] == ["10.200.9.11", "10.200.9.12"]  # compute nodes only
    (finding,) = probe.execute(cluster.context(), targets[0])
    assert finding.outcome is Outcome.FAIL and finding.critical
    assert "tcp 10.200.9.11 623" in finding.evidence["open"]
    scanned = finding.evidence["scanned"]
    assert all(a.startswith("10.200.9.") for a in scanned) and "10.200.9.254" in scanned
