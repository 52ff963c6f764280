"""Ratings: providers, their clusters, rating cycles, evidence, scores and tiers."""
