"""Probes: hands-on, repeatable checks run against providers' clusters.

A probe answers one question about one target and writes immutable findings. The runner
(Celery on Redis) claims each ProbeRun atomically so that redelivery never runs it twice.
"""
