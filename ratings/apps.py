from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Ratings"

    def ready(self) -> None:
        from config import immutability
        from ratings.guards import GUARDS

        immutability.register(self.label, GUARDS)  # reinstalled after every migrate
