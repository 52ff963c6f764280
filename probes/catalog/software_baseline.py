"""software_baseline: are the kernel, NVIDIA driver, CUDA, NCCL, Slurm and the GPU tools at least the minimums?

One fixed script per node prints each component's version (what is not installed prints
nothing); the floors are data (probes/thresholds/min_versions.yaml: the NVIDIA driver, CUDA
toolkit, DCGM and Container Toolkit floors are ClusterMAX's published ones). Any observed
component below its floor fails the node; components that are absent (no GPU stack on a CPU
node) are listed and do not fail it.
"""

from __future__ import annotations

from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.kernel import split_sections
from probes.parsers.slurm import parse_slurm_version
from probes.parsers.versions import (
    check_versions,
    parse_container_toolkit_version,
    parse_cuda_toolkit_version,
    parse_dcgmi_version,
    parse_kernel_release,
    parse_nccl_version,
    parse_nvidia_smi_header,
)
from probes.thresholds import min_versions
from probes.transport import Command

VERSIONS_SCRIPT = Command(
    "echo ==uname==; uname -r; "
    "echo ==slurm==; (sinfo --version || slurmd -V) 2>/dev/null; "
    "echo ==smi==; command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi 2>/dev/null | head -n 5; "
    "echo ==nccl==; dpkg-query -W libnccl2 2>/dev/null; ldconfig -p 2>/dev/null | grep -o 'libnccl\\.so\\.[0-9.]*' | head -n 1; "
    "echo ==cudatk==; (nvcc --version || /usr/local/cuda/bin/nvcc --version || head -c 4000 /usr/local/cuda/version.json) 2>/dev/null; "
    "echo ==ctk==; nvidia-ctk --version 2>/dev/null | head -n 1; "
    "echo ==dcgm==; dcgmi --version 2>/dev/null | head -n 3; "
    "true"
)


def observed_versions(text: str) -> dict[str, str | None]:
    sections = split_sections(text)
    out: dict[str, str | None] = {"kernel": parse_kernel_release("\n".join(sections.get("uname", [])))}
    try:
        out["slurm"] = parse_slurm_version("\n".join(sections.get("slurm", [])))
    except ParseError:
        out["slurm"] = None
    smi = "\n".join(sections.get("smi", []))
    driver, cuda = parse_nvidia_smi_header(smi) if "NVIDIA-SMI" in smi else (None, None)
    out.update(nvidia_driver=driver, cuda=cuda, nccl=parse_nccl_version("\n".join(sections.get("nccl", []))))
    out["cuda_toolkit"] = parse_cuda_toolkit_version("\n".join(sections.get("cudatk", [])))
    out["nvidia_container_toolkit"] = parse_container_toolkit_version("\n".join(sections.get("ctk", [])))
    out["dcgm"] = parse_dcgmi_version("\n".join(sections.get("dcgm", [])))
    return out


@register
class SoftwareBaseline(CatalogProbe, definition="software_baseline"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        result = run(ctx, target.endpoint, VERSIONS_SCRIPT, timeout_s=30, what="version listing")
        evidence = ctx.evidence(result)
        try:
            observed = observed_versions(result.stdout)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not read versions: {exc}", evidence) from exc
        verdicts = check_versions(observed, min_versions())
        evidence["versions"] = [
            {"component": v.component, "observed": v.observed, "minimum": v.minimum, "ok": v.ok}
            for v in verdicts
        ]
        old = [v for v in verdicts if v.ok is False]
        absent = [v.component for v in verdicts if v.observed is None]
        if old:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    evidence=evidence,
                    summary="below minimum: "
                    + ", ".join(f"{v.component} {v.observed} < {v.minimum}" for v in old),
                )
            ]
        checked = ", ".join(f"{v.component} {v.observed}" for v in verdicts if v.ok)
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"at or above minimum: {checked}"
                + (f"; absent: {', '.join(absent)}" if absent else ""),
            )
        ]
