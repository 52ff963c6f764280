"""Create the five role groups. Their permissions are attached after every migrate by
reviews.services.roles_sync (post_migrate), because permissions for models of later
migrations do not exist yet while this one runs; `manage.py roles_sync` does the same."""

from django.db import migrations

ROLES = ("analyst", "reviewer", "publisher", "admin", "provider")


def groups_create(apps, schema_editor):
    group = apps.get_model("auth", "Group")
    for name in ROLES:
        group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(groups_create, migrations.RunPython.noop)]
