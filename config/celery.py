"""The Celery application.

Two queues: `default` for short bookkeeping tasks and `probes` for probe runs, which can
take minutes and must not starve the rest. Tasks are acked late and rejected when a worker
dies, so the broker redelivers them; our rows' atomic claim makes redelivery safe.
Schedules live in the database (django-celery-beat), editable in the admin.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("opgrade")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("probes"))
app.autodiscover_tasks()
