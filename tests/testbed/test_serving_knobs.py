"""The serving.* knobs: declared in exemplary, validated, and turned into llama-server's own flags;
a missing build is a clear error naming the install script, never a silent endpoint-less testbed."""

from __future__ import annotations

import pytest

from testbed import serving
from testbed.errors import TestbedError
from testbed.profiles import profile_resolve


def test_serving_is_off_by_default_and_flaky_fails_a_share_of_requests():
    good = profile_resolve(profile="exemplary")["serving"]
    assert good["enabled"] is False and good["error_rate"] == 0
    assert (good["parallel"], good["threads"], good["batch_size"], good["cpu_quota"]) == (4, 1, 512, 0.5)
    assert profile_resolve(profile="flaky")["serving"]["error_rate"] == pytest.approx(0.2)
    # leaky keeps the well-chosen serving configuration (see testbed.serving.POORLY_CHOSEN)
    assert profile_resolve(profile="leaky")["serving"] == good
    poor = profile_resolve(profile="exemplary", overrides={"serving": dict(serving.POORLY_CHOSEN)})["serving"]
    # the same node (same CPU allocation), more threads than it has CPUs, and no batching of streams
    assert poor["cpu_quota"] == good["cpu_quota"] and poor["threads"] > 2 * good["cpu_quota"] * good["threads"]
    assert poor["parallel"] == 1 < good["parallel"]


@pytest.mark.parametrize(
    "override",
    [{"error_rate": 1.5}, {"parallel": 0}, {"batch_size": 4}, {"ctx_size": 100}, {"port": 70000},
     {"cpu_quota": -1}, {"cpu_quota": 0.01}, {"cpu_quota": 65}],
)
def test_bad_serving_knobs_are_refused(override):
    with pytest.raises(TestbedError, match="serving"):
        profile_resolve(profile="exemplary", overrides={"serving": override})


def test_a_missing_build_names_the_install_script(tmp_path, monkeypatch):
    monkeypatch.setenv("OPGRADE_LLM_DIR", str(tmp_path))
    monkeypatch.setenv("OPGRADE_LLM_CACHE", str(tmp_path))
    with pytest.raises(TestbedError, match=r"scripts/install-llm\.sh"):
        serving.server_files(wait_s=0)


def test_the_knobs_become_llama_servers_flags(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    server = tmp_path / "bin" / "llama-server"
    server.write_text("#!/bin/sh\n")
    server.chmod(0o755)
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("OPGRADE_LLM_DIR", str(tmp_path))
    knobs = profile_resolve(profile="exemplary", overrides={"serving": dict(serving.POORLY_CHOSEN)})
    argv = serving.server_argv(knobs, host="10.0.0.11", port=8080)
    flags = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert argv[0] == str(server) and flags["-m"] == str(tmp_path / "model.gguf")
    assert flags["--parallel"] == "1" and flags["--threads"] == "4" and flags["--batch-size"] == "512"
    assert flags["--host"] == "10.0.0.11" and flags["--port"] == "8080" and "--metrics" in argv


def _fake_v1(root):
    cpu = root / "cpu"
    cpu.mkdir()
    (cpu / "cpu.cfs_quota_us").write_text("-1")
    return cpu


def test_the_cpu_quota_becomes_a_weighted_capped_cgroup_the_server_enters_before_exec(tmp_path, monkeypatch):
    cpu = _fake_v1(tmp_path)
    monkeypatch.setenv("OPGRADE_CGROUP_ROOT", str(tmp_path))
    procs = serving.cpu_cgroup_create("tb1", "node1", 0.5)
    group = cpu / serving.CGROUP_PARENT / "tb1-node1"
    assert procs == group / "cgroup.procs"
    assert (group / "cpu.cfs_quota_us").read_text() == "50000" and (group / "cpu.cfs_period_us").read_text() == "100000"
    # weighted far above a plain process (1024), the parent too: the quota is the node's own
    assert int((group / "cpu.shares").read_text()) > 100 * 1024
    assert int((cpu / serving.CGROUP_PARENT / "cpu.shares").read_text()) > 100 * 1024
    argv = serving.in_cgroup(procs, ["llama-server", "-m", "x"])
    assert argv[:2] == ["sh", "-c"] and argv[3] == str(procs) and argv[-3:] == ["llama-server", "-m", "x"]
    assert serving.in_cgroup(None, ["a"]) == ["a"]
    # another testbed whose name starts alike is not ours
    (cpu / serving.CGROUP_PARENT / "tb10-node1").mkdir()
    assert serving.cpu_cgroups_of("tb1") == [group]
    for f in group.iterdir():  # a real cgroup directory's files vanish with rmdir; a fake one's do not
        f.unlink()
    assert serving.cpu_cgroups_remove("tb1") == [] and not group.exists()
    assert (cpu / serving.CGROUP_PARENT / "tb10-node1").exists()


def test_without_a_writable_cpu_controller_a_quota_is_a_clear_error_not_an_unlimited_server(tmp_path, monkeypatch):
    monkeypatch.setenv("OPGRADE_CGROUP_ROOT", str(tmp_path))  # no controller at all
    with pytest.raises(TestbedError, match=r"serving\.cpu_quota=0"):
        serving.cpu_cgroup_create("tb1", "node1", 0.5)
    assert serving.cpu_cgroups_of("tb1") == [] and serving.cpu_cgroups_remove("tb1") == []
