"""The inventory at run time (issue 18): inventory_source and node_access replace discover_nodes.

Existing rows keep what they did: a cluster that discovered nodes reads the scheduler, the others
keep their typed list; both keep direct SSH. New rows read the scheduler and reach nodes through it.
"""

from django.db import migrations, models


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    access = apps.get_model("probes", "ClusterAccess")
    access.objects.filter(discover_nodes=True).update(inventory_source="scheduler", node_access="ssh")
    access.objects.filter(discover_nodes=False).update(inventory_source="listed", node_access="ssh")


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    access = apps.get_model("probes", "ClusterAccess")
    access.objects.exclude(inventory_source="listed").update(discover_nodes=True)


class Migration(migrations.Migration):
    dependencies = [("probes", "0005_finding_outcome_declined")]

    operations = [
        migrations.AddField(
            model_name="clusteraccess",
            name="inventory_source",
            field=models.CharField(
                choices=[
                    ("scheduler", "The scheduler (Slurm sinfo on the login node), read at every run"),
                    ("provider_api", "The provider API (GET /v1/nodes), read at every run"),
                    ("listed", "The compute nodes listed below, as typed"),
                ],
                default="scheduler",
                help_text="Where each run reads the cluster's current compute nodes from.",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="clusteraccess",
            name="node_access",
            field=models.CharField(
                choices=[
                    ("scheduler", "As a tenant's job: srun --nodelist from the login node"),
                    ("ssh", "Direct SSH through the login node (pinned host keys)"),
                ],
                default="scheduler",
                help_text="How node-scope commands reach a compute node. Direct SSH trusts a node only through "
                "a pinned host key; a node without one is reported unverified.",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="clusteraccess",
            name="inventory",
            field=models.JSONField(
                blank=True,
                default=dict,
                editable=False,
                help_text="The inventory as last seen (nodes, when, from where) and the recent departed and joined "
                "nodes; written by the runner (probes.services.cluster_inventory_record).",
            ),
        ),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveField(model_name="clusteraccess", name="discover_nodes"),
        migrations.AlterField(
            model_name="clusteraccess",
            name="compute_nodes",
            field=models.TextField(
                blank=True,
                help_text="One compute node a line, host or host:port, reached through the login node. With an "
                "inventory read at run time this is only a hint (the SSH port of a node named here).",
            ),
        ),
    ]
