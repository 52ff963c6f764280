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
    assert (good["parallel"], good["threads"], good["batch_size"]) == (4, 1, 512)
    assert profile_resolve(profile="flaky")["serving"]["error_rate"] == pytest.approx(0.2)
    # leaky keeps the well-chosen serving configuration (see testbed.serving.POORLY_CHOSEN)
    assert profile_resolve(profile="leaky")["serving"] == good
    poor = profile_resolve(profile="exemplary", overrides={"serving": dict(serving.POORLY_CHOSEN)})["serving"]
    assert poor["parallel"] < good["parallel"] and poor["batch_size"] < good["batch_size"]


@pytest.mark.parametrize(
    "override",
    [{"error_rate": 1.5}, {"parallel": 0}, {"batch_size": 4}, {"ctx_size": 100}, {"port": 70000}],
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
    assert flags["--parallel"] == "1" and flags["--threads"] == "2" and flags["--batch-size"] == "16"
    assert flags["--host"] == "10.0.0.11" and flags["--port"] == "8080" and "--metrics" in argv
