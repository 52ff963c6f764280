"""What a Slurm health check actually runs: classify the HealthCheckProgram (or Prolog) from its text.

Slurm runs ``HealthCheckProgram`` every ``HealthCheckInterval`` seconds and does nothing with its
exit code: a health check protects the pool only if it marks a bad node itself (``scontrol update
... state=drain|down|fail``) or is a tool that does (LBNL NHC, NVIDIA DCGM's ``dcgmi diag`` /
``dcgmi health``). ``/bin/true``, an empty script, or a script that logs and exits 0 passes a
config check and protects nothing. This module is pure: the probe reads the program over SSH and
hands the text here.

The input is :data:`INSPECT`'s output format::

    ==resolved==   the program's path with symlinks resolved (readlink -f)
    ==stat==       mode|owner|size|type (stat -L)
    ==head==       "(ELF binary)" or the first 16 KiB of the script
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probes.parsers import ParseError

TRIVIAL_BINARIES = frozenset(
    {"true", "false", "echo", "printf", "sleep", "yes", "logger", "env", "sh", "bash", "dash", "busybox"}
)
_NHC_CALL = re.compile(r"(?:^|[\s/;|&(`'\"])nhc(?:-wrapper)?(?=$|[\s;|&)`'\"])", re.MULTILINE)
_NHC_SELF = re.compile(r"NHC_VERSION=|LBNL Node Health Check")
_DCGM_CALL = re.compile(r"\bdcgmi\s+(?:diag|health)\b")
_MARKS_NODE = re.compile(
    r"\bscontrol\b[^\n]*\bupdate\b[^\n]*\bstate=[\"']?(?:drain|down|fail)", re.IGNORECASE
)
_CONDITION = re.compile(r"(?:^|\s)(?:if|case|while|test|\[\[?|&&|\|\|)(?=\s|$)", re.MULTILINE)
_GPU_CHECK = re.compile(r"nvidia-smi|dcgm|nvml|\bxid\b|gpu", re.IGNORECASE)
_TRIVIAL_LINE = re.compile(
    r"^(?:exit(?:\s+0)?|true|:|echo\b.*|printf\b.*|logger\b.*|set\s+-\w+|export\s+\w+=.*)$"
)


@dataclass(frozen=True)
class HealthCheckVerdict:
    kind: str  # nhc | dcgm | drains | trivial | no_action | missing | opaque_binary | unreadable
    protects: bool | None  # True: a real check; False: passes whatever the node's state; None: cannot tell
    detail: str
    checks_gpu: bool = False


def _sections(text: str) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("==") and line.endswith("==") and len(line) > 4:
            current = line.strip("=")
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def effective_lines(script: str) -> list[str]:
    """Script lines without the shebang, comments and blank lines."""
    lines = []
    for raw in script.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        lines.append(line)
    return lines


def classify_health_check(inspected: str) -> HealthCheckVerdict:
    """Judge the program from :data:`INSPECT`'s output (see the module docstring)."""
    sections = _sections(inspected)
    if "resolved" not in sections or "head" not in sections:
        raise ParseError("not the health-check inspection format (==resolved== / ==head==)")
    resolved = sections["resolved"].strip()
    name = resolved.rsplit("/", 1)[-1]
    head = sections["head"]
    if not resolved or not sections.get("stat", "").strip():
        return HealthCheckVerdict("missing", False, f"{resolved or 'the program'} does not exist on the node")
    if head.strip() == "(unreadable)":
        return HealthCheckVerdict("unreadable", None, f"{resolved} cannot be read by a tenant")
    if head.strip() == "(ELF binary)":
        if name in TRIVIAL_BINARIES:
            return HealthCheckVerdict("trivial", False, f"{resolved} checks nothing")
        if name.startswith("nhc"):
            return HealthCheckVerdict("nhc", True, f"{resolved} (NHC)", checks_gpu=False)
        if name == "dcgmi":
            return HealthCheckVerdict("dcgm", True, f"{resolved} (DCGM)", checks_gpu=True)
        return HealthCheckVerdict("opaque_binary", None, f"{resolved} is a binary Opgrade cannot inspect")
    if not head.strip():
        return HealthCheckVerdict("trivial", False, f"{resolved} is empty")
    body = effective_lines(head)
    code = "\n".join(body)
    gpu = bool(_GPU_CHECK.search(code))
    if _NHC_SELF.search(head) or name.startswith("nhc") or _NHC_CALL.search(code):
        return HealthCheckVerdict("nhc", True, f"{resolved} runs LBNL NHC", checks_gpu=gpu)
    if _DCGM_CALL.search(code):
        return HealthCheckVerdict("dcgm", True, f"{resolved} runs DCGM diagnostics", checks_gpu=True)
    if not body or all(_TRIVIAL_LINE.match(line) for line in body):
        return HealthCheckVerdict(
            "trivial", False, f"{resolved} only exits, logs or echoes: it checks nothing"
        )
    if _MARKS_NODE.search(code) and _CONDITION.search(code):
        return HealthCheckVerdict(
            "drains", True, f"{resolved} checks the node and drains it when the check fails", checks_gpu=gpu
        )
    return HealthCheckVerdict(
        "no_action",
        False,
        f"{resolved} never drains or downs the node (Slurm ignores a health check's exit code)",
        checks_gpu=gpu,
    )
