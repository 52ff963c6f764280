"""The host_privilege_surface mutations touch only their own testbed (no root needed to check)."""

from __future__ import annotations

from pathlib import Path

from testbed import redteam


def _ctx(name: str) -> redteam.Ctx:
    root = Path("/var/lib/opgrade-testbed") / name
    return redteam.Ctx(
        name=name,
        root=root,
        ctl_addr="10.200.7.2",
        ctl_netns=f"opgtb-{name}-ctl",
        subnet_prefix="10.200.7.",
        victim=f"{name}-tenant-b",
        observer=f"{name}-tenant-a",
        victim_home=root / "home" / f"{name}-tenant-b",
        victim_log_dir=root / "logs" / "tenants" / f"{name}-tenant-b",
    )


MINE = [m for m in redteam.MUTATIONS if m.probe == "host_privilege_surface"]


def test_ten_host_privilege_mutations_each_with_its_own_marker():
    assert len(MINE) == 10
    markers = [m.marker(_ctx("tbx")) for m in MINE if m.marker]
    assert len(markers) == 10 and len(set(markers)) == 10


def test_every_marker_lies_in_the_testbed_or_carries_its_name():
    c = _ctx("tbx")
    for m in MINE:
        marker = Path(m.marker(c))
        assert marker.is_relative_to(c.root) or "opgtb-tbx" in str(marker), (m.name, marker)
        assert not marker.is_relative_to("/usr/local")  # a private tmpfs on the testbed's nodes
