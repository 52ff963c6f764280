"""The tier rule lives in ``ratings.engine.tiering``; this name is kept for existing imports."""

from ratings.engine.tiering import (  # noqa: F401 - re-exported
    GRID_SIZE,
    MAX_BOUNDARIES,
    MAX_GROUPS,
    WORST,
    Cut,
    choose,
    conditional_tiers,
    floor_tier_index,
    marginal_grid,
    pair_probabilities,
    point_tiers,
    publish,
    tier_probabilities,
)
