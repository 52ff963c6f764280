from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save


class ProbesConfig(AppConfig):
    name = "probes"
    verbose_name = "Probes"

    def ready(self) -> None:
        from probes import receivers
        from probes.models import ProbeSchedule

        post_save.connect(receivers.probe_schedule_saved, sender=ProbeSchedule, dispatch_uid="probes.schedule_saved")
        post_delete.connect(
            receivers.probe_schedule_deleted, sender=ProbeSchedule, dispatch_uid="probes.schedule_deleted"
        )
        post_migrate.connect(receivers.sweeper_schedule_after_migrate, dispatch_uid="probes.sweeper_schedule")

        from config import immutability
        from probes.guards import GUARDS

        immutability.register(self.label, GUARDS)  # reinstalled after every migrate
