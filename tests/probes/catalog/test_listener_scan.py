"""The management-listener scan: records judged against the allow-list, fail closed (pure)."""

from __future__ import annotations

import pytest

from probes.catalog.provider_listeners import controller_hosts, scan_command
from probes.parsers.listeners import parse_listener_scan, port_spec_valid

ALLOWED = "6817/tcp 514/udp"
CLEAN = [
    "control tcp 10.0.0.11 22 open",
    "scanned tcp 10.0.0.2 65535 0",
    "tcp 10.0.0.2 6817 open",
    "control udp 10.0.0.2 33434 refused",
    "udp 10.0.0.2 514 silent",
    "udp 10.0.0.2 161 closed",
]


def parse(*lines: str):
    return parse_listener_scan("\n".join(lines), allowed=ALLOWED)


def test_only_allowed_services_answering_is_a_complete_clean_scan():
    scan = parse(*CLEAN, "done")
    assert scan.complete and not scan.unexpected
    assert scan.allowed_open == ("10.0.0.2:6817/tcp", "10.0.0.2:514/udp")
    assert scan.udp_inference == {"10.0.0.2": "icmp"}


def test_an_extra_tcp_or_udp_listener_is_unexpected():
    scan = parse(
        *CLEAN, "tcp 10.0.0.2 9090 open", "udp 10.0.0.2 623 open", "udp 10.0.0.2 5353 silent", "done"
    )
    assert scan.unexpected == ("10.0.0.2:9090/tcp", "10.0.0.2:623/udp", "10.0.0.2:5353/udp")


def test_without_icmp_refusals_a_silent_udp_port_is_not_counted_but_a_reply_is():
    lines = [line.replace("refused", "silent") for line in CLEAN]
    scan = parse(*lines, "udp 10.0.0.2 623 open", "udp 10.0.0.2 161 silent", "done")
    assert scan.unexpected == ("10.0.0.2:623/udp",)
    assert scan.udp_inference == {"10.0.0.2": "replies only"}


def test_a_failed_tcp_control_or_an_unfinished_scan_is_incomplete():
    assert not parse(*[line.replace("22 open", "22 closed") for line in CLEAN], "done").complete
    assert not parse(*CLEAN).complete
    assert not parse("control tcp 10.0.0.11 22 open", "skip ctl.example unresolved", "done").complete


def test_controller_hosts_come_from_scontrol_show_config():
    text = "SlurmctldHost[0]        = ctl(10.0.0.2)\nAccountingStorageHost   = dbd\nClusterName = x\n"
    assert controller_hosts(text) == ["10.0.0.2", "dbd"]


def test_port_lists_and_names_are_checked_and_quoted():
    assert port_spec_valid("1-65535") and port_spec_valid("53,161,1000-2000")
    assert not port_spec_valid("1-70000") and not port_spec_valid("22;reboot") and not port_spec_valid("")
    with pytest.raises(ValueError):
        scan_command(1, 10, "22 && reboot", "", "10.0.0.11", ["10.0.0.2"])
    rendered = scan_command(1, 10, "22", "53", "10.0.0.11", ["ctl; reboot"]).render()
    assert rendered.endswith("'ctl; reboot'")


def test_an_answered_ipmi_ping_on_udp_623_is_a_reachable_bmc():
    from probes.parsers.net import parse_scan, reachable

    results = parse_scan("udp 10.0.0.251 623 open\nudp 10.0.0.250 623 closed\ntcp 10.0.0.250 623 closed\n")
    assert [(r.kind, r.address, r.port) for r in reachable(results)] == [("udp", "10.0.0.251", "623")]
