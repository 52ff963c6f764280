"""App config for the quick start's demo orchestration."""

from django.apps import AppConfig


class QuickstartConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "quickstart"
    verbose_name = "Quick start demo"
