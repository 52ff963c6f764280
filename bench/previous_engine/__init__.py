"""The scoring engine as it was before issue 27 (commit f2e7d5f), for the benches only.

``score_cycle`` here is that engine's entry point: ``core``, ``tiering``, ``layout`` and
``sampling`` are verbatim copies (imports rewired); streams, validation, hashing and the value
types are the app's, unchanged by issue 27. The calibration and scoring benches print its
figures beside the current engine's. Never imported by the app.
"""

from bench.previous_engine.core import score_cycle

__all__ = ["score_cycle"]
