"""Relative dates in a message ("yesterday", "last Saturday", "two weeks ago"), resolved when it is stored.

A message says "I went to the support group yesterday"; a question months later asks "when did
she go to the support group?". Only the moment the message was written can tell which day
"yesterday" was, so the memory resolves such expressions at write time, against the item's
`created_at`, and keeps the dates (`dates_of`) with the item.

Finding the expressions is ours: a short list of patterns of the relative forms (dateparser's
own `search_dates` also reads "we" as Wednesday and "May" in "May I" as a month). Turning one
into a date is dateparser's (`dateparser.parse` with the message's time as its relative base,
past dates preferred): the calendar arithmetic of weekdays, months and years is a solved problem.
An expression dateparser cannot place is left out, never guessed.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import dateparser

__all__ = ["TimeMention", "dates_of", "describe", "mentions"]

log = logging.getLogger(__name__)

_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_COUNT = r"(?:\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|few|couple of)"
_UNIT = r"(?:days?|weeks?|months?|years?)"
_NUMBERS = {"a": "1", "an": "1", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
            "seven": "7", "eight": "8", "nine": "9", "ten": "10", "a couple of": "2", "couple of": "2",
            "a few": "3", "few": "3"}
_RELATIVE = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening)"
    rf"|(?:last|this\s+past|this|next)\s+(?:{_WEEKDAY}|week(?:end)?|month|year|summer|winter|spring|fall)"
    rf"|(?:on\s+)?{_WEEKDAY}"
    rf"|{_COUNT}\s+{_UNIT}\s+ago)\b",
    re.IGNORECASE,
)
_SEASONS = {"spring": 4, "summer": 7, "fall": 10, "winter": 1}


@dataclass(frozen=True, slots=True)
class TimeMention:
    """One relative expression of a message, `text` as written, `day` the date it names
    ("last week", "last month" and "last year" name a day in that week, month or year);
    `grain` is "day", "week", "month" or "year": how precise the expression is."""

    text: str
    day: datetime
    grain: str


def _grain(expr: str) -> str:
    if re.search(r"year|summer|winter|spring|fall", expr):
        return "year" if "year" in expr else "month"
    if "month" in expr:
        return "month"
    if re.search(r"week", expr):
        return "week"
    return "day"


def _normal(expr: str) -> str:
    """`expr` as dateparser reads it: spelled-out counts as digits, "this past" as "last"."""
    text = " ".join(expr.lower().split()).removeprefix("on ")
    text = re.sub(r"^this past ", "last ", text)
    if (match := re.match(rf"^({_COUNT})\s+({_UNIT})\s+ago$", text)) is not None:
        text = f"{_NUMBERS.get(match.group(1), match.group(1))} {match.group(2)} ago"
    return text


def _parse(expr: str, base: datetime) -> datetime | None:
    season = re.match(r"^(last|this|next) (summer|winter|spring|fall)$", expr)
    if season is not None:  # dateparser has no seasons: the season's middle month of that year
        year = base.year + {"last": -1, "this": 0, "next": 1}[season.group(1)]
        return datetime(year, _SEASONS[season.group(2)], 15)
    if expr in ("last weekend", "this weekend", "next weekend"):
        expr = {"last weekend": "last saturday", "this weekend": "saturday", "next weekend": "next saturday"}[expr]
    prefer = "future" if expr.startswith(("next", "tomorrow")) else "past"
    try:
        return dateparser.parse(expr, languages=["en"], settings={
            "RELATIVE_BASE": base, "PREFER_DATES_FROM": prefer, "RETURN_AS_TIMEZONE_AWARE": False})
    except (ValueError, OverflowError) as exc:  # a date out of range: nothing to keep
        log.debug("cannot place %r from %s: %s", expr, base, exc)
        return None


def mentions(text: str, said_at: float) -> list[TimeMention]:
    """The relative time expressions of `text`, each placed against `said_at` (epoch seconds,
    UTC): in order, at most one per distinct expression."""
    base = datetime.fromtimestamp(said_at, tz=UTC).replace(tzinfo=None)
    found: list[TimeMention] = []
    seen: set[str] = set()
    for match in _RELATIVE.finditer(text or ""):
        expr = _normal(match.group(0))
        if expr in seen:
            continue
        seen.add(expr)
        if expr in ("today", "tonight") or expr.startswith("this ") and _grain(expr) == "day":
            day: datetime | None = base
        else:
            day = _parse(expr, base)
        if day is not None:
            found.append(TimeMention(match.group(0), day, _grain(expr)))
    return found


def describe(mention: TimeMention) -> str:
    """The date a mention names, as words a question may use: "7 May 2023", "May 2023", "2023";
    a week is named by its day ("the week of 1 May 2023")."""
    day = mention.day
    if mention.grain == "year":
        return f"{day.year}"
    if mention.grain == "month":
        return f"{day:%B} {day.year}"
    if mention.grain == "week":
        return f"the week of {day.day} {day:%B} {day.year}"
    return f"{day.day} {day:%B} {day.year}"


def dates_of(text: str, said_at: float) -> str:
    """The dates `text` names relative to `said_at`, described (`describe`) and joined by "; "
    ("" when there is none): what the memory keeps as an item's `dates` metadata."""
    return "; ".join(dict.fromkeys(describe(m) for m in mentions(text, said_at)))
