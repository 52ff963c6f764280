"""The testbed seen from outside: over SSH as a tenant, with Slurm commands, and over HTTP.

Brings up the shared ``exemplary`` and ``leaky`` testbeds (two nodes each) once, plus a
third, private exemplary testbed for the destructive fault tests, and checks that each
knob behaves as its profile says. Needs root and the packages of
scripts/install-testbed.sh; fails otherwise, naming what is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed import api, runtime
from testbed.errors import TestbedError
from testbed.layout import NETNS_PREFIX
from testbed.pytest_helpers import http_json, http_request, job_held, prefixed_name, running_testbed, ssh_run

pytestmark = pytest.mark.testbed

Info = api.TestbedInfo


def wait_for(check: Callable[[], Any], *, timeout: float, interval: float = 0.5, what: str = "") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def ok(proc: Any) -> str:
    assert proc.returncode == 0, f"rc={proc.returncode} stdout={proc.stdout!r} stderr={proc.stderr!r}"
    return str(proc.stdout)


@pytest.fixture(scope="module")
def both(testbed_exemplary: Info, testbed_leaky: Info) -> dict[str, Info]:
    return {"exemplary": testbed_exemplary, "leaky": testbed_leaky}


@pytest.fixture(scope="module")
def fault_bed() -> Iterator[Info]:
    with running_testbed("exemplary", name=prefixed_name("flt"), nodes=2) as info:
        yield info


# ----------------------------------------------------------------- the basics


def test_two_testbeds_run_side_by_side_on_their_own_subnets(both: dict[str, Info]) -> None:
    ex, lk = both["exemplary"], both["leaky"]
    assert ex.subnet != lk.subnet
    assert ex.phase == lk.phase == "ready"
    for info in (ex, lk):
        out = ok(ssh_run(info, "a", "sinfo -h -N -o '%N %t'"))
        assert sorted(out.split()) == sorted([*info.nodes, "idle", "idle"])


@pytest.mark.parametrize("profile", ["exemplary", "leaky"])
def test_a_tenant_can_ssh_in_and_run_a_batch_job(both: dict[str, Info], profile: str) -> None:
    info = both[profile]
    out = ok(
        ssh_run(info, "a", "cd ~ && sbatch --wait --parsable -o job-%j.out --wrap hostname && cat job-*.out")
    )
    job_id, host = out.split()[:2]
    assert job_id.isdigit()
    assert host in info.nodes


def test_no_namespace_has_a_route_off_the_machine(both: dict[str, Info]) -> None:
    for info in both.values():
        out = ok(ssh_run(info, "a", "ip route"))
        assert "default" not in out
        assert info.subnet in out


def test_up_is_idempotent_and_refuses_other_knobs(both: dict[str, Info]) -> None:
    ex = both["exemplary"]
    t0 = time.monotonic()
    again = api.up("exemplary", name=ex.name, nodes=len(ex.nodes))
    assert time.monotonic() - t0 < 2
    assert again.api_token == ex.api_token and again.subnet == ex.subnet
    with pytest.raises(TestbedError, match="other knobs"):
        api.up("exemplary", name=ex.name, nodes=len(ex.nodes), overrides={"homes": {"mode": "0755"}})


# ----------------------------------------------------------------- isolation knobs


def test_private_data_hides_other_tenants_jobs_only_in_exemplary(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        job = ok(ssh_run(info, "b", "cd ~ && sbatch --parsable -o /dev/null --wrap 'sleep 60'")).strip()
        try:
            wait_for(
                lambda i=info, j=job: j in ok(ssh_run(i, "b", "squeue -h -o %i")), timeout=10, what="b's job"
            )
            seen_by_a = ok(ssh_run(info, "a", "squeue -h -a -o '%i %u'"))
            shown = ok(ssh_run(info, "a", f"scontrol show job {job} 2>&1 || true"))
        finally:
            ok(ssh_run(info, "b", f"scancel {job}"))
        if profile == "exemplary":
            assert job not in seen_by_a
            assert (
                "Invalid job id" in shown
                or "access denied" in shown.lower()
                or f"UserId={info.tenant('b').user}" not in shown
            )
        else:
            assert f"{job} {info.tenant('b').user}" in seen_by_a
            assert f"UserId={info.tenant('b').user}" in shown


def test_private_data_governs_who_can_read_the_job_completion_log(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        ok(ssh_run(info, "b", "cd ~ && sbatch --wait -o /dev/null --wrap true"))
        proc = ssh_run(info, "a", f"cat {info.jobcomp_log}")
        b_user = info.tenant("b").user
        if profile == "exemplary":
            assert proc.returncode != 0 and b_user not in proc.stdout
        else:
            assert f"UserId={b_user}({_uid(info, 'b')})" in ok(proc)


def test_each_tenant_has_a_slurm_account_and_sacct_follows_accounting_private_data(
    both: dict[str, Info],
) -> None:
    for profile, info in both.items():
        name = f"acct{uuid.uuid4().hex[:6]}"
        ok(ssh_run(info, "b", f"cd ~ && sbatch --wait -J {name} -o /dev/null --wrap true"))
        own = wait_for(  # slurmctld hands the record to slurmdbd shortly after the job ends
            lambda i=info, n=name: ok(ssh_run(i, "b", f"sacct -X -n -P -S now-1days -o JobName,User,Account --name {n}")),
            timeout=15, what="the accounting record",
        )  # fmt: skip
        assert own.split() == [f"{name}|{info.tenant('b').user}|tenant-b"]
        seen = ok(ssh_run(info, "a", "sacct -X -n -P -a -S now-1days -o JobName,User"))
        assert (name in seen) == (profile == "leaky")
        assocs = ok(ssh_run(info, "a", "sacctmgr -n -P show assoc format=account,user"))
        assert f"tenant-a|{info.tenant('a').user}" in assocs.split()
        assert (f"tenant-b|{info.tenant('b').user}" in assocs.split()) == (profile == "leaky")


def _uid(info: Info, tenant_id: str) -> int:
    import pwd

    return pwd.getpwnam(info.tenant(tenant_id).user).pw_uid


def test_home_directories_follow_homes_mode(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        b_home = info.tenant("b").home
        proc = ssh_run(info, "a", f"stat -c %a {b_home} && ls -a {b_home}")
        if profile == "exemplary":
            assert proc.stdout.startswith("700") and proc.returncode != 0
        else:
            assert ok(proc).startswith("755")


def test_the_log_directory_is_readable_across_tenants_only_in_leaky(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        b_log = f"{info.log_dir}/{info.tenant('b').user}/messages.log"
        proc = ssh_run(info, "a", f"cat {b_log}")
        assert (proc.returncode == 0) == (profile == "leaky"), proc.stderr


def _log_line(info: Info, tenant_id: str) -> str:
    """Have ``tenant_id`` send a unique syslog line from a compute node, as a job: a job step from
    the login node (SSH to a node needs a job there under ``ssh.restrict_to_jobs``)."""
    text = f"marker-{uuid.uuid4().hex[:10]}"
    node = next(iter(info.nodes))
    ctl = info.syslog_addr.split(":")[0]
    ok(ssh_run(info, tenant_id, f"srun -w {node} -N1 -n1 -t 1 logger -n {ctl} -P 514 -d {text}"))
    return text


def test_the_log_api_is_strictly_per_tenant_in_exemplary(both: dict[str, Info]) -> None:
    info = both["exemplary"]
    a, b = info.tenant("a"), info.tenant("b")
    text = _log_line(info, "b")
    url = f"{info.logs_url}/query?contains={text}"
    code, body = wait_for(
        lambda: (r := http_json(url, auth=(b.http_user, b.http_password)))[1].get("lines") and r,
        timeout=10, what="b's line in b's logs",
    )  # fmt: skip
    assert code == 200 and body["tenant"] == b.user
    code, body = http_json(url, auth=(a.http_user, a.http_password))
    assert code == 200 and body["lines"] == []
    code, _ = http_json(url, auth=(a.http_user, a.http_password), headers={"X-Scope-OrgID": b.user})
    assert code == 403
    code, _ = http_json(url)
    assert code == 401
    code, _ = http_json(url, auth=(a.http_user, "wrong"))
    assert code == 401


def test_the_log_api_honours_a_forged_tenant_header_in_leaky(both: dict[str, Info]) -> None:
    info = both["leaky"]
    a, b = info.tenant("a"), info.tenant("b")
    text = _log_line(info, "b")
    url = f"{info.logs_url}/query?contains={text}"
    forged = {"X-Scope-OrgID": b.user}
    code, body = wait_for(
        lambda: (r := http_json(url, auth=(a.http_user, a.http_password), headers=forged))[1].get("lines") and r,
        timeout=info.knobs["logs"]["ingest_delay_s"] + 10, what="b's line through a forged header",
    )  # fmt: skip
    assert code == 200 and text in body["lines"][0]
    code, body = http_json(url, auth=(a.http_user, a.http_password))
    assert code == 200 and any(text in line for line in body["lines"])  # no header: everything


def _push(info: Info, tenant_id: str, metric: str) -> None:
    t = info.tenant(tenant_id)
    code, body = http_request(
        f"{info.pushgateway_url}/metrics/job/probe/tenant/{t.user}",
        auth=(t.http_user, t.http_password), method="POST", data=f"{metric} 1\n".encode(),
    )  # fmt: skip
    assert code == 200, body


def _series_names(info: Info, tenant_id: str) -> set[str]:
    t = info.tenant(tenant_id)
    auth = (t.http_user, t.http_password)
    names: set[str] = set()
    for query in ['{__name__=~".+"}', '{__name__=~".+", tenant!="' + t.user + '"}', '{job="probe"}']:
        code, body = http_json(f"{info.metrics_url}/api/v1/query?query={_q(query)}", auth=auth)
        assert code == 200, body
        names |= {r["metric"].get("__name__", "") for r in body["data"]["result"]}
    code, body = http_json(f"{info.metrics_url}/api/v1/label/__name__/values", auth=auth)
    assert code == 200
    names |= set(body["data"])
    code, body = http_json(f"{info.metrics_url}/api/v1/series?match[]={_q('{__name__=~".+"}')}", auth=auth)
    assert code == 200
    names |= {s["__name__"] for s in body["data"]}
    return names


def _q(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def test_metrics_of_one_tenant_stay_hidden_from_the_other_only_in_exemplary(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        mine, theirs = f"tb_a_{uuid.uuid4().hex[:8]}", f"tb_b_{uuid.uuid4().hex[:8]}"
        _push(info, "a", mine)
        _push(info, "b", theirs)
        wait_for(lambda i=info, m=mine: m in _series_names(i, "a"), timeout=20, what="a's own metric")
        wait_for(lambda i=info, m=theirs: m in _series_names(i, "b"), timeout=20, what="b's own metric")
        visible = _series_names(info, "a")
        assert (theirs in visible) == (profile == "leaky")
        # Prometheus scrapes the node exporters too (leaky: every 60 s, so the first may still come)
        wait_for(lambda i=info: "node_load1" in _series_names(i, "a"), timeout=70, what="node metrics")
        code, _ = http_request(f"{info.metrics_url}/api/v1/query?query=up")
        assert code == 401


def test_kernel_pending_reboot_and_bmc_reachability_follow_their_knobs(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        node = sorted(info.nodes.values(), key=lambda n: n["address"])[0]["address"]
        if not os.path.isdir("/boot"):
            pytest.skip("not applicable: this host has no /boot to mount the simulated kernels over")
        out = ok(ssh_run(info, "a", "uname -r; ls /boot | sed -n 's/^vmlinuz-//p' | sort -V | tail -1"))
        running, newest = out.split()
        assert (newest != running) == info.knobs["kernel"]["pending_reboot"] == (profile == "leaky")
        probe = f"timeout 3 bash -c 'exec 3<>/dev/tcp/{node}/{info.bmc_port} && head -c 7 <&3'"
        proc = ssh_run(info, "a", probe)
        assert (proc.returncode == 0) == (profile == "leaky"), proc.stderr
        if profile == "leaky":
            assert proc.stdout.startswith("BMC-SIM")


def test_the_health_check_program_is_configured_only_in_exemplary(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        out = ok(ssh_run(info, "a", "scontrol show config | grep -E '^(HealthCheckProgram|PrivateData)'"))
        assert ("healthcheck.sh" in out) == (profile == "exemplary")


def test_the_provider_api_requires_its_token(both: dict[str, Info]) -> None:
    info = both["exemplary"]
    code, _ = http_json(f"{info.api_url}/v1/nodes")
    assert code == 401
    code, _ = http_json(f"{info.api_url}/v1/nodes", headers={"Authorization": "Bearer nope"})
    assert code == 401
    code, body = api.provider_call(info.name, "GET", "/v1/nodes")
    assert code == 200 and {n["name"] for n in body["nodes"]} == set(info.nodes)


# ----------------------------------------------------------------- monitoring knobs


def _prom(info: Info, path: str) -> Any:
    t = info.tenant("a")
    code, body = http_json(f"{info.metrics_url}/api/v1/{path}", auth=(t.http_user, t.http_password))
    assert code == 200, body
    return body["data"]


def test_prometheus_keeps_metrics_as_long_as_metrics_retention_says(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        flags = _prom(info, "status/flags")
        assert flags["storage.tsdb.retention.time"] == {"exemplary": "30d", "leaky": "1d"}[profile]


def test_node_scrape_targets_follow_scrape_all_nodes_and_scrape_interval(both: dict[str, Info]) -> None:
    for profile, info in both.items():
        live = sorted((n for n in info.nodes.values() if n["status"] == "ready"), key=lambda n: n["address"])
        want = live if profile == "exemplary" else live[1::2]

        def targets(i: Info = info) -> list[dict[str, Any]]:
            return [
                t for t in _prom(i, "targets?state=active")["activeTargets"] if t["labels"]["job"] == "node"
            ]

        wait_for(lambda t=targets, w=want: len(t()) == len(w), timeout=10, what=f"{profile} node targets")
        found = targets()
        assert sorted(t["labels"]["instance"] for t in found) == [f"{n['address']}:9100" for n in want]
        assert {t["scrapeInterval"] for t in found} == {"3s" if profile == "exemplary" else "1m"}


def test_the_log_api_returns_a_line_only_after_logs_ingest_delay(both: dict[str, Info]) -> None:
    info = both["leaky"]
    b = info.tenant("b")
    text = _log_line(info, "b")
    filed = f"{info.log_dir}/{b.user}/messages.log"
    wait_for(lambda: text in Path(filed).read_text(), timeout=10, what="the line in rsyslog's file")
    code, body = http_json(f"{info.logs_url}/query?contains={text}", auth=(b.http_user, b.http_password))
    assert code == 200 and body["lines"] == []  # received, not yet queryable (lag 20 s)
    # that it becomes queryable after the lag: test_the_log_api_honours_a_forged_tenant_header_in_leaky


# ----------------------------------------------------------------- faults and the operator


def _slurm_state(info: Info, node: str) -> str:
    out = ssh_run(info, "a", f"scontrol show node {node} -o 2>&1 | grep -o 'State=[^ ]*'")
    return out.stdout.strip()


def test_a_cut_link_is_marked_down_by_slurm_then_replaced_by_the_exemplary_operator(fault_bed: Info) -> None:
    info = fault_bed
    victim = sorted(info.nodes)[0]
    api.inject_fault(info.name, victim, "link_down")
    wait_for(lambda: any(f in _slurm_state(info, victim) for f in ("NOT_RESPONDING", "DOWN")),
             timeout=25, interval=0.3, what=f"Slurm to mark {victim} not responding")  # fmt: skip

    def replaced() -> list[dict[str, Any]] | None:
        _, body = api.provider_call(info.name, "GET", "/v1/nodes")
        names = {n["name"]: n for n in body["nodes"]}
        fresh = [n for n in body["nodes"] if n["name"] not in info.nodes and n["status"] == "ready"]
        return fresh if victim not in names and fresh else None

    fresh = wait_for(replaced, timeout=25, what="the operator to replace the node")
    out = ok(ssh_run(info, "a", "sinfo -h -N -o '%N %t'"))
    assert f"{fresh[0]['name']} idle" in out and victim not in out
    events = [e["event"] for e in api.provider_call(info.name, "GET", "/v1/events")[1]["events"]]
    assert "node_bad" in events and "node_replaced" in events


def test_a_node_provisioned_through_the_api_becomes_idle(fault_bed: Info) -> None:
    info = fault_bed
    t0 = time.monotonic()
    code, body = api.provider_call(info.name, "POST", "/v1/nodes", {"count": 1})
    assert code == 202 and time.monotonic() - t0 < 1.5  # returns at once
    name = body["nodes"][0]
    wait_for(lambda: f"{name} idle" in ok(ssh_run(info, "a", "sinfo -h -N -o '%N %t'")),
             timeout=20, what=f"{name} idle")  # fmt: skip
    current = api.info(info.name)
    address = current.nodes[name]["address"]
    # exemplary restricts SSH to compute nodes to tenants with a job there (pam_slurm_adopt-like)
    assert ssh_run(current, "a", "hostname", host=address).returncode != 0
    with job_held(current, "a", name):
        ok(ssh_run(current, "a", "hostname", host=address))
    code, _ = api.provider_call(info.name, "DELETE", f"/v1/nodes/{name}")
    assert code == 202
    wait_for(lambda: name not in ok(ssh_run(info, "a", "sinfo -h -N -o %N")), timeout=10, what="release")


def test_the_health_check_drains_an_unhealthy_node_and_the_operator_replaces_it(fault_bed: Info) -> None:
    info = api.info(fault_bed.name)
    victim = sorted(n for n, d in info.nodes.items() if d["status"] == "ready")[0]
    api.inject_fault(info.name, victim, "unhealthy")
    wait_for(lambda: "DRAIN" in _slurm_state(info, victim), timeout=15, interval=0.3, what="the drain")
    wait_for(lambda: victim not in {n["name"] for n in api.provider_call(info.name, "GET", "/v1/nodes")[1]["nodes"]},
             timeout=15, what="the replacement")  # fmt: skip


def test_the_leaky_operator_never_replaces_a_dead_node(testbed_leaky: Info) -> None:
    info = testbed_leaky
    victim = sorted(info.nodes)[-1]
    api.inject_fault(info.name, victim, "slurmd_killed")
    try:
        t0 = time.monotonic()
        wait_for(
            lambda: "DOWN" in _slurm_state(info, victim),
            timeout=40,
            interval=0.3,
            what="Slurm to mark it DOWN",
        )
        print(f"slurmd killed -> DOWN in {time.monotonic() - t0:.1f}s")
        time.sleep(info.knobs["remediation"]["replace_after_s"] + 2)
        nodes = {n["name"]: n for n in api.provider_call(info.name, "GET", "/v1/nodes")[1]["nodes"]}
        assert nodes[victim]["status"] == "faulty" and set(nodes) == set(info.nodes)
    finally:  # the shared testbed goes back to health for the tests after this one
        api.inject_fault(info.name, victim, "clear")
        wait_for(
            lambda: _slurm_state(info, victim).removeprefix("State=") == "IDLE", timeout=25, what="recovery"
        )


def test_a_node_reported_faulty_is_replaced_by_the_exemplary_operator_only(
    fault_bed: Info, testbed_leaky: Info
) -> None:
    ex = api.info(fault_bed.name)
    victim = sorted(n for n, d in ex.nodes.items() if d["status"] == "ready")[0]
    code, ticket = api.provider_call(
        ex.name, "POST", f"/v1/nodes/{victim}/report-faulty", {"reason": "ECC errors"}
    )
    assert code == 202 and ticket["node"] == victim
    wait_for(lambda: victim not in {n["name"] for n in api.provider_call(ex.name, "GET", "/v1/nodes")[1]["nodes"]},
             timeout=15, what="the replacement")  # fmt: skip
    lk = testbed_leaky
    victim = sorted(lk.nodes)[0]
    code, _ = api.provider_call(
        lk.name, "POST", f"/v1/nodes/{victim}/report-faulty", {"reason": "ECC errors"}
    )
    assert code == 202
    try:
        time.sleep(lk.knobs["remediation"]["replace_after_s"] + 2)
        assert _slurm_state(lk, victim) == "State=IDLE"  # not even drained
        assert victim in {n["name"] for n in api.provider_call(lk.name, "GET", "/v1/nodes")[1]["nodes"]}
    finally:
        api.inject_fault(lk.name, victim, "clear")


def test_a_hung_node_stops_answering_ssh(fault_bed: Info) -> None:
    info = api.info(fault_bed.name)
    victim, node = sorted(info.nodes.items())[0]
    with job_held(info, "a", victim):  # SSH to a node needs a job there (ssh.restrict_to_jobs)
        ok(ssh_run(info, "a", "hostname", host=node["address"]))
        api.inject_fault(info.name, victim, "hung")
        try:
            answered = ssh_run(info, "a", "hostname", host=node["address"], timeout=8).returncode == 0
        except subprocess.TimeoutExpired:
            answered = False
        api.inject_fault(info.name, victim, "clear")
    assert not answered


def test_flaky_drops_node_links_at_random_and_detects_slowly() -> None:
    overrides = {
        "faults": {"drop_rate_per_hour": 36000, "drop_duration_s": 2},
        "slurm": {"accounting": False},
    }
    with running_testbed("flaky", name=prefixed_name("fly"), nodes=1, overrides=overrides) as info:
        out = ok(ssh_run(info, "a", "scontrol show config | grep -E '^SlurmdTimeout'"))
        assert out.split()[-2:] == ["120", "sec"]

        def events() -> list[str]:
            return [e["event"] for e in api.provider_call(info.name, "GET", "/v1/events")[1]["events"]]

        wait_for(lambda: "node_dropped" in events(), timeout=10, what="a random drop")
        wait_for(lambda: "node_link_restored" in events(), timeout=10, what="the link back")


def test_down_of_an_unknown_testbed_is_a_harmless_no_op() -> None:
    assert api.down(prefixed_name("never")) == {"netns": [], "links": [], "processes": [], "files": False, "cgroups": []}


def test_down_after_a_crash_leaves_nothing() -> None:
    with running_testbed("leaky", name=prefixed_name("down"), nodes=1) as info:
        st = json.loads((api.BASE_DIR / info.name / "state.json").read_text())
        pids = [st["agent"]["pid"], *(p["pid"] for p in st["processes"].values())]
        runtime.kill_all([st["agent"]], timeout=3)  # the agent dies: its daemons live on
        assert any(runtime.proc_alive(p) for p in pids)
        left = api.down(info.name)
        assert left == {"netns": [], "links": [], "processes": [], "files": False, "cgroups": []}
        assert not any(runtime.proc_alive(p) for p in pids)
        assert not [n for n in runtime.netns_list() if n.startswith(f"{NETNS_PREFIX}{info.name}-")]
        assert not {info.name + "-tenant-a", info.name + "-tenant-b"} & _users()
        assert f"tbr{st['octet']}" not in runtime.links()


def _users() -> set[str]:
    import pwd

    return {p.pw_name for p in pwd.getpwall()}
