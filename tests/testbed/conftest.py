"""Fixtures for the testbed tests: the shared testbeds of testbed.pytest_helpers."""

from testbed.pytest_helpers import testbed_exemplary, testbed_leaky

__all__ = ["testbed_exemplary", "testbed_leaky"]
