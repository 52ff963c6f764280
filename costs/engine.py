"""Pure cost arithmetic (no Django, no clock): filled in by issue 16."""
