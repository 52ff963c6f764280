"""The scoring engine's public entry points; the engine itself is the ``ratings.engine`` package.

Kept so that ``from ratings.scoring import score_cycle`` (services, commands, benchmarks)
keeps working; see ``ratings/engine/__init__.py`` for the stages and where each one lives.
"""

from ratings.engine import (
    ENGINE_VERSION,
    canonical_json,
    content_hash,
    inputs_hash,
    median_table,
    normalise,
    result_to_dict,
    rubric_content,
    score_cycle,
    shrink,
    validate_input,
    validate_rubric,
)
from ratings.engine.hashing import canonical_dumps as _canonical_dumps
from ratings.engine.hashing import sha256_hex as _sha256

__all__ = [
    "ENGINE_VERSION",
    "_canonical_dumps",
    "_sha256",
    "canonical_json",
    "content_hash",
    "inputs_hash",
    "median_table",
    "normalise",
    "result_to_dict",
    "rubric_content",
    "score_cycle",
    "shrink",
    "validate_input",
    "validate_rubric",
]
