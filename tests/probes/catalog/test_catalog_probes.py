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


FAST_WAITS = {"control_wait_s": 0.3, "retry_wait_s": 0.3, "poll_s": 0.01}


def scheduler(
    private: bool,
    *,
    control_ok: bool = True,
    accounting: str = "private",
    dbd_down_calls: int = 0,
    victim_lag_calls: int = 0,
):
    """A Slurm that answers as real 22.05 does. ``accounting``: private | leak | disabled | down
    (slurmdbd unreachable); ``dbd_down_calls``: the first N sacct calls fail as with slurmdbd
    stopped; ``victim_lag_calls``: the owner's first N sacct calls do not show the canary yet."""
    jobs: dict[str, tuple[str, str]] = {}
    calls = {"sacct": 0, "victim_sacct": 0}

    def handler(user, host, cmd):
        if cmd.startswith("cd && sbatch"):
            name = re.search(r"-J (\S+)", cmd).group(1)
            jobs["4242"] = (name, user)
            return result("4242\n")
        if cmd.startswith("squeue"):
            lines = [
                f"{jid}|{name}|{owner}|RUNNING|node1|None"
                for jid, (name, owner) in jobs.items()
                if (owner == user or not private) and control_ok
            ]
            return result("\n".join(lines) + "\n")
        if cmd.startswith("sacct"):
            calls["sacct"] += 1
            if accounting == "disabled":
                return result("Slurm accounting storage is disabled\n", exit_code=1)
            if accounting == "down" or calls["sacct"] <= dbd_down_calls:
                return result(
                    "",
                    exit_code=1,
                    stderr="sacct: error: slurm_persist_conn_open_without_init: failed to open persistent "
                    "connection to host:ctl:16819: Connection refused\n",
                )
            visible = []
            for jid, (name, owner) in jobs.items():
                if owner == user:
                    calls["victim_sacct"] += 1
                    if calls["victim_sacct"] <= victim_lag_calls:
                        continue
                if owner == user or accounting == "leak":
                    visible.append(f"{jid}|{name}|{owner}|RUNNING")
            return result("".join(v + "\n" for v in visible))
        if cmd.startswith("scontrol -o show jobs"):
            return result(
                "".join(
                    f"JobId={j} JobName={n} UserId={o}(1) JobState=RUNNING\n"
                    for j, (n, o) in jobs.items()
                    if owner_visible(o, user, private) and control_ok
                )
            )
        if cmd.startswith("scancel"):
            jobs.pop(cmd.split()[-1], None)
            return result()
        raise AssertionError(cmd)

    return FakeCluster(handler)


def owner_visible(owner: str, user: str, private: bool) -> bool:
    return owner == user or not private


def privacy(cluster: FakeCluster):
    (finding,) = probe_get("scheduler_privacy")().execute(cluster.context(settings=FAST_WAITS), PAIR)
    return finding


def test_scheduler_privacy_passes_only_when_every_path_was_checked_with_its_own_control():
    cluster = scheduler(private=True)
    finding = privacy(cluster)
    assert finding.outcome is Outcome.PASS and not finding.critical
    assert {p: v["status"] for p, v in finding.evidence["paths"].items()} == {
        "squeue -a": "checked",
        "scontrol show jobs": "checked",
        "sacct -a": "checked",
    }
    assert any(cmd.startswith("scancel 4242") for user, _, cmd in cluster.log if user == "user-b")


def test_scheduler_privacy_is_a_critical_fail_with_the_path_when_the_canary_shows():
    finding = privacy(scheduler(private=False))
    assert finding.outcome is Outcome.FAIL and finding.critical
    assert {h["path"] for h in finding.evidence["hits"]} == {"squeue -a", "scontrol show jobs"}
    assert all(finding.evidence["nonce"] in h["excerpt"] for h in finding.evidence["hits"])


def test_scheduler_privacy_catches_an_accounting_leak_behind_private_squeue():
    finding = privacy(scheduler(private=True, accounting="leak"))
    assert finding.outcome is Outcome.FAIL and finding.critical
    assert [h["path"] for h in finding.evidence["hits"]] == ["sacct -a"]


def test_scheduler_privacy_with_slurmdbd_down_is_an_error_never_a_pass():
    """The reported case: slurmdbd stopped during the probe used to turn a real sacct leak into a pass."""
    finding = privacy(scheduler(private=True, accounting="down"))
    assert finding.outcome is Outcome.ERROR, finding.summary
    assert finding.evidence["paths"]["sacct -a"]["status"] == "unchecked"
    assert "sacct -a" in finding.summary


def test_scheduler_privacy_waits_out_a_short_slurmdbd_outage_and_still_catches_the_leak():
    finding = privacy(scheduler(private=True, accounting="leak", dbd_down_calls=5))
    assert finding.outcome is Outcome.FAIL and finding.critical
    assert [h["path"] for h in finding.evidence["hits"]] == ["sacct -a"]


def test_scheduler_privacy_waits_for_a_lagging_accounting_record_instead_of_skipping_it():
    finding = privacy(scheduler(private=True, accounting="leak", victim_lag_calls=4))
    assert finding.outcome is Outcome.FAIL and finding.critical


def test_scheduler_privacy_whose_accounting_never_shows_the_owner_its_job_is_an_error():
    finding = privacy(scheduler(private=True, victim_lag_calls=10_000))
    assert finding.outcome is Outcome.ERROR
    assert "positive control" in finding.evidence["paths"]["sacct -a"]["why"]


def test_scheduler_privacy_counts_accounting_as_absent_only_when_slurm_says_it_is_disabled():
    finding = privacy(scheduler(private=True, accounting="disabled"))
    assert finding.outcome is Outcome.PASS
    assert finding.evidence["paths"]["sacct -a"]["status"] == "absent"


def test_scheduler_privacy_without_a_positive_control_is_an_error_never_a_pass():
    finding = privacy(scheduler(private=True, control_ok=False))
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


def health_cluster(config: str, inspection: str) -> FakeCluster:
    def handler(user, host, cmd):
        if cmd == "scontrol show config":
            return result(config)
        if cmd.startswith("p="):
            return result(inspection)
        raise AssertionError(cmd)

    return FakeCluster(handler)


def health_check(program_capture: str, *, program: str = "/usr/sbin/nhc", gpus: int = 0):
    config = captured("slurm/scontrol_show_config_private_hc.txt").replace(
        "HealthCheckProgram      = /usr/sbin/nhc", f"HealthCheckProgram      = {program}"
    )
    cluster = health_cluster(config, captured(f"healthcheck/{program_capture}"))
    ctx = cluster.context(facts={"scale": "testbed", "gpu_count": str(gpus)})
    (finding,) = probe_get("health_check_configured")().execute(ctx, CLUSTER)
    return finding


def test_health_check_that_runs_bin_true_fails_though_slurm_calls_it_periodically():
    finding = health_check("bin_true.txt", program="/bin/true")
    assert finding.outcome is Outcome.FAIL and "checks nothing" in finding.summary
    assert finding.evidence["verdict"]["kind"] == "trivial"


def test_health_check_script_that_only_logs_fails():
    assert health_check("noop_script.txt", program="/etc/slurm/noop.sh").outcome is Outcome.FAIL


def test_health_check_script_that_checks_but_never_drains_fails():
    finding = health_check("checks_without_drain.txt", program="/etc/slurm/checks_no_drain.sh")
    assert finding.outcome is Outcome.FAIL and "never drains" in finding.summary


def test_health_check_that_checks_the_fault_and_drains_the_node_passes():
    finding = health_check("testbed_healthcheck.txt", program="/etc/slurm/healthcheck.sh")
    assert finding.outcome is Outcome.PASS, finding.summary
    assert finding.evidence["verdict"]["kind"] == "drains"


def test_health_check_that_drains_but_checks_no_gpu_is_a_warn_on_a_gpu_cluster():
    finding = health_check("testbed_healthcheck.txt", program="/etc/slurm/healthcheck.sh", gpus=8)
    assert finding.outcome is Outcome.WARN and "checks no GPU" in finding.summary


def test_health_check_configured_but_not_installed_fails_and_unreadable_is_only_a_warn():
    assert health_check("missing.txt").outcome is Outcome.FAIL
    assert health_check("unreadable.txt", program="/etc/slurm/secret.sh").outcome is Outcome.WARN


def test_health_check_missing_or_unreadable_config_fails_or_errs():
    config = captured("slurm/scontrol_show_config_private_hc.txt")
    probe = probe_get("health_check_configured")()
    without = config.replace("HealthCheckProgram      = /usr/sbin/nhc", "HealthCheckProgram      = (null)")
    assert probe.execute(health_cluster(without, "").context(), CLUSTER)[0].outcome is Outcome.FAIL
    garbage = FakeCluster(lambda u, h, c: result("", exit_code=127, stderr="scontrol: command not found"))
    assert probe.execute(garbage.context(), CLUSTER)[0].outcome is Outcome.ERROR


def test_health_check_classifier_recognises_nhc_and_dcgm_by_what_the_script_runs():
    from probes.parsers.healthcheck import classify_health_check

    def script(body: str) -> str:
        return f"==resolved==\n/etc/slurm/hc.sh\n==stat==\n755|root|99|regular file\n==head==\n{body}"

    assert classify_health_check(script("#!/bin/sh\nexec /usr/sbin/nhc -t 60\n")).kind == "nhc"
    assert classify_health_check(script("#!/bin/sh\ndcgmi diag -r 1 || scontrol update\n")).kind == "dcgm"
    assert classify_health_check(script("#!/bin/sh\n# nhc would go here\nexit 0\n")).kind == "trivial"
    assert classify_health_check(script("#!/bin/sh\n")).protects is False


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


def test_node_replacement_counts_a_new_node_that_replaces_the_victim():
    from probes.catalog.node_replacement_time import PoolWatch

    watch = PoolWatch("node2", needed=2, stable_s=10)
    assert watch.observe(1, {"node1", "node2"}, ["unhealthy"]) is None
    assert watch.observe(3, {"node1"}, ["unhealthy"]) is None
    assert watch.observe(8, {"node1", "node3"}, ["gone"]) == 8


def test_node_replacement_never_counts_a_victim_undrained_while_its_fault_is_still_there():
    """The reported case: a loop that un-drains the faulty node without fixing it made the probe pass."""
    from probes.catalog.node_replacement_time import PoolWatch

    watch = PoolWatch("node2", needed=2, stable_s=10)
    seen = [
        watch.observe(t, {"node1", "node2"} if t % 4 else {"node1"}, ["unhealthy"]) for t in range(0, 120)
    ]
    assert seen == [None] * 120 and watch.went_bad


def test_node_replacement_without_the_apis_fault_list_needs_the_victim_stable_before_counting_it():
    from probes.catalog.node_replacement_time import PoolWatch

    flapping = PoolWatch("node2", needed=2, stable_s=10)
    assert all(
        flapping.observe(t, {"node1", "node2"} if t % 4 else {"node1"}, None) is None for t in range(120)
    )
    never_left = PoolWatch("node2", needed=2, stable_s=10)
    assert all(never_left.observe(t, {"node1", "node2"}, None) is None for t in range(60))
    repaired = PoolWatch("node2", needed=2, stable_s=10)
    assert repaired.observe(2, {"node1"}, None) is None
    assert [repaired.observe(t, {"node1", "node2"}, None) for t in (5, 10, 15)] == [None, None, 5]


def test_node_replacement_counts_a_repaired_victim_from_when_it_was_truly_back():
    from probes.catalog.node_replacement_time import PoolWatch

    watch = PoolWatch("node2", needed=2, stable_s=3)
    assert watch.observe(1, {"node1"}, ["unhealthy"]) is None
    assert watch.observe(4, {"node1", "node2"}, ["unhealthy"]) is None
    assert watch.observe(6, {"node1", "node2"}, []) is None
    assert watch.observe(9, {"node1", "node2"}, []) == 6


def test_a_provider_that_refuses_fault_tests_or_offers_no_api_is_declined_not_excused():
    from probes.catalog.base import Requirement
    from probes.matrix import probe_execute

    cluster = FakeCluster(lambda u, h, c: result())
    no_opt_in = cluster.context(
        capabilities={Requirement.SSH, Requirement.SLURM, Requirement.PROVIDER_API, Requirement.TWO_TENANTS}
    )
    (refused,) = probe_execute(probe_get("node_replacement_time")(), no_opt_in)
    assert refused.outcome is Outcome.DECLINED and "opted in" in refused.summary
    (no_api,) = probe_execute(probe_get("node_ready_time")(), cluster.context())
    assert no_api.outcome is Outcome.DECLINED and "provider_api" in no_api.summary
    (no_gpu,) = probe_execute(probe_get("gpu_inventory")(), cluster.context())
    assert no_gpu.outcome is Outcome.NOT_APPLICABLE


def test_monitoring_probes_without_a_tenant_metrics_endpoint_are_declined():
    cluster = FakeCluster(lambda u, h, c: result())
    for probe_id in ("metrics_coverage", "retention_days"):
        (finding,) = probe_get(probe_id)().execute(cluster.context(), CLUSTER)
        assert finding.outcome is Outcome.DECLINED, (probe_id, finding.summary)


def test_metrics_freshness_times_a_whole_scrape_spacing_not_a_lucky_phase():
    """Reported: on a node scraped every 60 s, a load started just before a scrape was seen in 3.24 s
    and passed. The spacing between two consecutive scrapes is what a load can go unseen for."""
    from probes.catalog.metrics_freshness import ScrapeSpacing

    sparse = ScrapeSpacing()
    polls = [None, 1000.0, 1000.0, 1000.0, 1060.0]  # absent at first, then one stamp until the next scrape
    assert [sparse.observe(p) for p in polls] == [None, None, None, None, 60.0]
    dense = ScrapeSpacing()
    assert [dense.observe(p) for p in (500.0, 503.0)] == [None, 3.0]
    restarted = ScrapeSpacing()  # an older stamp after a newer one: start over, never a negative spacing
    assert [restarted.observe(p) for p in (900.0, 100.0, 103.0)] == [None, None, 3.0]
    assert ScrapeSpacing().observe(float("nan")) is None


def test_scrape_spacing_waits_for_the_next_scrape_and_never_passes_a_series_that_stands_still():
    from probes.catalog.metrics_freshness import scrape_spacing

    polls = iter([None, 10.0, 10.0, 13.0])
    spaced, _, stamps = scrape_spacing(lambda: next(polls), timeout_s=30)
    assert spaced == 3.0 and stamps == [10.0, 13.0]
    stuck, waited, _ = scrape_spacing(lambda: 10.0, timeout_s=1.0)  # never scraped again: no spacing
    assert stuck is None and waited >= 1.0


def _bmc_cluster(scan_for):
    def handler(user, host, cmd):
        if cmd == "hostname -I":
            return result("10.200.9.11 \n")
        addresses = re.findall(r"10\.200\.9\.\d+", cmd.split("bmc-scan", 1)[1])
        return result(scan_for(addresses))

    return FakeCluster(handler)


def _clean_lines(address, udp="closed"):
    return [
        f"tcp {address} 623 timeout",
        f"tcp {address} 664 timeout",
        f"udp {address} 623 {udp}",
        f"redfish {address} https timeout",
        f"redfish {address} http timeout",
    ]


def test_bmc_scan_with_every_path_answered_and_nothing_open_passes():
    cluster = _bmc_cluster(lambda addrs: "\n".join(line for a in addrs for line in _clean_lines(a)))
    probe = probe_get("bmc_reachable")()
    (finding,) = probe.execute(cluster.context(), probe.targets(cluster.context())[0])
    assert finding.outcome is Outcome.PASS and finding.evidence["unchecked"] == []


def test_bmc_scan_with_a_path_it_could_not_check_is_an_error_never_a_pass():
    """A subshell that printed nothing, or a UDP ping cut before its three tries, is not 'closed'."""
    probe = probe_get("bmc_reachable")()

    def missing_one(addrs):
        lines = [line for a in addrs for line in _clean_lines(a)]
        return "\n".join(line for line in lines if line != f"udp {addrs[-1]} 623 closed")

    def cut_udp(addrs):
        return "\n".join(line for a in addrs for line in _clean_lines(a, "timeout" if a == addrs[0] else "closed"))

    for scan in (missing_one, cut_udp):
        cluster = _bmc_cluster(scan)
        (finding,) = probe.execute(cluster.context(), probe.targets(cluster.context())[0])
        assert finding.outcome is Outcome.ERROR, scan.__name__
        assert "not checked" in finding.summary and finding.evidence["unchecked"]


def test_bmc_scan_that_finds_an_open_path_fails_even_with_unchecked_paths():
    def scan(addrs):
        lines = [line for a in addrs[1:] for line in _clean_lines(a, "timeout")]
        return "\n".join([*lines, f"udp {addrs[0]} 623 open"])

    cluster = _bmc_cluster(scan)
    probe = probe_get("bmc_reachable")()
    (finding,) = probe.execute(cluster.context(), probe.targets(cluster.context())[0])
    assert finding.outcome is Outcome.FAIL and finding.critical
    assert finding.evidence["unchecked"]
