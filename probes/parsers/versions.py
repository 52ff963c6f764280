"""Version strings and the minimum-versions table: kernel, NVIDIA driver, CUDA, NCCL, Slurm.

Versions are compared the way ``sort -V`` orders them (numeric runs compared as numbers, the
rest as text), which is also how SemiAnalysis's ``cmax`` audit compares kernels. The table of
minimums is data (``probes/thresholds/min_versions.yaml``); this module only evaluates it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from probes.parsers import ParseError

_TOKEN = re.compile(r"(\d+)|([^\d.+~_-]+)")


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key: numbers compare numerically, words after numbers (``6.1.0-26-amd64``)."""
    if not version or not version.strip():
        raise ParseError("empty version")
    key: list[tuple[int, int | str]] = []
    for number, word in _TOKEN.findall(version.strip()):
        key.append((1, int(number)) if number else (0, word))
    return tuple(key)


def version_at_least(observed: str, minimum: str) -> bool:
    """``observed >= minimum`` in version order, compared over the minimum's length.

    ``12.4`` meets ``12.4``; ``12.4.1`` meets ``12.4``; ``550.54.15`` meets ``535``.
    """
    return version_key(observed) >= version_key(minimum)


@dataclass(frozen=True)
class MinimumSpec:
    """One component's floor. ``branches`` maps a driver branch (``"550"``) to its own floor."""

    component: str
    minimum: str
    branches: Mapping[str, str] | None = None
    source: str = ""
    choice: str = (
        ""  # "opgrade": Opgrade's own bar (no outside source), shown as such on the methodology page
    )

    def floor_for(self, observed: str) -> str:
        if self.branches:
            branch = observed.split(".")[0]
            return self.branches.get(branch, self.minimum)
        return self.minimum


@dataclass(frozen=True)
class VersionVerdict:
    component: str
    observed: str | None
    minimum: str
    ok: bool | None  # None: not observed (component absent or unreadable)


def check_versions(
    observed: Mapping[str, str | None], table: Mapping[str, MinimumSpec]
) -> tuple[VersionVerdict, ...]:
    """Compare each observed component with its floor; components not in the table are ignored."""
    verdicts = []
    for component, spec in table.items():
        value = observed.get(component)
        if not value:
            verdicts.append(VersionVerdict(component, None, spec.minimum, None))
            continue
        floor = spec.floor_for(value)
        try:
            ok = version_at_least(value, floor)
        except ParseError:
            ok = None
        verdicts.append(VersionVerdict(component, value, floor, ok))
    return tuple(verdicts)


_KERNEL = re.compile(r"^\d+\.\d+(\.\d+)?\S*$")


def parse_kernel_release(text: str) -> str:
    """``uname -r`` -> ``6.1.0-26-amd64``."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not _KERNEL.match(line):
        raise ParseError(f"not a kernel release: {line[:80]!r}")
    return line


_SMI_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>[\d.]+)\s+Driver Version:\s*(?P<driver>[\d.]+)\s+CUDA Version:\s*(?P<cuda>[\d.]+|N/A)"
)


def parse_nvidia_smi_header(text: str) -> tuple[str, str | None]:
    """The driver and the CUDA version from plain ``nvidia-smi``'s banner: ``("550.54.15", "12.4")``."""
    match = _SMI_HEADER.search(text)
    if not match:
        raise ParseError("no 'NVIDIA-SMI ... Driver Version ... CUDA Version' banner")
    cuda = match["cuda"]
    return match["driver"], (None if cuda == "N/A" else cuda)


_NCCL_LIB = re.compile(r"libnccl\.so\.(?P<v>\d+\.\d+\.\d+)")
_NCCL_PKG = re.compile(r"^libnccl2\s+(?P<v>\d+\.\d+\.\d+)", re.MULTILINE)


def parse_nccl_version(text: str) -> str | None:
    """NCCL's version from ``dpkg-query -W libnccl2`` or a ``libnccl.so.X.Y.Z`` file name; None if absent."""
    match = _NCCL_PKG.search(text) or _NCCL_LIB.search(text)
    return match["v"] if match else None


def parse_dpkg_versions(text: str) -> dict[str, str]:
    """``dpkg-query -W -f='${Package}\\t${Version}\\n' ...`` -> ``{package: version}``."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if "\t" in line:
            package, version = line.split("\t", 1)
            if package.strip() and version.strip():
                out[package.strip()] = version.strip()
    return out


_NVCC = re.compile(r"release (?P<short>\d+\.\d+), V(?P<v>\d+\.\d+(?:\.\d+)?)")
_CUDA_JSON = re.compile(r'"cuda"\s*:\s*\{[^}]*"version"\s*:\s*"(?P<v>\d+\.\d+(?:\.\d+)?)"', re.DOTALL)


def parse_cuda_toolkit_version(text: str) -> str | None:
    """The CUDA toolkit's version from ``nvcc --version`` or ``/usr/local/cuda/version.json``; None if absent."""
    match = _NVCC.search(text) or _CUDA_JSON.search(text)
    return match["v"] if match else None


_CTK = re.compile(r"NVIDIA Container Toolkit CLI version (?P<v>\d+\.\d+\.\d+)")
_DCGMI = re.compile(r"^\s*(?:dcgmi\s+)?version\s*:\s*(?P<v>\d+\.\d+\.\d+)", re.MULTILINE | re.IGNORECASE)


def parse_container_toolkit_version(text: str) -> str | None:
    """``nvidia-ctk --version`` -> ``1.17.4``; None if absent."""
    match = _CTK.search(text)
    return match["v"] if match else None


def parse_dcgmi_version(text: str) -> str | None:
    """``dcgmi --version`` (``version: 3.3.5``) -> ``3.3.5``; None if absent."""
    match = _DCGMI.search(text)
    return match["v"] if match else None
