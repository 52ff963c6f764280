"""The catalog as data: every probe declared, bound to the rubric, with safe command templates."""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from pathlib import Path

import pytest
import yaml

from probes.catalog import probe_get, probe_list
from probes.catalog.base import Direction, Outcome
from probes.catalog.bmc_reachable import scan_command
from probes.catalog.home_isolation import peek, plant
from probes.catalog.tenant_metric_isolation import attempts
from probes.matrix import host_key_of
from probes.parsers.versions import version_at_least
from probes.thresholds import definitions, min_versions

# the newest shipped rubric (versions sort as YYYY.N)
RUBRIC = max(
    (Path(__file__).resolve().parents[3] / "rubric" / "data").glob("opgrade-*.yaml"),
    key=lambda p: tuple(int(x) for x in p.stem.removeprefix("opgrade-").split(".")),
)
MINE = set(definitions())


def test_the_catalog_has_at_least_sixteen_probes_and_four_per_area():
    assert len(MINE) >= 16
    areas = Counter(str(probe_get(p).area) for p in MINE)
    assert set(areas) == {"provisioning", "reliability", "monitoring", "security"}
    assert min(areas.values()) >= 4


def test_every_rubric_probe_binding_names_a_registered_probe_and_metric():
    rubric = yaml.safe_load(RUBRIC.read_text())
    registered = {cls.id: cls for cls in probe_list()}
    bindings = [c["probe"] for c in rubric["criteria"] if c.get("probe")]
    assert bindings
    for binding in bindings:
        cls = registered[binding["id"]]
        metrics = getattr(cls, "metrics", None) or {cls.metric.name: cls.metric}  # the runner's own probes
        assert binding["metric"] in metrics, f"{binding['id']} has no metric {binding['metric']!r}"
    assert {b["id"] for b in bindings} >= MINE - {"retention_days", "alert_on_fault"}


def test_node_ready_time_reports_p50_and_p95():
    cls = probe_get("node_ready_time")
    assert set(cls.metrics) == {"p50_seconds", "p95_seconds"}
    assert all(m.direction is Direction.LOWER for m in cls.metrics.values())


def test_thresholds_pick_the_testbed_row_and_fall_back_to_the_default():
    cls = probe_get("time_to_first_job")
    assert cls.thresholds.evaluate(5, Direction.LOWER, {"scale": "testbed"})[0] is Outcome.PASS
    assert cls.thresholds.evaluate(50, Direction.LOWER, {"scale": "testbed"})[0] is Outcome.FAIL
    assert cls.thresholds.evaluate(50, Direction.LOWER, {})[0] is Outcome.PASS
    assert cls.thresholds.evaluate(300, Direction.LOWER, {})[0] is Outcome.WARN


def test_disruptive_probes_are_the_fault_injecting_ones():
    disruptive = {p for p in MINE if probe_get(p).disruptive}
    assert disruptive == {
        "failure_detection_time",
        "node_replacement_time",
        "job_requeue_after_node_loss",
        "alert_on_fault",
    }


def test_min_versions_table_is_data_and_self_consistent():
    table = min_versions()
    assert {"kernel", "nvidia_driver", "cuda", "cuda_toolkit", "nccl", "slurm"} <= set(table)
    for branch, floor in table["nvidia_driver"].branches.items():
        assert floor.startswith(branch + ".")
    assert version_at_least("22.05.8", table["slurm"].minimum)


def test_every_floor_names_a_public_source_or_says_it_is_opgrades_own_choice():
    for name, spec in min_versions().items():
        assert "https://" in spec.source, f"{name}: no public source"
        assert spec.choice in ("", "opgrade")
        if spec.choice:
            assert spec.source.startswith("Opgrade's own choice"), name


def test_clustermax_floors_are_the_ones_the_clustermax_wheel_ships():
    """Not our notes: the floors ClusterMAX publishes come from minimum-versions.json in the wheel
    (CI fetches it with scripts/fetch-cmax-wheels.sh)."""
    from probes.thresholds.cmax_floors import floors_from_cmax, newest_wheel, provenance_of, wheel_table

    wheel = newest_wheel()
    assert wheel is not None, "no clustermax wheel in var/wheels/cmax: run scripts/fetch-cmax-wheels.sh"
    doc, sha = wheel_table(wheel)
    expected = floors_from_cmax(doc, provenance=provenance_of(wheel, doc, sha))
    assert set(expected) == {"nvidia_driver", "cuda_toolkit", "dcgm", "nvidia_container_toolkit"}
    table = min_versions()
    for name, entry in expected.items():
        assert table[name].minimum == entry["minimum"], name
        assert dict(table[name].branches or {}) == entry.get("branches", {}), name
        assert table[name].source == entry["source"], name
        assert sha[:16] in table[name].source


def test_catalog_thresholds_name_a_public_source_or_opgrades_own_choice():
    for probe_id, spec in definitions().items():
        for metric, rows in (spec.get("thresholds") or {}).items():
            for row in rows:
                ref = str(row.get("reference", ""))
                assert "https://" in ref or ref.startswith("Opgrade's own choice"), (probe_id, metric, row)


def test_software_baseline_reads_the_cuda_toolkit_and_holds_it_to_clustermaxs_floor():
    from probes.catalog.software_baseline import observed_versions
    from probes.parsers.versions import check_versions
    from tests.probes.catalog.captured import captured

    text = "==uname==\n6.1.0-26-amd64\n==slurm==\nslurm-wlm 22.05.8\n==smi==\n==nccl==\n==cudatk==\n"
    observed = observed_versions(text + captured("versions/nvcc_13.0.txt") + "==ctk==\n==dcgm==\n")
    assert observed["cuda_toolkit"] == "13.0.88"
    (toolkit,) = [v for v in check_versions(observed, min_versions()) if v.component == "cuda_toolkit"]
    assert toolkit.ok is False and toolkit.minimum == "13.1"


def test_the_bmc_scan_quotes_every_value_and_refuses_anything_but_addresses():
    command = scan_command(1, "623 664", ("10.200.1.11", "10.200.1.254"))
    rendered = command.render()
    assert rendered.endswith("bmc-scan 1 '623 664' 10.200.1.11 10.200.1.254")
    with pytest.raises(ValueError):
        scan_command(1, "623", ("10.200.1.11; rm -rf /",))
    with pytest.raises(ValueError):
        scan_command(1, "623;reboot", ("10.200.1.11",))


def test_canary_commands_quote_provider_supplied_paths():
    evil_home = "/home/b; touch /tmp/pwned"
    rendered = peek(evil_home, "opgrade-canary-abc").render()
    assert "'/home/b; touch /tmp/pwned'" in rendered
    assert plant("opgrade-canary-abc").render().count("opgrade-canary-abc") == 3


def test_metric_isolation_tries_matcher_tricks_enumeration_and_forged_headers():
    names = [a[0] for a in attempts("opgrade_x", "tenant-a", "tenant-b")]
    assert {
        "query tenant!= own",
        "query nonce=~.+",
        "series nonce=~.+",
        "label nonce values",
        "federate",
        "forged X-Scope-OrgID",
        "duplicate query parameter",
        "form POST",
        "query_range nonce=~.+",
        "pushgateway metrics page",
        "pushgateway API metrics",
    } <= set(names)


def test_metric_isolation_counts_only_an_answer_as_a_checked_path():
    from probes.catalog.tenant_metric_isolation import answered

    assert all(answered(s) for s in (200, 204, 400, 401, 403, 404, 405, 422))
    assert not any(answered(s) for s in (0, 500, 502, 503, 504))


def test_host_key_fingerprint_matches_openssh():
    blob = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519" + b"\x00\x00\x00\x20" + b"k" * 32).decode()
    expected = "SHA256:" + base64.b64encode(hashlib.sha256(base64.b64decode(blob)).digest()).decode().rstrip(
        "="
    )
    key = host_key_of(f"ssh-ed25519 {blob} node1.tb")
    assert key.key_type == "ssh-ed25519" and key.fingerprint == expected


def test_every_cmax_check_is_mapped_to_a_rubric_criterion_or_listed_as_unmapped(tmp_path, monkeypatch):
    """Compared with the checks the wheel's cmax itself defines (its own report's list)."""
    import sys
    import zipfile

    from probes.thresholds import cmax_check_map
    from probes.thresholds.cmax_floors import newest_wheel

    wheel = newest_wheel()
    assert wheel is not None, "no clustermax wheel in var/wheels/cmax: run scripts/fetch-cmax-wheels.sh"
    zipfile.ZipFile(wheel).extractall(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from cmax.audit_report import list_check_specs
    from cmax.security import find_runtime_root

    cmax_ids = {spec.key for spec in list_check_specs(find_runtime_root())}
    mapping = cmax_check_map()
    assert cmax_ids - set(mapping) == set(), "cmax checks missing from probes/thresholds/cmax_checks.yaml"
    criteria = {c["key"] for c in yaml.safe_load(RUBRIC.read_text())["criteria"]}
    for check, where in mapping.items():
        assert where.criterion is None or where.criterion in criteria, (check, where.criterion)
    for name in [m for m in sys.modules if m == "cmax" or m.startswith("cmax.")]:
        del sys.modules[name]
