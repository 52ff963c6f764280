"""Customer-feedback CSV: the documented column set, and a pure parser/validator.

A survey export is accepted as UTF-8 CSV with a header row holding exactly these columns
(any order; extra columns are refused so a mis-mapped export fails loudly):

| column            | required | meaning                                                  |
|-------------------|----------|----------------------------------------------------------|
| provider_slug     | yes      | a provider in the cycle's peer set                       |
| area_or_criterion | yes      | an area key or criterion key of the cycle's rubric       |
| rating            | yes      | integer 1 (poor) to 5 (excellent)                        |
| source            | yes      | `survey` or `interview`                                  |
| respondent_org    | yes      | the customer organisation; stored only as an HMAC-SHA256 |
| comment           | no       | free text (never shown to providers)                     |
| date              | no       | ISO date the answer was given, e.g. 2026-11-02           |

The file may be UTF-8 (with or without a byte-order mark), UTF-16 with a byte-order mark, or
Latin-1/Windows-1252 (``feedback_csv_decode`` says which, or refuses naming the cause); its
separator may be a comma, a semicolon or a tab (read from the header row), and header names
are matched without regard to case or surrounding spaces.

Every row is checked and every problem reported with its line number in the file
(the header is line 1), so a dry run lists all bad rows at once. A file that is not
well-formed CSV (a quote left open, text after a closing quote) is refused whole at the
line where the broken record starts: nothing after it can be read reliably. Pure: text and the
allowed values in, frozen dataclasses out; no models, no clock.
"""

from __future__ import annotations

import codecs
import csv
import datetime as dt
import hashlib
import hmac
import io
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field

from config.text import unsafe_text_problem

COLUMNS: tuple[str, ...] = (
    "provider_slug", "area_or_criterion", "rating", "source", "respondent_org", "comment", "date",
)
REQUIRED: frozenset[str] = frozenset(COLUMNS) - {"comment", "date"}
SOURCES: frozenset[str] = frozenset({"survey", "interview"})
MAX_ROWS = 50_000
MAX_COMMENT_CHARS = 5_000


@dataclass(frozen=True)
class FeedbackRow:
    line: int
    provider_slug: str
    area_or_criterion: str
    rating: int
    source: str
    respondent_org_hash: str
    comment: str
    date: dt.date | None


@dataclass(frozen=True)
class RowError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class ParseResult:
    rows: tuple[FeedbackRow, ...] = ()
    errors: tuple[RowError, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.rows)


class FeedbackFileError(ValueError):
    """The file cannot be read as text; the message names the cause."""


@dataclass(frozen=True)
class DecodedFile:
    text: str
    encoding: str  # what it was read as, said back to the analyst


def feedback_csv_decode(data: bytes) -> DecodedFile:
    """Bytes of an upload -> text, with the encoding detected, or FeedbackFileError naming why not.

    A byte-order mark decides (UTF-8, UTF-16 LE/BE); otherwise UTF-8 is tried, then
    Windows-1252 (Latin-1 plus the quotes and dashes spreadsheets add). NUL bytes without a BOM
    mean UTF-16 or UTF-32 without a byte-order mark, which cannot be told apart reliably: refused.
    """
    boms = ((codecs.BOM_UTF8, "utf-8-sig", "UTF-8 with BOM"), (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
            (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"))
    for bom, codec, name in boms:
        if data.startswith(bom):
            try:
                return DecodedFile(data.decode(codec), name)
            except UnicodeDecodeError as exc:
                raise FeedbackFileError(f"the file starts with a {name} byte-order mark but byte {exc.start} "
                                        f"is not {name}") from exc
    if b"\x00" in data:
        raise FeedbackFileError("the file holds NUL bytes: it looks like UTF-16 or UTF-32 without a byte-order "
                                "mark; export it as UTF-8 (or UTF-16 with a BOM)")
    try:
        return DecodedFile(data.decode("utf-8"), "UTF-8")
    except UnicodeDecodeError as utf8_error:
        try:
            return DecodedFile(data.decode("cp1252"), "Latin-1 (Windows-1252)")
        except UnicodeDecodeError:
            raise FeedbackFileError(
                f"the file is neither UTF-8 (byte 0x{data[utf8_error.start]:02x} at offset {utf8_error.start}) "
                "nor Latin-1/Windows-1252 text; export it as UTF-8"
            ) from utf8_error


SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab"}


def _separator(text: str) -> str:
    """The separator of the header row: the one that splits it into the most known columns."""
    first = text.split("\n", 1)[0]
    best, best_known = ",", -1
    for sep in SEPARATORS:
        known = sum(1 for name in first.split(sep) if _column_name(name) in COLUMNS)
        if known > best_known:
            best, best_known = sep, known
    return best


def _column_name(raw: str) -> str:
    return raw.strip().strip('"').strip().lower()


def org_pseudonym(org: str, *, key: str) -> str:
    """Keyed hash of an organisation name: stable per key, useless without it."""
    normalised = " ".join(org.split()).casefold()
    return hmac.new(key.encode(), normalised.encode(), hashlib.sha256).hexdigest()


def feedback_csv_parse(
    text: str, *, provider_slugs: Set[str], rating_keys: Set[str], pseudonym_key: str,
    refused: Mapping[str, str] | None = None, progress: Callable[[int], None] | None = None,
    progress_every: int = 5_000,
) -> ParseResult:
    """Parse and validate a survey export; return good rows and every bad row's errors.

    ``refused`` maps keys of the rubric that customers may not rate (a criterion that takes no
    customer feedback) to the reason, said on each row that names one. ``progress`` is called
    with the number of data rows read so far, every ``progress_every`` rows and at the end.
    """
    if not pseudonym_key:
        raise ValueError("a pseudonym key is required to hash respondent organisations")
    text = text.lstrip("\ufeff")
    # strict: a quote left open (or text after a closing quote) is an error, not a field that
    # silently swallows every later row up to the end of the file.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True, delimiter=_separator(text))
    header = [_column_name(h) for h in next(reader, [])]
    if not any(header):
        return ParseResult(errors=(RowError(1, "the file is empty: expected a header row"),))
    missing = sorted(REQUIRED - set(header))
    unknown = sorted(set(header) - set(COLUMNS))
    if missing or unknown or len(set(header)) != len(header):
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown column(s) {', '.join(unknown)}")
        if len(set(header)) != len(header):
            parts.append("duplicate column names")
        if len(header) == 1:
            parts.append("the header row is one column: the separators read are comma, semicolon and tab")
        return ParseResult(errors=(RowError(1, "; ".join(parts) + f"; expected {', '.join(COLUMNS)}"),))

    rows: list[FeedbackRow] = []
    errors: list[RowError] = []
    line = reader.line_num
    count = 0
    while True:
        line = reader.line_num + 1  # a record's number is the line it starts on
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.append(RowError(line, f"not valid CSV: {exc} (is a closing quote missing on this line?)"))
            break
        folded = _folded_field(header, fields)
        if folded:
            errors.append(RowError(line, f"the quoted {folded} field runs over several lines: is a closing quote "
                                         "missing on this line? Nothing after it can be read reliably"))
            break
        if not fields or not any(f.strip() for f in fields):
            continue  # blank line
        count += 1
        if progress is not None and count % progress_every == 0:
            progress(count)
        if count > MAX_ROWS:
            errors.append(RowError(line, f"too many rows (limit {MAX_ROWS})"))
            break
        raw: dict[str | None, str | list[str] | None] = dict(zip(header, fields, strict=False))
        if len(fields) > len(header):
            raw[None] = fields[len(header):]
        row_errors, parsed = _row_parse(
            raw, line=line, provider_slugs=provider_slugs, rating_keys=rating_keys, key=pseudonym_key,
            refused=refused or {},
        )
        errors.extend(row_errors)
        if parsed is not None:
            rows.append(parsed)
    if not rows and not errors:
        errors.append(RowError(2, "no data rows"))
    if progress is not None and count % progress_every:
        progress(count)
    return ParseResult(rows=tuple(rows), errors=tuple(errors))


def _folded_field(header: list[str], fields: list[str]) -> str | None:
    """The column of a field holding a line break, if any but a comment does. Only a comment
    may span lines; any other field that does swallowed the next rows through a missing quote."""
    for name, value in zip(header, fields, strict=False):
        if name != "comment" and ("\n" in value or "\r" in value):
            return name
    return None


def _row_parse(
    raw: dict[str | None, str | list[str] | None], *, line: int, provider_slugs: Set[str], rating_keys: Set[str],
    key: str, refused: Mapping[str, str],
) -> tuple[list[RowError], FeedbackRow | None]:
    errors: list[RowError] = []
    if None in raw:
        errors.append(RowError(line, "more fields than columns"))
    values = {name: (raw.get(name) or "").strip() for name in COLUMNS}  # type: ignore[union-attr]
    if any(raw.get(name) is None for name in REQUIRED):
        errors.append(RowError(line, "fewer fields than columns"))
        return errors, None
    for name in sorted(REQUIRED):
        if not values[name]:
            errors.append(RowError(line, f"{name} is empty"))
    for name in COLUMNS:
        unsafe = unsafe_text_problem(values[name])
        if unsafe:
            errors.append(RowError(line, f"{name} {unsafe}"))
    slug, area, source = values["provider_slug"], values["area_or_criterion"], values["source"]
    if slug and slug not in provider_slugs:
        errors.append(RowError(line, f"provider_slug {slug!r} is not in this cycle's peer set"))
    if area and area in refused:
        errors.append(RowError(line, f"area_or_criterion {area!r}: {refused[area]}"))
    elif area and area not in rating_keys:
        errors.append(RowError(line, f"area_or_criterion {area!r} is not an area or criterion of the rubric"))
    rating: int | None = None
    if values["rating"]:
        try:
            rating = int(values["rating"])
        except ValueError:
            errors.append(RowError(line, f"rating {values['rating']!r} is not a whole number"))
        else:
            if not 1 <= rating <= 5:
                errors.append(RowError(line, f"rating {rating} is outside 1-5"))
    if source and source not in SOURCES:
        errors.append(RowError(line, f"source {source!r} must be one of {', '.join(sorted(SOURCES))}"))
    if len(values["comment"]) > MAX_COMMENT_CHARS:
        errors.append(RowError(line, f"comment longer than {MAX_COMMENT_CHARS} characters"))
    date: dt.date | None = None
    if values["date"]:
        try:
            date = dt.date.fromisoformat(values["date"])
        except ValueError:
            errors.append(RowError(line, f"date {values['date']!r} is not an ISO date (YYYY-MM-DD)"))
    if errors or rating is None:
        return errors, None
    return errors, FeedbackRow(
        line=line, provider_slug=slug, area_or_criterion=area, rating=rating, source=source,
        respondent_org_hash=org_pseudonym(values["respondent_org"], key=key), comment=values["comment"], date=date,
    )
