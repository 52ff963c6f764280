"""``manage.py run_probes`` against a cluster made of local sshd targets."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from probes.models import Finding, ProbeRun
from tests.integration.test_probe_runner_celery import Worker, make_cluster, start_worker  # noqa: F401
from tests.probes.conftest import sshd_factory, user_key  # noqa: F401
from tests.sshd import Sshd

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_run_probes_inline_shows_progress_and_a_summary(
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    login, *nodes = [sshd_factory() for _ in range(3)]
    cluster = make_cluster(login, nodes, user_key)
    out = io.StringIO()
    call_command(
        "run_probes", "--cluster", str(cluster.pk), "--probe", "ssh_reachable", "--probe", "node_inventory",
        "--inline", stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert "[" + "#" * 30 + "] 6/6 targets, 2/2 runs" in text
    assert "ssh_reachable" in text and "node_inventory" in text and "2 done, 0 not done" in text
    assert Finding.objects.filter(run__cluster=cluster, probe_id="ssh_reachable", outcome="pass").count() == 3
    # node_inventory: one inventory finding and one (not applicable: no nvidia-smi) GPU finding per node
    inventory = Finding.objects.filter(run__cluster=cluster, probe_id="node_inventory")
    assert inventory.count() == 6
    assert set(inventory.values_list("metric", "outcome")) == {
        ("", "pass"),
        ("gpu_count", "not_applicable"),
    }


def test_run_probes_waits_for_a_real_worker(
    start_worker: Callable[..., Worker],  # noqa: F811
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    login, *nodes = [sshd_factory() for _ in range(2)]
    cluster = make_cluster(login, nodes, user_key)
    start_worker("cmd")
    out = io.StringIO()
    call_command("run_probes", "--cluster", f"{cluster.provider.slug}/{cluster.name}", "--probe", "ssh_reachable",
                 "--wait", "--timeout", "120", stdout=out)  # fmt: skip
    text = out.getvalue()
    assert "2/2 targets, 1/1 runs" in text and "1 done, 0 not done" in text
    assert ProbeRun.objects.get(cluster=cluster).status == ProbeRun.Status.DONE


def test_run_probes_refuses_an_unknown_probe_and_writes_nothing(
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    cluster = make_cluster(sshd_factory(), [], user_key)
    with pytest.raises(CommandError, match="unknown probe"):
        call_command("run_probes", "--cluster", str(cluster.pk), "--probe", "nope", stdout=io.StringIO())
    assert not ProbeRun.objects.exists()
