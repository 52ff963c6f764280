from django.apps import AppConfig


class WorkbenchConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "workbench"
    verbose_name = "Cycle workbench"

    def ready(self) -> None:
        from django.contrib import admin

        # The admin index opens with a "Start here" link to the workbench (the template
        # extends Django's own index; app templates cannot override it, contrib.admin loads first).
        admin.site.index_template = "workbench/admin_index.html"
