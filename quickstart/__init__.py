"""quickstart: the demo rating cycle of the README's quick start (``manage.py demo_cycle``)."""
