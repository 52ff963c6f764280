"""Pure grade eligibility (no Django, no clock): filled in by issue 17."""
