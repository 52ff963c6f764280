"""The pure scoring engine, one module per stage; ``ratings.engine.core.score_cycle`` runs them.

===================  =========================================================================
``hashing``          canonical text and hashes of a rubric's content and of a whole input
``validation``       refuse what cannot be scored, naming the first offending row
``normalisation``    raw values onto [0, 1] against the rubric's anchors
``streams``          each (criterion, kind) of a provider as an exact resampling distribution
``layout``           slots, statuses, exact coverage, weights, failed gates
``sampling``         the bootstrap: common random numbers keyed by the seed and the slot
``tiering``          the tier rule: confirmed gaps, at most four boundaries, floors/gates as caps
``core``             the pipeline and the per-provider result
``serialisation``    canonical JSON and the content hash of a result
===================  =========================================================================

Value types live in ``ratings.engine_types`` (the vocabulary in ``rubric.spec``). Nothing here
imports Django or any Django app's models; ``tests/ratings/test_engine_layers.py`` checks it.
"""

from ratings.engine.core import score_cycle
from ratings.engine.hashing import ENGINE_VERSION, inputs_hash, rubric_content
from ratings.engine.normalisation import normalise
from ratings.engine.serialisation import canonical_json, content_hash, result_to_dict
from ratings.engine.streams import median_table, shrink
from ratings.engine.validation import validate_input, validate_rubric

__all__ = [
    "ENGINE_VERSION",
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
