"""Slurm parsers on outputs captured from a real Slurm 22.05 controller (see tests/probes/captured/slurm)."""

from __future__ import annotations

import pytest

from probes.parsers import ParseError
from probes.parsers.slurm import (
    jobs_named,
    node_state,
    parse_sacct,
    parse_scontrol_config,
    parse_scontrol_show,
    parse_sinfo_nodes,
    parse_slurm_version,
    parse_squeue,
    slurm_config_facts,
)
from tests.probes.catalog.captured import captured, provenance

CANARY_A = "opgrade-canary-5e8d01b2c7aa"
CANARY_B = "opgrade-canary-b41c9e770d23"


def test_every_fixture_says_where_it_came_from():
    for name in ("slurm/sinfo_nodes_drained_down.txt", "slurm/sacct_privatedata_tenant_a.txt"):
        assert "#@ command:" in provenance(name)


def test_idle_nodes_are_healthy_and_an_unstarted_one_is_not():
    nodes = parse_sinfo_nodes(captured("slurm/sinfo_nodes_idle_unknown.txt"))
    assert [n.name for n in nodes] == ["node1", "node2", "node3"]
    assert node_state(nodes, "node1").healthy_in_pool
    assert node_state(nodes, "node3").state == "unknown"
    assert not node_state(nodes, "node3").healthy_in_pool


def test_a_killed_slurmd_is_first_not_responding_then_down():
    early = parse_sinfo_nodes(captured("slurm/sinfo_nodes_drained_notresponding.txt"))
    assert node_state(early, "node1").drained and node_state(early, "node1").reason == "opgrade-test fault"
    assert node_state(early, "node3").not_responding
    late = parse_sinfo_nodes(captured("slurm/sinfo_nodes_drained_down.txt"))
    node2 = node_state(late, "node2")
    assert node2.down and node2.not_responding and node2.unavailable
    assert node2.reason == "Not responding"


def test_short_state_names_parse_the_same_as_long_ones():
    long = {
        n.name: (n.state, n.not_responding)
        for n in parse_sinfo_nodes(captured("slurm/sinfo_nodes_drained_down.txt"))
    }
    short = {
        n.name: (n.state, n.not_responding)
        for n in parse_sinfo_nodes(captured("slurm/sinfo_nodes_short_states.txt"))
    }
    assert long == short


def test_a_node_drained_with_a_job_is_draining_and_unavailable():
    node2 = node_state(parse_sinfo_nodes(captured("slurm/sinfo_nodes_draining.txt")), "node2")
    assert node2.state == "draining" and node2.drained and not node2.healthy_in_pool


def test_an_unknown_state_is_a_parse_error_not_a_guess():
    with pytest.raises(ParseError):
        parse_sinfo_nodes("node1|exploded|none\n")


def test_privatedata_hides_the_other_tenants_canary_from_squeue():
    root = parse_squeue(captured("slurm/squeue_root_all.txt"))
    assert {j.name for j in root} >= {"opgrade-canary-7f3a9c2e4b1d", "train-llm"}
    a = parse_squeue(captured("slurm/squeue_privatedata_canary_tenant_a.txt"))
    b = parse_squeue(captured("slurm/squeue_privatedata_canary_tenant_b.txt"))
    assert jobs_named(a, CANARY_A) and not jobs_named(a, CANARY_B)
    assert jobs_named(b, CANARY_B) and not jobs_named(b, CANARY_A)


def test_sacct_leaks_when_only_slurm_conf_sets_privatedata():
    leaky = parse_sacct(captured("slurm/sacct_leak_dbd_without_privatedata_tenant_a.txt"))
    assert jobs_named(leaky, CANARY_B)[0].user == "nobody"
    private = parse_sacct(captured("slurm/sacct_privatedata_tenant_a.txt"))
    assert [j.name for j in private] == [CANARY_A]


def test_sacct_states_keep_only_the_first_word():
    jobs = parse_sacct(captured("slurm/sacct_requeued_duplicates.txt"))
    assert {j.job_id: j.state for j in jobs}["4"] == "CANCELLED"
    assert {j.job_id: j.state for j in jobs}["7"] == "NODE_FAIL"


def test_disabled_accounting_is_an_error_not_an_empty_list():
    with pytest.raises(ParseError, match="accounting storage is disabled"):
        parse_sacct("Slurm accounting storage is disabled\n")


def test_a_requeued_job_shows_its_restart_count():
    job = parse_scontrol_show(captured("slurm/scontrol_show_job_requeued.txt"))
    assert job["JobState"] == "PENDING" and job["Restarts"] == "1" and job["Requeue"] == "1"
    pending = parse_squeue(captured("slurm/squeue_requeued_pending.txt"))
    assert pending[0].state == "PENDING" and pending[0].reason in ("BeginTime", "None", "NodeFail")


def test_scontrol_show_node_gives_the_down_reason():
    node = parse_scontrol_show(captured("slurm/scontrol_show_node_down.txt"))
    assert node["NodeName"] == "node2" and "DOWN" in node["State"]


def test_config_facts_of_a_cluster_with_health_checks_and_private_data():
    facts = slurm_config_facts(parse_scontrol_config(captured("slurm/scontrol_show_config_private_hc.txt")))
    assert facts.health_check_program == "/usr/sbin/nhc"
    assert facts.health_check_interval_s == 300
    assert facts.health_check_configured
    assert facts.jobs_private and facts.private_data >= {"jobs", "usage", "users"}
    assert facts.slurmd_timeout_s == 10


def test_config_without_health_check_or_private_data():
    text = captured("slurm/scontrol_show_config_private_hc.txt")
    text = text.replace("HealthCheckProgram      = /usr/sbin/nhc", "HealthCheckProgram      = (null)")
    text = text.replace("PrivateData             = jobs,usage,users", "PrivateData             = none")
    facts = slurm_config_facts(parse_scontrol_config(text))
    assert not facts.health_check_configured
    assert not facts.jobs_private


def test_a_prolog_that_runs_nhc_counts_as_a_health_check():
    config = parse_scontrol_config(captured("slurm/scontrol_show_config_private_hc.txt"))
    config.update(HealthCheckProgram="", Prolog="/etc/slurm/prolog.d/*,/usr/sbin/nhc-prolog")
    assert slurm_config_facts(config).health_check_configured


def test_something_that_is_not_scontrol_output_is_refused():
    with pytest.raises(ParseError):
        parse_scontrol_config("bash: scontrol: command not found\n")


def test_slurm_version():
    assert parse_slurm_version(captured("slurm/sinfo_version.txt")) == "22.05.8"
    with pytest.raises(ParseError):
        parse_slurm_version("sinfo: command not found")
