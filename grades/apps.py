"""Compute grades and rental price references (issue 17).

Layer: above costs, below reports. `grades.eligibility` and `grades.tracking` are pure.
"""
from django.apps import AppConfig


class GradesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "grades"
    verbose_name = "Compute grades and price references"

    def ready(self) -> None:
        from config import immutability
        from grades.guards import GUARDS

        immutability.register(self.label, GUARDS)  # reinstalled after every migrate
