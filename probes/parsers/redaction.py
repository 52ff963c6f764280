"""Bounded, redacted evidence: what a finding may keep of a command, a request and a response.

Findings are immutable and shown to analysts and, in reports, to providers, so evidence must
never carry credentials and must stay small. Two jobs:

* :func:`redact` masks secrets in free text: ``Authorization``/``Cookie``/``X-Api-Key`` headers,
  bearer tokens, ``password=``/``token=``/``secret=`` style pairs (query strings, JSON, shell),
  user:password in URLs, PEM private keys, and any caller-given literal (a tenant's password).
* :func:`bound` cuts text to a byte budget and says so; :func:`nonce_excerpt` keeps only the
  lines around a canary hit, so isolation evidence proves the leak (path, request, the line
  with the nonce) without copying the other tenant's unrelated data into our database.

Pure: no Django, no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "[REDACTED]"
DEFAULT_MAX_BYTES = 4096

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S
        ),
        "-----BEGIN PRIVATE KEY-----" + MASK + "-----END PRIVATE KEY-----",
    ),
    (re.compile(r"(?im)^(\s*(?:proxy-)?authorization\s*:\s*)(\S+\s+)?\S.*$"), r"\1\2" + MASK),
    (
        re.compile(r"(?im)^(\s*(?:cookie|set-cookie|x-api-key|x-auth-token|private-token)\s*:\s*).+$"),
        r"\1" + MASK,
    ),
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + MASK),
    (re.compile(r"(?i)([a-z][a-z0-9+.-]{0,15}://)[^/\s:@]{1,256}:[^/\s@]{1,256}@"), r"\1" + MASK + "@"),
    (
        re.compile(
            r"""(?i)(["']?\b(?:pass(?:word|wd)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"""
            r"""client[_-]?secret|auth)\b["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&,;}"']+)"""
        ),
        r"\1" + MASK,
    ),
)


def redact(text: str, *, secrets: Iterable[str] = ()) -> str:
    """Mask credentials in ``text``; every literal in ``secrets`` (4+ chars) is masked too."""
    out = text
    for literal in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        out = out.replace(literal, MASK)
    for pattern, repl in _PATTERNS:
        out = pattern.sub(repl, out)
    return out


def bound(text: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, bool]:
    """``text`` cut to ``max_bytes`` of UTF-8 (never mid-character) and whether it was cut."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text, False
    cut = raw[:max_bytes].decode("utf-8", errors="ignore")
    return cut + f"\n[... {len(raw) - len(cut.encode('utf-8'))} bytes cut]", True


def clean(text: str, *, secrets: Iterable[str] = (), max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Redact, then bound: the one call a probe makes for any text it keeps.

    The text is first cut to a little more than the budget (a secret straddling the cut is still
    seen whole by the patterns), so redaction costs the same whatever a host printed.
    """
    head = text[: 2 * max_bytes + 8192]
    cut = len(head) < len(text)
    kept, bounded = bound(redact(head, secrets=secrets), max_bytes=max_bytes)
    if cut and not bounded:
        kept += f"\n[... {len(text) - len(head)} characters cut]"
    return kept


def nonce_excerpt(
    text: str, nonce: str, *, context_lines: int = 0, max_lines: int = 5, secrets: Iterable[str] = ()
) -> str:
    """Only the lines that carry ``nonce`` (plus ``context_lines`` around each), redacted.

    Unrelated lines of a foreign tenant's output are replaced by a count, so evidence of a leak
    does not itself copy the other tenant's data.
    """
    if not nonce:
        raise ValueError("empty nonce")
    lines = text.splitlines()
    keep: set[int] = set()
    for i, line in enumerate(lines):
        if nonce in line:
            keep.update(range(max(0, i - context_lines), min(len(lines), i + context_lines + 1)))
    chosen = sorted(keep)[: max_lines * (2 * context_lines + 1)]
    out: list[str] = []
    last = -1
    for i in chosen:
        if i > last + 1:
            out.append(f"[... {i - last - 1} lines omitted]")
        out.append(lines[i])
        last = i
    if last < len(lines) - 1:
        out.append(f"[... {len(lines) - 1 - last} lines omitted]")
    return clean("\n".join(out), secrets=secrets, max_bytes=1024)


def redact_mapping(
    data: Any, *, secrets: Iterable[str] = (), max_bytes: int = DEFAULT_MAX_BYTES, _depth: int = 0
) -> Any:
    """Recursively redact and bound every string in a JSON-like structure; secret-named keys are masked whole."""
    secrets = tuple(secrets)
    if _depth > 8:
        return "[... nested too deep]"
    if isinstance(data, Mapping):
        out: dict[str, Any] = {}
        for key, value in list(data.items())[:100]:
            if re.search(
                r"(?i)pass(word)?|secret|token|authorization|api[_-]?key|private[_-]?key|cookie", str(key)
            ):
                out[str(key)] = MASK if value not in (None, "") else value
            else:
                out[str(key)] = redact_mapping(value, secrets=secrets, max_bytes=max_bytes, _depth=_depth + 1)
        return out
    if isinstance(data, list | tuple):
        return [
            redact_mapping(v, secrets=secrets, max_bytes=max_bytes, _depth=_depth + 1)
            for v in list(data)[:100]
        ]
    if isinstance(data, str):
        return clean(data, secrets=secrets, max_bytes=max_bytes)
    return data
