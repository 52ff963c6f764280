"""Rubric API routes (the rubric work fills in the views)."""

urlpatterns: list = []
