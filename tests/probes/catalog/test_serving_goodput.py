"""serving_goodput is declared as data, stays out of the rubric (cost evidence, never a tier), and
fails closed: no endpoint declared is declined, a generator that cannot run is an error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from probes.catalog import probe_get
from probes.catalog.base import Outcome, ProbeContext, Requirement, Scope, Target
from probes.catalog.serving_goodput import LOADGEN, definition, preset_for
from probes.thresholds import definitions

RUBRICS = sorted((Path(__file__).resolve().parents[3] / "rubric" / "data").glob("opgrade-*.yaml"))


def test_no_shipped_rubric_binds_the_serving_probe_so_it_never_changes_a_tier():
    assert RUBRICS
    for path in RUBRICS:
        rubric = yaml.safe_load(path.read_text())
        bound = {c["probe"]["id"] for c in rubric["criteria"] if c.get("probe")}
        assert "serving_goodput" not in bound, path.name
    assert definition()["bound_to_rubric"] is False
    assert probe_get("serving_goodput").bound_to_rubric is False
    # declared beside, not in, catalog.yaml: the catalog's "every probe is bound" checks keep their meaning
    assert "serving_goodput" not in definitions()


def test_every_preset_and_bar_names_a_public_source_or_says_it_is_opgrades_own_choice():
    spec = definition()
    rows = [p["reference"] for p in spec["presets"]] + [
        r["reference"] for rows in spec["thresholds"].values() for r in rows
    ]
    for ref in rows:
        assert "Opgrade's own choice" in ref or "https://" in ref, ref
    assert preset_for({"scale": "testbed"})["name"] == "testbed-cpu-gemma3-270m"
    assert preset_for({"gpu_model": "H100"})["name"] == "default-1k-1k"
    cls = probe_get("serving_goodput")
    assert cls.metric.name == "throughput_at_target" and cls.metric.unit == "tok/s/gpu"


def test_no_declared_endpoint_is_declined_not_measured():
    cls = probe_get("serving_goodput")
    ctx = ProbeContext(
        provider="p", cluster="c", login=None, capabilities={Requirement.SSH, Requirement.SLURM}, settings={}
    )
    (finding,) = cls().execute(ctx, Target(kind=Scope.CLUSTER, name="cluster"))
    assert finding.outcome is Outcome.DECLINED and "serving_url" in finding.summary


def test_the_load_generator_is_standard_library_only_and_says_when_nothing_answers():
    imports = {
        line.split()[1].split(".")[0]
        for line in LOADGEN.read_text().splitlines()
        if line.startswith(("import ", "from "))
    }
    assert imports <= {"__future__", "argparse", "http", "json", "random", "sys", "threading", "time", "urllib", "os"}
    # a closed loopback port: exit 3 (no answer) and a JSON document, within the bound
    done = subprocess.run(
        [sys.executable, str(LOADGEN), "--url", "http://127.0.0.1:9", "--concurrency", "1", "--request-timeout-s", "3", "--warmup-wait-s", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["points"] == []
    bad = subprocess.run([sys.executable, str(LOADGEN), "--url", "ftp://x"], capture_output=True, timeout=30)
    assert bad.returncode == 2


def test_failed_requests_are_records_with_their_status_not_a_crash():
    import http.server
    import threading

    class Fail(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = b'{"error": "upstream failure"}'
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fail)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = subprocess.run(
            [sys.executable, str(LOADGEN), "--url", f"http://127.0.0.1:{server.server_port}", "--concurrency", "1,2",
             "--requests-per-point", "2", "--warmup-wait-s", "0"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    reqs = [r for p in json.loads(done.stdout)["points"] for r in p["requests"]]
    assert len(reqs) == 4 and all(not r["ok"] and r["status"] == 500 and "HTTP 500" in r["error"] for r in reqs)
