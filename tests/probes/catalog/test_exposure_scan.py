"""The foreign-tenant data exposure scan: its records judged (pure), and its commands quoted."""

from __future__ import annotations

from probes.catalog.tenant_data_exposure import PLANT_SCRIPT, SCAN_SCRIPT, _script
from probes.parsers.exposure import parse_exposure_scan

VICTIM, NONCE, CTL = "tb-tenant-b", "opgrade-canary-0123456789ab", "opgrade-ctl-ba9876543210"


def scan(*lines: str, done: bool = True):
    body = "\n".join([*lines, *(["done"] if done else [])])
    return parse_exposure_scan(body, victim_user=VICTIM, victim_nonces=[NONCE], control_nonce=CTL)


def controls(root: str) -> list[str]:
    return [
        f"control\tplanted\t{root}",
        f"hit\t{root}/.opgrade-ctl-{CTL}.txt\t{CTL}",
        f"hit\t{root}/.opgrade-ctl-{CTL}.gz\t{CTL}",
    ]


def test_a_clean_complete_scan_has_no_exposure_and_lists_every_root():
    result = scan(
        "root\topen\t/tmp",
        "root\tdenied\t/var/log/private",
        "root\tabsent\t/scratch",
        *controls("/tmp"),
        f"victim\tN\td\t700\t/home/{VICTIM}",
        "denied\t/var/log/private",
        "stat\tfiles\t12\tbytes\t3456\tpartial\t0",
    )
    assert result.complete and not result.exposures
    evidence = result.evidence()
    assert evidence["roots"] == {"/tmp": "open", "/var/log/private": "denied", "/scratch": "absent"}
    assert evidence["controls"] == {"/tmp": "found"}
    assert evidence["victim_entries_denied"] == [f"/home/{VICTIM}"]
    assert evidence["files_read"] == 12 and evidence["bytes_read"] == 3456


def test_a_victims_nonce_in_a_rotated_compressed_log_is_an_exposure():
    result = scan(*controls("/tmp"), f"hit\t/var/log/old/app.log.1.gz\t{NONCE}")
    assert [(e.path, e.why) for e in result.exposures] == [("/var/log/old/app.log.1.gz", f"canary {NONCE}")]


def test_a_file_naming_the_victim_or_owned_by_it_and_readable_is_an_exposure():
    result = scan(
        f"hit\t/srv/backup/accounting.txt\t{VICTIM}",
        "victim\tR\tf\t644\t/var/spool/slurm/job-42.sh",
        f"victim\tR\td\t755\t/srv/backup/{VICTIM}",
    )
    whys = {e.path: e.why for e in result.exposures}
    assert whys == {
        "/srv/backup/accounting.txt": f"names {VICTIM}",
        "/var/spool/slurm/job-42.sh": f"owned by {VICTIM}",
        f"/srv/backup/{VICTIM}": f"path names {VICTIM}",
    }


def test_a_missing_control_or_a_bound_hit_makes_the_scan_incomplete_never_clean():
    missing_gz = scan("control\tplanted\t/tmp", f"hit\t/tmp/.opgrade-ctl-{CTL}.txt\t{CTL}")
    assert missing_gz.controls_missing == ("/tmp",) and not missing_gz.complete
    assert missing_gz.evidence()["controls"] == {"/tmp": "MISSING"}
    bounded = scan(*controls("/tmp"), "incomplete\tfiles (60000 readable files, cap 50000)")
    assert not bounded.complete
    assert not scan(*controls("/tmp"), done=False).complete


def test_the_observers_own_control_files_are_never_counted_as_the_victims():
    result = scan(*controls("/tmp"), f"hit\t/tmp/.opgrade-ctl-{CTL}.txt\t{VICTIM}")
    assert not result.exposures


def test_scan_and_plant_commands_quote_every_path_and_pattern():
    evil = "/srv/x; rm -rf / #"
    rendered = _script(SCAN_SCRIPT, "scan", [30, 10, 10, VICTIM, CTL, 1, NONCE, evil]).render()
    assert rendered.endswith("'/srv/x; rm -rf / #'")
    assert "'/srv/x; rm -rf / #'" in _script(PLANT_SCRIPT, "plant", [NONCE, evil]).render()


def exposure_cluster(*, leak: bool = False, control: bool = True):
    """B plants its nonce; A's scan answers with the control found (or not) and, if ``leak``, B's nonce."""
    import re

    from probes.catalog.base import Requirement
    from tests.probes.catalog.fake import FakeCluster, result

    state: dict[str, str] = {}

    def handler(user, host, cmd):
        if " plant " in cmd:
            state["nonce"] = nonce = re.search(r"plant (opgrade-canary-[0-9a-f]+)", cmd).group(1)
            return result(f"planted\t/home/{user}/{nonce}.txt\nplanted\t/tmp/{nonce}\n")
        if " scan " in cmd:
            ctl = re.search(r"(opgrade-ctl-[0-9a-f]+)", cmd).group(1)
            lines = ["root\topen\t/tmp", "root\tabsent\t/scratch", "control\tplanted\t/tmp"]
            if control:
                lines += [
                    f"hit\t/tmp/.opgrade-ctl-{ctl}.txt\t{ctl}",
                    f"hit\t/tmp/.opgrade-ctl-{ctl}.gz\t{ctl}",
                ]
            if leak:
                lines.append(f"hit\t/tmp/{state['nonce']}\t{state['nonce']}")
            return result("\n".join([*lines, "stat\tfiles\t3\tbytes\t30\tpartial\t0", "done"]))
        return result("")

    cluster = FakeCluster(handler)
    return cluster, cluster.context(capabilities={Requirement.SSH, Requirement.TWO_TENANTS})


def test_the_exposure_probe_passes_fails_critically_or_errors_as_its_scan_says():
    from probes.catalog import probe_get
    from tests.probes.catalog.test_catalog_probes import PAIR

    probe = probe_get("tenant_data_exposure")()
    (clean,) = probe.execute(exposure_cluster()[1], PAIR)
    assert str(clean.outcome) == "pass", clean.summary
    assert set(clean.evidence["nodes"]) == {"10.200.9.3", "10.200.9.11"}  # login and a compute node
    (leak,) = probe.execute(exposure_cluster(leak=True)[1], PAIR)
    assert str(leak.outcome) == "fail" and leak.critical and "/tmp/opgrade-canary-" in leak.summary
    (blind,) = probe.execute(exposure_cluster(control=False)[1], PAIR)
    assert str(blind.outcome) == "error" and "control missing in /tmp" in blind.summary
    cluster, ctx = exposure_cluster()
    probe.execute(ctx, PAIR)
    users = {
        (user, "scan" if " scan " in cmd else "plant" if " plant " in cmd else "rm")
        for user, _, cmd in cluster.log
    }
    assert users == {("user-b", "plant"), ("user-a", "scan"), ("user-b", "rm")}  # A only looks, B cleans up
