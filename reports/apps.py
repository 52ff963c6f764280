from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "reports"
    verbose_name = "Reports"

    def ready(self) -> None:
        from config import immutability
        from reports import signals  # noqa: F401  (connects the cache invalidation)
        from reports.guards import GUARDS

        immutability.register(self.label, GUARDS)  # reinstalled after every migrate
