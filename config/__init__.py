"""Project configuration: settings, Celery app, URLs and the API router.

Importing the Celery app here makes `@shared_task` bind to it when Django starts.
"""

from config.celery import app as celery_app

__all__ = ("celery_app",)
