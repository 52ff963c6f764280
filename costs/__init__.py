"""Cost of useful intelligence: prices, availability and cost per useful Mtok (issue 16).

Layer: above ratings, below grades and reports. `costs.engine` is pure (no Django, no clock).
"""
