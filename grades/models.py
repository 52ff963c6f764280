"""Models: filled in by its issue."""
