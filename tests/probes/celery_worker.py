"""Entry point for the real Celery worker the integration tests start as a subprocess.

It loads the test-only probes first, then hands over to Celery's own command line, so the worker
is the real thing (prefork pool, Redis broker, acks_late) with a few extra probe ids and a faster
sweep for un-acked messages.
"""

from __future__ import annotations

import os
import sys

import django

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from celery.bin.celery import main

    import tests.probes.worker_probes  # noqa: F401  (registers the test probes)

    sys.argv = ["celery", *sys.argv[1:]]
    sys.exit(main())
