"""App config: wires the audit receiver and keeps role permissions in sync after migrate."""

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ReviewsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reviews"
    verbose_name = "Reviews and access"

    def ready(self) -> None:
        from simple_history.signals import post_create_historical_record

        from reviews.receivers import audit_event_record
        from reviews.services import roles_sync_after_migrate

        post_create_historical_record.connect(audit_event_record, dispatch_uid="reviews.audit_event_record")
        post_migrate.connect(roles_sync_after_migrate, dispatch_uid="reviews.roles_sync")
