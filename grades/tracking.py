"""Pure price-tracking statistics (no Django, no clock): filled in by issue 17."""
