"""The rubric: what Opgrade measures and how much each thing counts.

A RubricVersion holds weighted areas and criteria plus the scoring parameters, so that a
change of method is a new version. Once frozen a version never changes; every score row
names the version it was computed under.
"""
