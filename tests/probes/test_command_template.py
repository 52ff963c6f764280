"""Command templates: every value becomes exactly one quoted shell word."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probes.transport import Command, CommandTemplateError, Credentials, HostKey


def test_values_are_quoted_so_shell_syntax_in_them_is_inert() -> None:
    cmd = Command("ls -l {path}", path="/tmp/x; rm -rf / #")
    assert cmd.render() == "ls -l '/tmp/x; rm -rf / #'"


@given(st.text(min_size=0, max_size=50))
def test_any_value_round_trips_as_a_single_shell_word(value: str) -> None:
    value = value.replace("\x00", "")
    assert shlex.split(Command("echo {v}", v=value).render()) == ["echo", value]


@pytest.mark.parametrize(
    ("template", "values"),
    [
        ("echo {a}", {}),  # missing value
        ("echo", {"a": "1"}),  # unused value
        ("echo {0}", {"0": "x"}),  # positional
        ("echo {a!r}", {"a": "x"}),  # conversion
        ("echo {a:>10}", {"a": "x"}),  # format spec
        ("echo {a.b}", {"a": "x"}),  # attribute access
        ("echo {", {}),  # malformed
    ],
)
def test_malformed_templates_are_refused(template: str, values: dict[str, str]) -> None:
    with pytest.raises(CommandTemplateError):
        Command(template, **values)


def test_non_scalar_values_are_refused() -> None:
    with pytest.raises(CommandTemplateError):
        Command("echo {a}", a=["x"])  # type: ignore[arg-type]


def test_literal_braces_are_written_doubled() -> None:
    assert Command("awk '{{print $1}}' {f}", f="a b").render() == "awk '{print $1}' 'a b'"


def test_secrets_never_appear_in_a_credentials_repr() -> None:
    creds = Credentials(username="alice", private_key="-----BEGIN SECRET-----", password="hunter2")
    assert "SECRET" not in repr(creds) and "hunter2" not in repr(creds)


def test_credentials_need_a_key_or_a_password() -> None:
    with pytest.raises(ValueError):
        Credentials(username="alice")


def test_fingerprints_must_be_sha256() -> None:
    with pytest.raises(ValueError):
        HostKey(key_type="ssh-ed25519", fingerprint="aa:bb:cc")
