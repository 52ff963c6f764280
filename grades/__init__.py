"""Compute grades and rental price references (issue 17).

Layer: above costs, below reports. `grades.eligibility` and `grades.tracking` are pure.
"""
