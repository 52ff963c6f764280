from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Ratings"

    def ready(self) -> None:
        from config import immutability
        from config.errors import BadInput
        from ratings.engine_types import ScoringInputError
        from ratings.guards import GUARDS

        immutability.register(self.label, GUARDS)  # reinstalled after every migrate
        # The pure engine may not import config; its Django side says what kind of error it raises.
        BadInput.register(ScoringInputError)
