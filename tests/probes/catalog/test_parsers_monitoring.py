"""Prometheus API, node-exporter text and cmax audit parsers on captured real outputs."""

from __future__ import annotations

import json

import pytest

from probes.parsers import ParseError
from probes.parsers.cmax import parse_audit_values
from probes.parsers.node_exporter import parse_text_exposition
from probes.parsers.prometheus import (
    coverage_ratio,
    find_nonce,
    foreign_values,
    parse_response,
    parse_targets,
    series,
    string_list,
    vector_samples,
)
from tests.probes.catalog.captured import captured

NONCE = "c0ffee5e3d2a41b9"


def test_the_canary_is_found_by_its_nonce_label():
    resp = parse_response(captured("prometheus/query_canary_by_nonce.json"))
    (sample,) = vector_samples(resp)
    assert sample.name == "opgrade_canary" and sample.labels["tenant"] == "tenant-b"
    assert [h.where for h in find_nonce(resp, NONCE)] == ["label:nonce"]


def test_a_not_equal_matcher_reaches_the_other_tenants_series():
    resp = parse_response(captured("prometheus/query_canary_matcher_ne.json"))
    assert find_nonce(resp, NONCE)


def test_name_regex_and_series_enumeration_expose_every_tenant():
    regex = parse_response(captured("prometheus/query_name_regex_any.json"))
    tenants = {s.labels.get("tenant") for s in vector_samples(regex)}
    assert tenants == {"tenant-a", "tenant-b"}
    listed = series(parse_response(captured("prometheus/series_any_name.json")))
    assert foreign_values([s.get("tenant", "") for s in listed], ["tenant-a"]) == ("tenant-b",)
    assert find_nonce(parse_response(captured("prometheus/series_any_name.json")), NONCE)


def test_label_values_enumeration_shows_the_nonce():
    values = parse_response(captured("prometheus/label_nonce_values.json"))
    assert NONCE in string_list(values)
    assert find_nonce(values, NONCE)[0].where == "value"
    names = string_list(parse_response(captured("prometheus/label_name_values.json")))
    assert "opgrade_canary" in names and "node_load1" in names
    assert "nonce" in string_list(parse_response(captured("prometheus/labels.json")))


def test_an_empty_result_has_no_hits():
    resp = parse_response(captured("prometheus/query_empty.json"))
    assert resp.ok and vector_samples(resp) == () and find_nonce(resp, NONCE) == ()


def test_a_bad_query_is_an_error_response_not_a_pass():
    resp = parse_response(captured("prometheus/query_bad_syntax.json"))
    assert not resp.ok and "bad_data" in resp.error
    assert find_nonce(resp, NONCE) == ()
    with pytest.raises(ParseError):
        vector_samples(resp)


def test_an_html_error_page_is_not_json():
    with pytest.raises(ParseError):
        parse_response("<html><body>401 Authorization Required</body></html>")


def test_up_and_targets_give_coverage():
    up = {
        s.labels["node"]: s.value
        for s in vector_samples(parse_response(captured("prometheus/query_up.json")))
        if "node" in s.labels
    }
    assert up == {"node1": 1.0, "node2": 0.0}
    targets = parse_targets(parse_response(captured("prometheus/targets.json")))
    healthy = [t.labels["node"] for t in targets if t.health == "up" and "node" in t.labels]
    assert healthy == ["node1"]
    down = next(t for t in targets if t.labels.get("node") == "node2")
    assert down.health == "down" and "refused" in down.last_error
    assert coverage_ratio(["node1", "node2"], healthy) == 0.5
    assert coverage_ratio([], healthy) == 0.0


def test_range_query_gives_the_last_point_of_each_series():
    samples = vector_samples(parse_response(captured("prometheus/query_range_load1.json")))
    assert samples and all(s.name == "node_load1" for s in samples)


def test_node_exporter_text():
    samples = parse_text_exposition(captured("prometheus/node_exporter_subset.txt"))
    names = {s.name for s in samples}
    assert {"node_load1", "node_cpu_seconds_total", "node_uname_info", "node_boot_time_seconds"} <= names
    uname = next(s for s in samples if s.name == "node_uname_info")
    assert uname.label("release") == "6.18.44-fc-v669" and uname.value == 1.0
    idle = [s for s in samples if s.name == "node_cpu_seconds_total" and s.label("mode") == "idle"]
    assert idle and idle[0].value > 0


def test_node_exporter_escapes_and_garbage():
    (s,) = parse_text_exposition('x{a="q\\"uote",b="back\\\\slash"} +Inf\n')
    assert s.label("a") == 'q"uote' and s.label("b") == "back\\slash" and s.value == float("inf")
    with pytest.raises(ParseError):
        parse_text_exposition("x{a=unquoted} 1\n")


# --- cmax --------------------------------------------------------------------------------------


def test_cmax_security_audit_values_become_checks():
    audit = parse_audit_values(captured("cmax/security_local_testhost.audit.values.json"))
    assert audit.schema_version == 1 and audit.audit_type == "standalone"
    by_id = {c.check_id: c for c in audit.checks}
    assert by_id["securityVersions.cudaToolkit.status"].status == "fail"
    assert by_id["securityVersions.dcgm.status"].status == "not_applicable"
    assert by_id["securityVersions.docker.status"].status == "unknown"
    assert by_id["security.guestKernel.newerInstalled"].status == "pass"
    assert by_id["security.bmcIpmi.exposed"].status == "pass"
    assert by_id["security.januscape.status"].status == "pass"
    assert "securityVersions.floorsMetadata.status" not in by_id
    # passes: kernel, bmc, januscape; fails: cudaToolkit -> 3 / 4
    assert audit.pass_ratio == pytest.approx(0.75)
    assert audit.critical_failures == ()


def test_cmax_report_agrees_with_the_values_file():
    report = captured("cmax/security_local_testhost.report.txt")
    assert "1 failed" in report and "FAIL     Security Versions / CUDA Toolkit" in report


def test_a_newer_kernel_in_cmax_is_a_critical_failure():
    doc = json.loads(captured("cmax/security_local_testhost.audit.values.json"))
    doc["audit_data"]["security"]["guestKernel"].update(
        newerInstalled=True, newestInstalled="6.18.45-fc-v669"
    )
    audit = parse_audit_values(json.dumps(doc))
    assert [c.check_id for c in audit.critical_failures] == ["security.guestKernel.newerInstalled"]


def test_cmax_rejects_another_schema():
    doc = json.loads(captured("cmax/security_local_testhost.audit.values.json"))
    doc["schema_version"] = 2
    with pytest.raises(ParseError, match="schema_version"):
        parse_audit_values(json.dumps(doc))
    with pytest.raises(ParseError):
        parse_audit_values("not json")


def graded(gpu_cluster: bool, edit=None):
    from probes.parsers.cmax import grade_checks
    from probes.thresholds import cmax_check_map

    doc = json.loads(captured("cmax/security_local_testhost.checks.json"))
    if edit:
        edit(doc["checks"])
    return {c.check_id: c for c in grade_checks(json.dumps(doc), cmax_check_map(), gpu_cluster=gpu_cluster)}


def test_cmax_per_check_verdicts_are_kept_with_the_rubric_criterion_each_maps_to():
    checks = graded(gpu_cluster=True)
    assert checks["securityVersions.cudaToolkit.status"].outcome == "fail"
    assert checks["securityVersions.cudaToolkit.status"].criterion == "software_baseline"
    assert checks["bmc-ipmi"].criterion == "bmc_unreachable" and checks["bmc-ipmi"].outcome == "pass"
    assert checks["security.fragnesia.status"].criterion == "unmapped"
    assert checks["access.sshToComputeNodes"].outcome == "not_applicable"  # cmax skipped it


def test_a_cpu_only_cluster_answers_gpu_software_checks_not_applicable():
    from probes.parsers.cmax import pass_ratio

    checks = graded(gpu_cluster=False)
    toolkit = checks["securityVersions.cudaToolkit.status"]
    assert toolkit.cmax_status == "fail" and toolkit.outcome == "not_applicable"
    assert checks["securityVersions.runc.status"].outcome == "warn"  # not a GPU check
    # pass: bmc-ipmi, workerCheckOk, guestKernel, januscape; warn (kept, not counted): docker, runc
    assert pass_ratio(tuple(checks.values())) == pytest.approx(1.0)
    assert pass_ratio(tuple(graded(gpu_cluster=True).values())) == pytest.approx(4 / 5)  # + cudaToolkit fail


def test_a_failed_check_clustermax_grades_critical_is_critical_and_a_new_check_is_kept_unmapped():
    def edit(rows):
        next(r for r in rows if r["id"] == "bmc-ipmi")["status"] = "fail"
        rows.append({"id": "security.brandNew.status", "title": "New", "category": "isolation", "status": "fail"})

    checks = graded(gpu_cluster=False, edit=edit)
    assert checks["bmc-ipmi"].critical
    new = checks["security.brandNew.status"]
    assert new.criterion == "unmapped" and new.outcome == "fail" and "not in Opgrade's mapping" in new.note
    with pytest.raises(ParseError):
        from probes.parsers.cmax import grade_checks

        grade_checks('{"checks": [{"id": "x", "status": "maybe"}]}', {}, gpu_cluster=False)
