"""Published tier reports (see the tier-reports work)."""
