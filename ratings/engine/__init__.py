"""The pure scoring engine, one module per stage (see ``ratings.engine.core`` for the pipeline)."""
