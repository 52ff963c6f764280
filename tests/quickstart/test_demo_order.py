"""The demo's order of probe runs: a fault is injected only once every cluster's non-disruptive
runs have finished (the serving probes' LLM servers must not share the cores with a timed
recovery), and one fault at a time per cluster."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from probes.models import ProbeRun
from quickstart.services import ProbePhases, disruptive_next

S = ProbeRun.Status
DISRUPTIVE = {"node_replacement_time", "failure_detection_time"}


@dataclass
class Run:
    pk: int
    probe_id: str
    status: str


def _lanes(*spec):
    pk = 0
    lanes = []
    for lane in spec:
        runs = []
        for probe_id, status in lane:
            pk += 1
            runs.append(Run(pk, probe_id, status))
        lanes.append(runs)
    return lanes


def test_no_fault_while_another_cluster_still_serves():
    lanes = _lanes(
        [("serving_goodput", S.DONE), ("node_replacement_time", S.PENDING)],
        [("serving_goodput", S.RUNNING), ("node_replacement_time", S.PENDING)],
    )
    assert disruptive_next(lanes, disruptive=DISRUPTIVE, sent=set()) == []
    lanes[1][0].status = S.ERROR  # finished, even if badly
    assert [r.pk for r in disruptive_next(lanes, disruptive=DISRUPTIVE, sent=set())] == [2, 4]


def test_one_fault_at_a_time_per_cluster():
    lanes = _lanes(
        [("serving_goodput", S.DONE), ("node_replacement_time", S.RUNNING), ("failure_detection_time", S.PENDING)],
        [("failure_detection_time", S.DONE), ("node_replacement_time", S.PENDING)],
    )
    assert [r.pk for r in disruptive_next(lanes, disruptive=DISRUPTIVE, sent={2, 4})] == [5]
    lanes[0][1].status = S.DONE
    assert [r.pk for r in disruptive_next(lanes, disruptive=DISRUPTIVE, sent={2, 4, 5})] == [3]


STATUSES = st.sampled_from([S.PENDING, S.RUNNING, S.DONE, S.ERROR, S.CANCELLED])
PROBES = st.sampled_from(["serving_goodput", "log_ingest_latency", *sorted(DISRUPTIVE)])


@given(st.lists(st.lists(st.tuples(PROBES, STATUSES), max_size=5), max_size=4), st.sets(st.integers(1, 20)))
def test_never_a_fault_beside_unfinished_work_nor_two_on_one_cluster(spec, sent):
    lanes = _lanes(*spec)
    every = [r for lane in lanes for r in lane]
    chosen = disruptive_next(lanes, disruptive=DISRUPTIVE, sent=sent)
    if chosen:
        assert all(r.probe_id in DISRUPTIVE or r.status in ProbeRun.TERMINAL for r in every)
    for run in chosen:
        assert run.probe_id in DISRUPTIVE and run.pk not in sent and run.status not in ProbeRun.TERMINAL
        (lane,) = [lane for lane in lanes if run in lane]
        assert not any(r.pk in sent and r.probe_id in DISRUPTIVE and r.status not in ProbeRun.TERMINAL for r in lane)
        assert sum(c in lane for c in chosen) == 1


def test_per_cluster_barrier_lets_a_finished_cluster_fault_beside_another_still_measuring():
    lanes = _lanes(
        [("serving_goodput", S.DONE), ("node_replacement_time", S.PENDING)],
        [("serving_goodput", S.RUNNING), ("node_replacement_time", S.PENDING)],
    )
    assert disruptive_next(lanes, disruptive=DISRUPTIVE, sent=set()) == []
    assert [r.pk for r in disruptive_next(lanes, disruptive=DISRUPTIVE, sent=set(), per_cluster=True)] == [2]


@given(st.lists(st.lists(st.tuples(PROBES, STATUSES), max_size=5), max_size=4), st.sets(st.integers(1, 20)))
def test_per_cluster_barrier_never_faults_a_cluster_beside_its_own_unfinished_work(spec, sent):
    lanes = _lanes(*spec)
    strict = disruptive_next(lanes, disruptive=DISRUPTIVE, sent=sent)
    chosen = disruptive_next(lanes, disruptive=DISRUPTIVE, sent=sent, per_cluster=True)
    assert {r.pk for r in strict} <= {r.pk for r in chosen}  # relaxing never holds back a run
    for run in chosen:
        (lane,) = [lane for lane in lanes if run in lane]
        assert all(r.probe_id in DISRUPTIVE or r.status in ProbeRun.TERMINAL for r in lane)
        assert not any(r.pk in sent and r.probe_id in DISRUPTIVE and r.status not in ProbeRun.TERMINAL for r in lane)


def test_phases_each_wait_up_to_the_timeout():
    phases = ProbePhases(started=0.0, timeout_s=600)
    assert not phases.step(100, nondisruptive_done=False) and phases.opened is None
    assert phases.step(250, nondisruptive_done=True) and phases.opened == 250 and not phases.per_cluster
    assert not phases.expired(850) and phases.expired(851)
    assert not phases.step(900, nondisruptive_done=True) and phases.opened == 250  # opens once


def test_phases_open_per_cluster_when_the_first_phase_runs_out():
    phases = ProbePhases(started=0.0, timeout_s=600)
    assert not phases.expired(10_000)  # never expires before it opens: the first phase opens it
    assert phases.step(612, nondisruptive_done=False) and phases.per_cluster and phases.opened == 600
    assert not phases.expired(1200) and phases.expired(1201)


@given(st.floats(1, 1e4), st.lists(st.tuples(st.floats(0, 1e5), st.booleans()), max_size=30))
def test_phases_are_bounded_by_twice_the_timeout(timeout_s, steps):
    """Whatever the runs do, the wait opens the second phase by ``timeout_s`` and ends by twice it."""
    phases = ProbePhases(started=0.0, timeout_s=timeout_s)
    for now, done in sorted(steps):
        phases.step(now, nondisruptive_done=done)
        if now > timeout_s:
            assert phases.opened is not None and phases.opened <= timeout_s
        if now > 2 * timeout_s:
            assert phases.expired(now)
