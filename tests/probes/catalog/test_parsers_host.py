"""Kernel, version, nvidia-smi, file-permission and BMC-scan parsers on captured real outputs."""

from __future__ import annotations

import pytest

from probes.parsers import ParseError
from probes.parsers.fs import open_paths, parse_ls_ld, parse_read_attempt, parse_stat
from probes.parsers.kernel import kernel_flavour, parse_kernel_state
from probes.parsers.net import parse_scan, reachable, scan_targets
from probes.parsers.nvidia import inventory_matches, parse_query_gpu
from probes.parsers.versions import (
    MinimumSpec,
    check_versions,
    parse_kernel_release,
    parse_nccl_version,
    parse_nvidia_smi_header,
    version_at_least,
)
from tests.probes.catalog.captured import captured

FS_NONCE = "9d1e5b0c22f4"

# --- kernel ---------------------------------------------------------------------------------------


def test_a_host_with_nothing_newer_installed_has_no_pending_reboot():
    state = parse_kernel_state(captured("kernel/devhost_no_pending.txt"))
    assert state.running == "6.18.44-fc-v669"
    assert not state.pending_reboot


def test_a_newer_kernel_of_the_same_flavour_in_boot_is_a_pending_reboot():
    text = captured("kernel/devhost_no_pending.txt").replace(
        "==boot==\n",
        "==boot==\nvmlinuz-6.18.44-fc-v669\nvmlinuz-6.18.45-fc-v669\nSystem.map-6.18.45-fc-v669\n",
    )
    state = parse_kernel_state(text)
    assert state.newest_same_flavour == "6.18.45-fc-v669"
    assert state.pending_reboot


def test_a_kernel_of_another_flavour_does_not_count_as_cmax_does():
    state = parse_kernel_state(captured("kernel/public_tdx_guide_other_flavour.txt"))
    assert kernel_flavour(state.running) == "generic"
    assert "6.8.0-1028-intel" in state.installed
    assert state.newest_same_flavour is None and not state.pending_reboot


def test_the_reboot_required_marker_counts():
    text = captured("kernel/devhost_no_pending.txt").replace(
        "==reboot-required==\nno", "==reboot-required==\nyes"
    )
    assert parse_kernel_state(text).pending_reboot


def test_kernel_output_without_uname_is_refused():
    with pytest.raises(ParseError):
        parse_kernel_state("==boot==\nvmlinuz-6.1.0-26-amd64\n")


# --- versions -------------------------------------------------------------------------------------


def test_versions_compare_like_sort_v():
    assert version_at_least("550.54.15", "535.161.07")
    assert version_at_least("12.4", "12.4")
    assert version_at_least("12.4.1", "12.4")
    assert not version_at_least("12.3.2", "12.4")
    assert not version_at_least("6.1.0-9-amd64", "6.1.0-26-amd64")
    assert version_at_least("22.05.8", "22.05")


def test_driver_and_cuda_from_the_nvidia_smi_banner():
    assert parse_nvidia_smi_header(captured("nvidia/h100_smi_header.txt")) == ("550.54.15", "12.4")


def test_minimum_table_verdicts_keep_unobserved_apart_from_too_old():
    table = {
        "nvidia_driver": MinimumSpec(
            "nvidia_driver", "550.127.05", branches={"570": "570.133.20", "550": "550.127.05"}
        ),
        "cuda": MinimumSpec("cuda", "12.4"),
        "nccl": MinimumSpec("nccl", "2.21.5"),
    }
    verdicts = {
        v.component: v
        for v in check_versions({"nvidia_driver": "550.54.15", "cuda": "12.4", "nccl": None}, table)
    }
    assert verdicts["nvidia_driver"].ok is False and verdicts["nvidia_driver"].minimum == "550.127.05"
    assert verdicts["cuda"].ok is True
    assert verdicts["nccl"].ok is None
    a100 = {v.component: v for v in check_versions({"nvidia_driver": "570.133.20"}, table)}
    assert a100["nvidia_driver"].ok is True


def test_nccl_version_from_dpkg_or_library_name():
    assert parse_nccl_version("libnccl2\t2.21.5-1+cuda12.4\n") == "2.21.5"
    assert parse_nccl_version("/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3\n") == "2.18.3"
    assert parse_nccl_version("") is None


def test_kernel_release_is_checked():
    assert parse_kernel_release("6.1.0-26-amd64\n") == "6.1.0-26-amd64"
    with pytest.raises(ParseError):
        parse_kernel_release("uname: not found")


# --- nvidia-smi -----------------------------------------------------------------------------------


def test_eight_h100_match_an_order_for_eight_h100():
    gpus = parse_query_gpu(captured("nvidia/h100_8gpu_name_memory.csv"), ("name", "memory.total"))
    assert len(gpus) == 8 and gpus[0].memory_mib == 81559
    assert inventory_matches(gpus, model="NVIDIA H100 80GB HBM3", count=8).ok
    short = inventory_matches(gpus, model="H100 80GB HBM3", count=16)
    assert not short.ok and short.found_count == 8


def test_a100_do_not_match_an_order_for_h100():
    gpus = parse_query_gpu(captured("nvidia/a100_8gpu_name_memory_driver.csv"))
    assert {g.driver_version for g in gpus} == {"570.133.20"}
    verdict = inventory_matches(gpus, model="NVIDIA H100 80GB HBM3", count=8)
    assert not verdict.ok and verdict.mismatched == ("NVIDIA A100-SXM4-80GB",)


def test_noheader_single_gpu():
    (gpu,) = parse_query_gpu(captured("nvidia/h100_1gpu_name_memory_driver_noheader.csv"))
    assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.driver_version == "580.173.02"


def test_a_name_with_a_comma_keeps_its_comma():
    (gpu,) = parse_query_gpu("Tesla V100, SXM2, 16384 MiB, 535.54.03\n")
    assert gpu.name == "Tesla V100, SXM2" and gpu.memory_mib == 16384


def test_nvidia_smi_failure_is_an_error():
    with pytest.raises(ParseError):
        parse_query_gpu("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


# --- file permissions -----------------------------------------------------------------------------


def test_stat_modes_show_which_home_is_open():
    result = parse_stat(captured("fs/stat_homes.txt"))
    modes = {s.path.rsplit("/", 1)[-1]: s for s in result.stats}
    assert not modes["tenant-a"].others_can_read and modes["tenant-b"].others_can_read
    assert [s.path for s in open_paths(result.stats)] == ["/tmp/cap6/home/tenant-b"]
    assert len(result.errors) == 1 and "missing" in result.errors[0]


def test_ls_ld_gives_the_same_modes_as_stat():
    from_ls = {s.path: s.mode for s in parse_ls_ld(captured("fs/ls_ld_homes.txt"))}
    from_stat = {s.path: s.mode for s in parse_stat(captured("fs/stat_homes.txt")).stats}
    assert from_ls == from_stat


def test_reading_an_open_home_sees_the_canary():
    attempt = parse_read_attempt(captured("fs/tenant_a_reads_b_open_home.txt"), FS_NONCE)
    assert attempt.nonce_seen and not attempt.denied
    assert any(FS_NONCE in line for line in attempt.lines_with_nonce)


def test_a_closed_home_is_denied_and_the_nonce_in_a_denial_message_is_no_leak():
    attempt = parse_read_attempt(captured("fs/tenant_b_reads_a_closed_home.txt"), FS_NONCE)
    assert attempt.denied and not attempt.nonce_seen
    denied_grep = parse_read_attempt(captured("fs/grep_logs_as_tenant_b_closed.txt"), FS_NONCE)
    assert denied_grep.denied and not denied_grep.nonce_seen


def test_grep_over_a_shared_log_dir_finds_the_foreign_canary_file():
    attempt = parse_read_attempt(captured("fs/grep_logs_as_tenant_a.txt"), "tenant-b")
    assert attempt.nonce_seen


# --- BMC scan -------------------------------------------------------------------------------------


def test_scan_lines_open_closed_and_timeout():
    results = parse_scan(captured("net/bmc_scan_mixed.txt"))
    states = {(r.kind, r.address, r.port): r.state for r in results}
    assert states[("tcp", "127.0.0.1", "623")] == "open"
    assert states[("tcp", "10.200.250.9", "623")] == "timeout"
    assert states[("redfish", "127.0.0.1", "http")] == "open"
    assert {(r.kind, r.port) for r in reachable(results)} == {("tcp", "623"), ("redfish", "http")}


def test_scan_targets_never_leave_the_nodes_own_24():
    targets = scan_targets("10.200.7.11", known=["10.200.7.12", "10.200.8.12", "8.8.8.8", "10.200.7.12"])
    assert "10.200.7.12" in targets and "10.200.7.254" in targets
    assert all(t.startswith("10.200.7.") for t in targets)
    assert len(targets) == len(set(targets))
    with pytest.raises(ValueError):
        scan_targets("8.8.4.4")


def test_a_garbled_scan_line_is_refused():
    with pytest.raises(ParseError):
        parse_scan("tcp 10.0.0.1 623 maybe\n")


def test_a_scan_that_names_every_path_leaves_nothing_unchecked():
    from probes.parsers.net import unchecked_paths

    lines = [
        f"{kind} 10.0.0.{h} {port} {state}"
        for h in (1, 2)
        for kind, port, state in [
            ("tcp", "623", "timeout"),  # filtered: an answer after the script's longer retry
            ("tcp", "664", "closed"),
            ("udp", "623", "closed"),
            ("redfish", "https", "timeout"),
            ("redfish", "http", "closed"),
        ]
    ]
    results = parse_scan("\n".join(lines))
    assert unchecked_paths(results, ["10.0.0.1", "10.0.0.2"], ["623", "664"]) == []


def test_missing_lines_a_cut_udp_ping_and_no_curl_are_unchecked_paths():
    from probes.parsers.net import unchecked_paths

    text = "\n".join(
        [
            "tcp 10.0.0.1 623 closed",  # 664 missing: the subshell never printed
            "udp 10.0.0.1 623 timeout",  # cut by the outer timeout before its three pings finished
            "redfish 10.0.0.1 https closed",
            "redfish 10.0.0.1 http closed",
            "tcp 10.0.0.2 623 closed",
            "tcp 10.0.0.2 664 closed",
            "udp 10.0.0.2 623 closed",
            "redfish 10.0.0.2 - nocurl",
        ]
    )
    gaps = unchecked_paths(parse_scan(text), ["10.0.0.1", "10.0.0.2", "10.0.0.3"], ["623", "664"])
    assert "tcp 10.0.0.1 664 (no result)" in gaps
    assert "udp 10.0.0.1 623 (the ping was cut before it finished)" in gaps
    assert "redfish 10.0.0.2 (no curl on the node)" in gaps
    assert sum(g.startswith(("tcp 10.0.0.3", "udp 10.0.0.3", "redfish 10.0.0.3")) for g in gaps) == 5
    assert not any(g.startswith("tcp 10.0.0.2") for g in gaps)
