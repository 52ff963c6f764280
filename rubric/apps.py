from django.apps import AppConfig


class RubricConfig(AppConfig):
    name = "rubric"
    verbose_name = "Rubric"

    def ready(self) -> None:
        from config import immutability
        from rubric.guards import GUARDS

        immutability.register(self.label, GUARDS)  # reinstalled after every migrate
