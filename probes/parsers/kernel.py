"""Kernel pending reboot: a newer kernel of the running flavour is installed but not booted.

A patched kernel that sits in ``/boot`` does not protect anyone until the node reboots; ClusterMAX
grades it critical. This follows the rule of SemiAnalysis's ``cmax`` (host-check.sh): take the
running release (``uname -r``), its flavour (``6.1.0-26-amd64`` -> ``amd64``), the newest
installed release of the same flavour, and compare in version order. A
``/var/run/reboot-required`` marker (Debian/Ubuntu) also counts.

Input is the output of one probe command with three sections::

    ==uname==
    6.1.0-26-amd64
    ==boot==
    config-6.1.0-26-amd64
    vmlinuz-6.1.0-28-amd64
    ==modules==
    6.1.0-26-amd64
    ==reboot-required==
    yes|no
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probes.parsers import ParseError
from probes.parsers.versions import parse_kernel_release, version_key

_SECTION = re.compile(r"^==(?P<name>[a-z-]+)==$")
_FLAVOUR = re.compile(r"^\d+(?:\.\d+)*-\d+-(?P<flavour>.+)$")
_IMAGE = re.compile(r"^(?:vmlinuz|vmlinux|bzImage|kernel)-(?P<release>\d+\.\d+\S*)$")


def split_sections(text: str) -> dict[str, list[str]]:
    """Split ``==name==`` delimited output into ``{name: [lines]}``."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _SECTION.match(line.strip())
        if match:
            current = sections.setdefault(match["name"], [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return sections


def kernel_flavour(release: str) -> str:
    """``6.8.0-45-generic`` -> ``generic``; ``6.18.44-fc-v669`` -> ``""`` (no Debian-style ABI number)."""
    match = _FLAVOUR.match(release)
    return match["flavour"] if match else ""


@dataclass(frozen=True)
class KernelState:
    running: str
    installed: tuple[str, ...]
    newest_same_flavour: str | None
    reboot_required_marker: bool

    @property
    def newer_installed(self) -> bool:
        if not self.newest_same_flavour or self.newest_same_flavour == self.running:
            return False
        return version_key(self.newest_same_flavour) > version_key(self.running)

    @property
    def pending_reboot(self) -> bool:
        return self.newer_installed or self.reboot_required_marker


def parse_kernel_state(text: str) -> KernelState:
    """Parse the sectioned output described in the module docstring."""
    sections = split_sections(text)
    if "uname" not in sections or not sections["uname"]:
        raise ParseError("no ==uname== section")
    running = parse_kernel_release(sections["uname"][0])
    installed: set[str] = set()
    for entry in sections.get("boot", []):
        match = _IMAGE.match(entry.rsplit("/", 1)[-1])
        if match:
            installed.add(match["release"])
    for entry in sections.get("modules", []):
        name = entry.rsplit("/", 1)[-1]
        if re.match(r"^\d+\.\d+", name):
            installed.add(name)
    flavour = kernel_flavour(running)
    same = sorted((r for r in installed if kernel_flavour(r) == flavour), key=version_key)
    marker = any(line.lower() in ("yes", "true", "1") for line in sections.get("reboot-required", []))
    return KernelState(
        running=running,
        installed=tuple(sorted(installed, key=version_key)),
        newest_same_flavour=same[-1] if same else None,
        reboot_required_marker=marker,
    )
