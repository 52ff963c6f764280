"""Profiles and the CLI's refusals: pure checks that need neither root nor the packages."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from testbed import cli, configs, runtime
from testbed.agent import received_at
from testbed.errors import TestbedError
from testbed.layout import Layout, name_validate
from testbed.profiles import knob_differences, parse_set, profile_names, profile_resolve


def test_the_bundled_profiles_include_exemplary_leaky_and_flaky() -> None:
    assert {"exemplary", "leaky", "flaky"} <= set(profile_names())


def test_leaky_differs_from_exemplary_on_the_isolation_knobs() -> None:
    ex = profile_resolve(profile="exemplary")
    lk = profile_resolve(profile="leaky")
    assert ex["slurm"]["private_data"] and not lk["slurm"]["private_data"]
    assert ex["metrics"]["isolation"] and not lk["metrics"]["isolation"]
    assert ex["logs"]["isolation"] and not lk["logs"]["isolation"]
    assert ex["homes"]["mode"] == "0700" and lk["homes"]["mode"] == "0755"
    assert ex["remediation"]["policy"] == "replace" and lk["remediation"]["policy"] == "never"
    assert lk["provisioning"]["delay_s"] > ex["provisioning"]["delay_s"]


def test_leaky_monitoring_is_short_lived_stale_partial_and_lagging() -> None:
    ex = profile_resolve(profile="exemplary")
    lk = profile_resolve(profile="leaky")
    assert (ex["metrics"]["retention"], lk["metrics"]["retention"]) == ("30d", "1d")
    assert ex["metrics"]["scrape_interval_s"] < 5 < 60 <= lk["metrics"]["scrape_interval_s"]
    assert ex["metrics"]["scrape_all_nodes"] and not lk["metrics"]["scrape_all_nodes"]
    assert ex["logs"]["ingest_delay_s"] == 0 < 15 < lk["logs"]["ingest_delay_s"]


def test_flaky_drops_nodes_and_detects_slowly() -> None:
    ex = profile_resolve(profile="exemplary")
    fl = profile_resolve(profile="flaky")
    assert fl["faults"]["drop_rate_per_hour"] > 0 == ex["faults"]["drop_rate_per_hour"]
    assert fl["slurm"]["slurmd_timeout_s"] > ex["slurm"]["slurmd_timeout_s"]
    assert fl["metrics"] == ex["metrics"]  # only reliability differs


def test_a_set_override_flips_exactly_one_knob() -> None:
    ex = profile_resolve(profile="exemplary")
    flipped = profile_resolve(profile="exemplary", overrides=parse_set(["slurm.private_data=false"]))
    assert flipped["slurm"]["private_data"] is False
    flipped["slurm"]["private_data"] = True
    assert flipped == ex


def test_knob_differences_name_each_flipped_knob() -> None:
    knobs = profile_resolve(profile="leaky", overrides=parse_set(["homes.mode=0700", "bmc.port=624"]))
    assert knob_differences(knobs) == ["bmc.port=624", "homes.mode=0700"]
    assert knob_differences(profile_resolve(profile="flaky")) == []


def test_set_values_take_the_type_of_the_knob() -> None:
    knobs = profile_resolve(
        profile="exemplary",
        overrides=parse_set(
            ["homes.mode=0755", "faults.drop_rate_per_hour=0.5", "nodes.count=3", "slurm.health_check=off"]
        ),
    )
    assert knobs["homes"]["mode"] == "0755"
    assert knobs["faults"]["drop_rate_per_hour"] == 0.5
    assert knobs["nodes"]["count"] == 3 and isinstance(knobs["nodes"]["count"], int)
    assert knobs["slurm"]["health_check"] is False


def test_a_profile_file_can_extend_exemplary(tmp_path: Path) -> None:
    path = tmp_path / "shared-homes.yaml"
    path.write_text("extends: exemplary\nhomes:\n  mode: '0755'\n")
    knobs = profile_resolve(profile=str(path))
    assert knobs["homes"]["mode"] == "0755" and knobs["slurm"]["private_data"] is True


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("slurm.no_such_knob=1", "unknown knob"),
        ("slurm.private_data=maybe", "expected true/false"),
        ("remediation.policy=pray", "remediation.policy"),
        ("homes.mode=rwx", "octal"),
        ("nodes.count=0", "nodes"),
        ("nodes.count=two", "expected a number"),
        ("faults.drop_rate_per_hour=-1", "negative"),
        ("metrics.retention=forever", "Prometheus duration"),
        ("metrics.retention=30", "Prometheus duration"),
        ("metrics.scrape_interval_s=0", "scrape_interval_s"),
        ("logs.ingest_delay_s=601", "ingest_delay_s"),
    ],
)
def test_bad_overrides_are_refused_with_a_clear_message(override: str, message: str) -> None:
    with pytest.raises(TestbedError, match=message):
        profile_resolve(profile="exemplary", overrides=parse_set([override]))


def test_an_unknown_profile_is_refused() -> None:
    with pytest.raises(TestbedError, match="unknown profile"):
        profile_resolve(profile="nope")


@pytest.mark.parametrize("name", ["", "A", "1abc", "a-b", "abcdefghijk"])
def test_bad_testbed_names_are_refused(name: str) -> None:
    with pytest.raises(TestbedError, match="invalid testbed name"):
        name_validate(name)


def test_interface_names_fit_the_kernel_limit() -> None:
    lay = Layout("abcdefghij", 250)
    names = [lay.bridge, lay.veth_ctl, lay.veth_login, lay.veth_node(60)]
    assert all(len(n) <= 15 for n in names)


def test_the_generated_slurm_conf_follows_the_knobs() -> None:
    lay = Layout("x", 7)
    ex = configs.slurm_conf(lay, profile_resolve(profile="exemplary"))
    lk = configs.slurm_conf(lay, profile_resolve(profile="leaky"))
    assert "PrivateData=jobs,usage,users" in ex and "PrivateData" not in lk
    assert "HealthCheckProgram=" in ex and "HealthCheckProgram" not in lk
    assert "NodeName=node1 NodeAddr=10.200.7.11 " in ex


def test_the_node_scrape_interval_is_the_knob_and_the_pushgateway_stays_fast() -> None:
    lay = Layout("x", 7)
    knobs = profile_resolve(profile="exemplary", overrides=parse_set(["metrics.scrape_interval_s=60"]))
    conf = yaml.safe_load(configs.prometheus_yml(lay, knobs, push=19190, tenant=None))
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    assert conf["global"]["scrape_interval"] == "3s" and "scrape_interval" not in jobs["pushgateway"]
    assert jobs["node"]["scrape_interval"] == "60s" and jobs["node"]["scrape_timeout"] == "10s"


def test_without_scrape_all_nodes_every_other_live_node_is_left_out_of_the_targets() -> None:
    lay = Layout("x", 7)
    nodes = {
        f"node{k}": {"address": lay.node_addr(k), "slot": k, "status": "ready"} for k in (1, 2, 3, 4, 10)
    }
    nodes["node3"]["status"] = "released"  # gone: never a target
    names = [t["labels"]["node"] for t in json.loads(configs.node_targets(lay, nodes))]
    assert names == ["node1", "node2", "node4", "node10"]  # slot order, not name order
    half = [t["labels"]["node"] for t in json.loads(configs.node_targets(lay, nodes, scrape_all=False))]
    assert half == ["node2", "node10"]


def test_the_log_lag_reads_rsyslogs_receive_stamp() -> None:
    line = "2026-11-30T11:50:46.123456+00:00 node1 x-tenant-a: hello"
    assert received_at(line) == datetime(2026, 11, 30, 11, 50, 46, 123456, tzinfo=UTC).timestamp()
    assert received_at("garbage without a stamp") > datetime(2026, 1, 1, tzinfo=UTC).timestamp()


def test_a_missing_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.os, "geteuid", lambda: 0)
    real = runtime.which
    monkeypatch.setattr(runtime, "which", lambda exe: None if exe == "slurmctld" else real(exe) or "/bin/x")
    with pytest.raises(TestbedError, match=r"missing packages: slurmctld .*install-testbed.sh"):
        runtime.preflight()


def test_the_cli_refuses_to_run_without_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runtime.os, "geteuid", lambda: 1000)
    assert cli.main(["up", "exemplary", "--name", "norootx"]) == 2
    assert "must run as root" in capsys.readouterr().err
    assert cli.main(["down", "norootx"]) == 2
