"""Create the "publisher" group holding reports.publish_report (only publishers publish).

Idempotent: if another app (the reviewers' roles) already made the group, the permission
is added to it. The permission row is created here because Django only creates
permissions after all migrations ran (post_migrate), too late for this one.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="reports", model="report")
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type, codename="publish_report",
        defaults={"name": "Can publish, correct and withdraw tier reports"},
    )
    group, _ = Group.objects.get_or_create(name="publisher")
    group.permissions.add(permission)


def backwards(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    group = Group.objects.filter(name="publisher").first()
    if group is not None:
        group.permissions.remove(*Permission.objects.filter(content_type__app_label="reports", codename="publish_report"))


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0002_immutability_triggers"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(forwards, backwards)]
