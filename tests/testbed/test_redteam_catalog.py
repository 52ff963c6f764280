"""The red-team catalog itself (no root needed): enough mutations, each bound to a real probe."""

from __future__ import annotations

from probes.catalog import probe_get
from testbed import redteam


def test_there_are_at_least_fifteen_distinct_mutations_each_naming_a_catalog_probe():
    names = [m.name for m in redteam.MUTATIONS]
    assert len(names) >= 15 and len(set(names)) == len(names)
    for m in redteam.MUTATIONS:
        assert probe_get(m.probe).id == m.probe
        assert m.expect in ("fail", "warn", "error") and m.description


def test_mutations_judged_together_each_declare_the_evidence_that_proves_their_own_catch():
    for group, members in redteam.groups().items():
        if len(members) > 1:
            assert all(m.marker for m in members), group
            assert len({m.probe for m in members}) == 1, group


def test_the_mutations_cover_files_listeners_acls_and_a_bmc():
    probes = {m.probe for m in redteam.MUTATIONS}
    assert {
        "tenant_data_exposure",
        "provider_listeners",
        "home_isolation",
        "tenant_log_isolation",
        "bmc_reachable",
    } <= probes
