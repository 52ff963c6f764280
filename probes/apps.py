from django.apps import AppConfig


class ProbesConfig(AppConfig):
    name = "probes"
    verbose_name = "Probes"

    def ready(self) -> None:
        from config import immutability
        from probes.guards import GUARDS

        immutability.register(self.label, GUARDS)  # reinstalled after every migrate
