"""serving_goodput: throughput per accelerator at a target interactivity, and goodput, of the provider's LLM endpoint.

In InferenceX's manner: as a tenant, Opgrade uploads its load generator (``_serving_loadgen.py``,
standard library only) over SFTP into the tenant's home on the login node and runs it on a tenant
node (a job step through the scheduler) against the OpenAI-compatible endpoint the provider
declares (``settings.serving_url``). The generator sends fixed-shape requests (random prompts of
a preset length, a fixed number of output tokens) in a closed loop at each concurrency of a sweep,
bounded in requests and seconds. ``probes/parsers/serving.py`` turns its per-request records into
per-point TTFT/TPOT percentiles, interactivity, throughput per accelerator, error rate and goodput,
the Pareto frontier, and the throughput at the preset's target interactivity (PCHIP along the
frontier; out of range is reported as such, never extrapolated). The client's token counts and
decode rate are checked against what the server itself reports for the same requests.

The preset's ``repeats`` runs the sweep several times in one run: each sweep is a replicate of
(throughput, goodput) at the target (evidence ``sweeps``; costs/selectors.py reads them), the value
is their mean.

Outcome: no endpoint declared -> ``declined``; a generator that cannot run or an endpoint that does
not answer -> ``error``; the target above every measured interactivity -> ``fail`` (the endpoint
cannot serve a user that fast); below them, the best measured throughput when the sweep shows the
server saturated (evidence ``at_target``: ``saturated``), else ``error`` (the sweep did not go far
enough to tell; a sweep still above the target goes on at doubled concurrency up to the preset's
``max_concurrency`` until throughput stops rising, so this is rare);
more failed requests than ``max_error_rate`` -> ``fail``; completions that do not depend on the prompt
(fewer than ``min_distinct_completions`` distinct among the first 16 successful requests, each with its
own random prompt: a gateway replaying canned or cached answers) -> ``fail`` with no value, and too
few completions to judge -> ``error``; else the value against the thresholds.

NOT bound to the rubric (cost evidence for issue 16, never a tier): see probes/thresholds/serving.yaml.

Finding contract (read by costs and grades): probe_id ``serving_goodput``, metric
``throughput_at_target``, value tok/s per accelerator at the target (None out of range), unit
``tok/s/gpu``, evidence keys ``points``, ``frontier``, ``target_interactivity_tok_s_per_user``,
``in_range``, ``goodput``, ``error_rate``, ``accelerators``, ``server_check``, ``completions``,
``prompt_dependent`` (False: the completions were canned; costs count no replicate from it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, _thresholds, compute_nodes, endpoint_url, run
from probes.catalog.base import (
    Area,
    Direction,
    FindingDraft,
    Metric,
    Outcome,
    ProbeContext,
    Requirement,
    Scope,
    Target,
)
from probes.parsers import ParseError
from probes.parsers.serving import Slo, analyse, completions_verdict
from probes.transport import Command

PROBE_ID = "serving_goodput"
LOADGEN = Path(__file__).resolve().parent / "_serving_loadgen.py"
DEFINITION = Path(__file__).resolve().parents[1] / "thresholds" / "serving.yaml"
HOME = Command("printf %s \"$HOME\"")
# the generator prints every request of every point: ~300 bytes each, past the transport's default
# 64 KiB once a sweep is extended to 16 streams on three repeats
MAX_OUTPUT = 1 << 20


@cache
def definition() -> dict[str, Any]:
    spec = yaml.safe_load(DEFINITION.read_text())[PROBE_ID]
    if spec.get("bound_to_rubric") is not False:
        raise ValueError("serving.yaml: serving_goodput must declare bound_to_rubric: false")
    return spec


def preset_for(facts: Mapping[str, str]) -> dict[str, Any]:
    """The first preset whose ``match`` fits the facts (the last one has none: the default)."""
    for preset in definition()["presets"]:
        if all(facts.get(k, "").lower() == str(v).lower() for k, v in (preset.get("match") or {}).items()):
            return preset
    raise ValueError("serving.yaml: no default preset")


def prepare(base: str) -> Command:
    return Command("mkdir -p {base} && chmod 700 {base}", base=base)


def loadgen(script: str, url: str, model: str, p: Mapping[str, Any], target: float) -> Command:
    """The generator's command line. A sweep that ends still serving users faster than ``target``
    goes on at twice the concurrency up to the preset's ``max_concurrency`` (default: the sweep's
    own highest, no extension): on a faster machine or a bigger endpoint the preset's levels stop
    short of the target, and a target below the measured range is never extrapolated."""
    return Command(
        "python3 {script} --url {url} --model {model} --input-words {iw} --output-tokens {ot} "
        "--concurrency {conc} --requests-per-point {rpp} --point-seconds {ps} --max-seconds {ms} "
        "--request-timeout-s {rt} --repeats {rep} --extend-above {target} --max-concurrency {mc}",
        script=script,
        url=url,
        model=model,
        iw=int(p["input_words"]),
        ot=int(p["output_tokens"]),
        conc=",".join(str(int(c)) for c in p["concurrency"]),
        rpp=int(p["requests_per_point"]),
        ps=float(p["point_seconds"]),
        ms=float(p["max_seconds"]),
        rt=float(p["request_timeout_s"]),
        rep=int(p.get("repeats", 1)),
        target=float(target),
        mc=int(p.get("max_concurrency") or max(int(c) for c in p["concurrency"])),
    )


def accelerators_of(ctx: ProbeContext, declared: Any) -> tuple[float, str]:
    """How many accelerators serve the endpoint: declared by the provider, else the GPUs per node
    of the cluster's facts (one serving node), else one node (a CPU testbed: per node)."""
    if declared:
        return float(declared), "declared (settings.serving_accelerators)"
    gpus = ctx.facts.get("gpu_count", "")
    if gpus.isdigit() and int(gpus) > 0:
        return float(gpus), "gpu_count of one node"
    return 1.0, "one node (no GPU): per node"


@register
class ServingGoodput(CatalogProbe):
    _spec = definition()
    id = PROBE_ID
    version = int(_spec["version"])
    area = Area(_spec["area"])
    question = str(_spec["question"])
    scope = Scope(_spec["scope"])
    requirements = frozenset(Requirement(r) for r in _spec["requires"])
    disruptive = bool(_spec["disruptive"])
    timeout_s = int(_spec["timeout_s"])
    metrics = {
        name: Metric(name=name, unit=str(m["unit"]), direction=Direction(m["direction"]))
        for name, m in _spec["metrics"].items()
    }
    metric = metrics["throughput_at_target"]
    thresholds_by_metric = {m: _thresholds(rows) for m, rows in (_spec.get("thresholds") or {}).items()}
    thresholds = thresholds_by_metric["throughput_at_target"]
    defaults = dict(_spec.get("settings") or {})
    bound_to_rubric = False

    def plan(self, ctx: ProbeContext) -> dict[str, Any]:
        """The preset for the cluster's facts with the cluster's settings applied: the request shape
        and counts may be set (the run stays within the probe's timeout), the sweep's extension cap
        only lowered."""
        preset = dict(preset_for(ctx.facts))
        for key in ("input_words", "output_tokens", "requests_per_point", "max_seconds", "repeats"):
            if self.setting(ctx, key) is not None:
                preset[key] = self.setting(ctx, key)
        if self.setting(ctx, "max_concurrency") is not None:  # the sweep's extension: only ever shrunk
            preset["max_concurrency"] = min(
                int(self.setting(ctx, "max_concurrency")),
                int(preset.get("max_concurrency") or max(int(c) for c in preset["concurrency"])),
            )
        preset["max_seconds"] = min(float(preset["max_seconds"]), self.timeout_s - 90)
        return preset

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        url = endpoint_url(ctx, "serving_url")
        if not url:
            raise Abort(
                Outcome.DECLINED,
                "declined: the provider declares no LLM serving endpoint (settings.serving_url)",
            )
        if not url.startswith(("http://", "https://")):
            raise Abort(Outcome.ERROR, "settings.serving_url must be an http(s) URL")
        preset = self.plan(ctx)
        target_x = float(self.setting(ctx, "target_interactivity") or preset["target_interactivity_tok_s_per_user"])
        slo = Slo(ttft_ms=float(preset["slo"]["ttft_ms"]), tpot_ms=float(preset["slo"]["tpot_ms"]))
        accelerators, per = accelerators_of(ctx, self.setting(ctx, "serving_accelerators"))
        model = str(self.setting(ctx, "serving_model") or "default")

        home = run(ctx, ctx.login, HOME, timeout_s=15, what="home").stdout.strip()
        if not home.startswith("/"):
            raise Abort(Outcome.ERROR, "could not find the tenant's home on the login node")
        code = LOADGEN.read_bytes()
        digest = hashlib.sha256(code).hexdigest()
        base = f"{home}/.opgrade-serving"
        script = f"{base}/loadgen-{digest[:12]}.py"
        run(ctx, ctx.login, prepare(base), timeout_s=15, what="mkdir")
        ctx.ssh(ctx.login).put(code, script, mode=0o600)  # type: ignore[arg-type]

        node = compute_nodes(ctx)[-1]  # a tenant node; the endpoint is the provider's, wherever it runs
        budget = min(float(preset["max_seconds"]) + float(preset["request_timeout_s"]) + 30, self.timeout_s - 30)
        ran = run(ctx, node, loadgen(script, url, model, preset, target_x), timeout_s=budget, what="load generator",
                  max_output_bytes=MAX_OUTPUT)
        common = {
            "node": node.host,
            "serving_url": url,
            "preset": {k: v for k, v in preset.items() if k != "reference"},
            "preset_reference": preset.get("reference", ""),
            "loadgen_sha256": digest,
            "accelerators_basis": per,
        }
        try:
            doc = json.loads(ran.stdout.strip().splitlines()[-1]) if ran.stdout.strip() else None
        except ValueError:
            doc = None
        if ran.exit_code == 3:
            raise Abort(
                Outcome.ERROR,
                f"the serving endpoint {url} did not answer from {node.host}",
                {**common, **ctx.evidence(ran)},
            )
        if ran.truncated:
            raise Abort(
                Outcome.ERROR,
                f"the load generator's output was cut at {MAX_OUTPUT} bytes: fewer requests per point or repeats",
                {**common, **ctx.evidence(ran)},
            )
        if ran.exit_code != 0 or not isinstance(doc, dict):
            raise Abort(Outcome.ERROR, "the load generator did not run to the end", {**common, **ctx.evidence(ran)})
        try:
            result = analyse(doc, slo=slo, target=target_x, accelerators=accelerators)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"unreadable load generator output: {exc}", common) from exc
        evidence = {**result, **common, "truncated_sweep": bool(doc.get("truncated"))}
        evidence.pop("throughput_at_target", None)
        value = result["throughput_at_target"]
        total = sum(p["requests"] for p in result["points"])
        if total == 0 or not any(p["throughput_tok_s_per_gpu"] for p in result["points"]):
            raise Abort(Outcome.ERROR, "no request of the sweep completed", evidence)
        canned = completions_verdict(result["completions"], min_distinct=int(self.setting(ctx, "min_distinct_completions")))
        evidence["prompt_dependent"] = canned is None
        if canned is not None:
            # not a measurement of useful output: costs count no replicate from it (prompt_dependent False)
            outcome = Outcome.ERROR if result["completions"]["checked"] < 4 else Outcome.FAIL
            return [replace(self.finding(target, outcome, evidence=evidence, summary=canned), unit=self.metric.unit)]
        rng = result["range_tok_s_per_user"]
        max_err = float(self.setting(ctx, "max_error_rate"))
        err = result["error_rate"] or 0.0
        if value is None:
            if rng and target_x > rng[1]:
                outcome, why = Outcome.FAIL, f"target {target_x:g} tok/s/user is above every measured interactivity ({rng[0]:.1f}-{rng[1]:.1f})"
            else:
                sat = "; ".join(sorted({str(sw["saturation"]) for sw in result["sweeps"] if sw.get("saturation")}))
                outcome, why = Outcome.ERROR, (
                    f"target {target_x:g} tok/s/user is outside the measured range {rng} and the sweep did not "
                    f"show the server saturated ({sat or 'no measured point'}): not extrapolated"
                )
            # the contract keeps the unit even without a value: the metric is still tok/s/gpu
            return [replace(self.finding(target, outcome, evidence=evidence, summary=why), unit=self.metric.unit)]
        if err > max_err:
            outcome, ref = Outcome.FAIL, f"error_rate>{max_err:g}"
        else:
            outcome, ref = self.judge(ctx, value)
        summary = (
            f"{value:.1f} tok/s per {'GPU' if per.startswith(('declared', 'gpu')) else 'node'} at "
            f"{target_x:g} tok/s/user; goodput {result['goodput']}; error rate {err:.2%}"
        )
        return [self.finding(target, outcome, value=value, evidence=evidence, threshold_ref=ref, summary=summary)]
