"""Evidence redaction/bounding and replicate percentiles."""

from __future__ import annotations

import pytest

from probes.parsers.redaction import MASK, bound, clean, nonce_excerpt, redact, redact_mapping
from probes.parsers.stats import percentile, summarize

PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("Authorization: Basic dGVuYW50LWE6aHVudGVyMg==", "dGVuYW50LWE6aHVudGVyMg=="),
        ("authorization: Bearer abcdefghijklmnop123", "abcdefghijklmnop123"),
        ("curl -H 'Authorization: Bearer abcdefghijklmnop123' http://x", "abcdefghijklmnop123"),
        ("GET http://tenant-a:s3cr3tpass@10.200.1.2/prometheus/api/v1/query", "s3cr3tpass"),
        ("https://user:pw%40x@host/path", "pw%40x"),
        ('{"password": "hunter2hunter2", "user": "a"}', "hunter2hunter2"),
        ("api_key=AKIAABCDEFGH&q=up", "AKIAABCDEFGH"),
        ("export TOKEN=tok_1234567890abcdef", "tok_1234567890abcdef"),
        ("Cookie: sessionid=abc123def456", "abc123def456"),
        (PEM, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
    ],
)
def test_secrets_are_masked(text, leaked):
    out = redact(text)
    assert leaked not in out and MASK in out


def test_given_literals_are_masked_and_ordinary_text_is_kept():
    out = redact(
        "tenant-a logged in with Zq9-very-secret from 10.200.1.11", secrets=["Zq9-very-secret", "ab"]
    )
    assert out == f"tenant-a logged in with {MASK} from 10.200.1.11"
    assert redact("node1|idle|none") == "node1|idle|none"


def test_bound_cuts_on_a_character_boundary_and_says_so():
    text, cut = bound("é" * 100, max_bytes=11)
    assert cut and text.startswith("é" * 5) and "bytes cut" in text
    assert bound("short", max_bytes=100) == ("short", False)
    assert len(clean("x" * 10000, max_bytes=100).encode()) < 200


def test_nonce_excerpt_keeps_only_the_hit_lines():
    foreign = "\n".join(
        ["b private line 1", "b private line 2", "2026 node1 tenant-b: opgrade-canary-NONCE42", "b private 4"]
    )
    out = nonce_excerpt(foreign, "NONCE42")
    assert "opgrade-canary-NONCE42" in out and "private" not in out
    assert "[... 2 lines omitted]" in out and "[... 1 lines omitted]" in out
    with pytest.raises(ValueError):
        nonce_excerpt(foreign, "")


def test_redact_mapping_masks_secret_keys_and_bounds_strings():
    data = {
        "request": {"url": "http://a:b3cret99@h/x", "headers": {"Authorization": "Basic Zm9v"}},
        "api_token": "t0k3n",
        "body": "y" * 10000,
        "n": 3,
    }
    out = redact_mapping(data, max_bytes=64)
    assert out["api_token"] == MASK and out["request"]["headers"]["Authorization"] == MASK
    assert "b3cret99" not in out["request"]["url"]
    assert len(out["body"]) < 200 and out["n"] == 3


def test_percentiles_match_numpy_linear():
    values = [12.0, 3.0, 7.0, 5.0]
    assert percentile(values, 50) == pytest.approx(6.0)
    assert percentile(values, 95) == pytest.approx(11.25)
    assert percentile([4.0], 95) == 4.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_censored_replicates_count_at_the_deadline():
    summary = summarize([2.0, 3.0], censored_at=60.0, censored=1)
    assert summary.n == 3 and summary.p50 == 3.0 and summary.p95 == pytest.approx(54.3)
    with pytest.raises(ValueError):
        summarize([1.0], censored=1)


def test_redaction_takes_linear_time_on_large_output():
    import time

    text = ("x" * 5000 + " http://user:pw@host/ ") * 40  # 200 kB, a capped command's worth
    start = time.monotonic()
    out = clean(text, max_bytes=4096)
    assert time.monotonic() - start < 0.5
    assert "pw@" not in out and len(out.encode()) < 4300
