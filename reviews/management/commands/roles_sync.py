"""`manage.py roles_sync`: create the role groups and reset their permissions to the spec
in config.access.ROLE_PERMISSIONS (run after adding models; migrate also does it)."""

from django.core.management.base import BaseCommand

from reviews.services import roles_sync


class Command(BaseCommand):
    help = "Create the analyst/reviewer/publisher/admin/provider groups and sync their permissions."

    def handle(self, *args: object, **options: object) -> None:
        for role, count in roles_sync().items():
            self.stdout.write(f"{role}: {count} permissions")
