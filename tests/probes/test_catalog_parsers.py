"""Pure parts of the first probes, on captured outputs, and the threshold table."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.catalog import UnknownProbe, probe_get, probe_list
from probes.catalog.base import Direction, Outcome, Threshold, Thresholds
from probes.catalog.node_inventory import parse_inventory
from probes.parsers import ParseError

CAPTURED = Path(__file__).parent / "captured"


def test_it_reads_a_debian_cpu_node_inventory() -> None:
    inv = parse_inventory((CAPTURED / "node_inventory_debian12_cpu.txt").read_text())
    assert inv.os_name == "Debian GNU/Linux 12 (bookworm)"
    assert inv.kernel.startswith("Linux ")
    assert inv.cpus == 2 and inv.memory_kib == 24684084
    assert inv.slurm_version == "22.05.8"
    assert inv.gpus is None  # no nvidia-smi: not "zero GPUs"


def test_it_reads_gpus_from_nvidia_smi_csv() -> None:
    inv = parse_inventory((CAPTURED / "node_inventory_h100_constructed.txt").read_text())
    assert inv.slurm_version == "23.11.4" and inv.cpus == 224
    assert inv.gpus is not None and len(inv.gpus) == 2
    assert inv.gpus[0].name == "NVIDIA H100 80GB HBM3" and inv.gpus[0].memory_mib == 81559
    assert inv.gpus[0].driver == "550.54.15"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "===os\nNAME=x\n",
        "garbage\nlines",
        (CAPTURED / "node_inventory_debian12_cpu.txt").read_text().replace("MemTotal:", "MemFree:"),
    ],
)
def test_unreadable_inventory_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_inventory(text)


def test_thresholds_pick_the_first_matching_gpu_row_and_fall_back_to_the_default() -> None:
    table = Thresholds(
        (
            Threshold(pass_at=430, warn_at=380, match={"gpu_model": "H100-SXM-80GB"}),
            Threshold(pass_at=200),
        )
    )
    assert table.evaluate(450, Direction.HIGHER, {"gpu_model": "H100-SXM-80GB"}) == (
        Outcome.PASS,
        "gpu_model=H100-SXM-80GB",
    )
    assert table.evaluate(400, Direction.HIGHER, {"gpu_model": "h100-sxm-80gb"})[0] == Outcome.WARN
    assert table.evaluate(100, Direction.HIGHER, {"gpu_model": "H100-SXM-80GB"})[0] == Outcome.FAIL
    assert table.evaluate(250, Direction.HIGHER, {"gpu_model": "A100"}) == (Outcome.PASS, "default")
    assert Thresholds().evaluate(1, Direction.LOWER, {})[0] == Outcome.NOT_APPLICABLE


def test_lower_is_better_metrics_pass_below_the_bound() -> None:
    table = Thresholds((Threshold(pass_at=2000, warn_at=5000),))
    assert table.evaluate(150, Direction.LOWER, {})[0] == Outcome.PASS
    assert table.evaluate(3000, Direction.LOWER, {})[0] == Outcome.WARN
    assert table.evaluate(9000, Direction.LOWER, {})[0] == Outcome.FAIL


def test_the_registry_knows_the_first_probes_and_refuses_unknown_ids() -> None:
    ids = {p.id for p in probe_list()}
    assert {"ssh_reachable", "node_inventory"} <= ids
    # pass/fail: the handshake time (ms) is kept as the value but measures the analyst's network
    assert probe_get("ssh_reachable").describe()["metric"] == {
        "name": "",
        "unit": "ms",
        "direction": "higher",
    }
    with pytest.raises(UnknownProbe):
        probe_get("no_such_probe")
