"""The one exception type the testbed raises for problems a user can fix."""


class TestbedError(RuntimeError):
    """A clear, user-facing failure: missing root, missing package, bad profile, ..."""

    __test__ = False  # not a pytest test class despite the name
