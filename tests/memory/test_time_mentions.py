"""Specification of memory.semantic.time_mentions: relative dates in a message, placed against when it was said."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from memory.semantic.time_mentions import dates_of, mentions

# Monday 8 May 2023, 13:56 UTC.
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()


def test_yesterday_is_the_day_before_the_message_was_said() -> None:
    assert dates_of("I went to a support group yesterday and it was so powerful.", SAID) == "7 May 2023"


def test_a_weekday_is_the_last_one_before_the_message() -> None:
    assert dates_of("Last Saturday we went camping", SAID) == "6 May 2023"
    assert dates_of("this past Friday I ran", SAID) == "5 May 2023"


def test_counts_of_days_weeks_months_and_years_ago_are_placed_at_their_grain() -> None:
    assert dates_of("I painted that three days ago", SAID) == "5 May 2023"
    assert dates_of("two weeks ago I started", SAID) == "the week of 24 April 2023"
    assert dates_of("we moved last month", SAID) == "April 2023"
    assert dates_of("I started last year", SAID) == "2022"


def test_seasons_are_placed_in_their_year() -> None:
    assert dates_of("last summer we went to the lake", SAID) == "July 2022"


def test_every_expression_is_kept_once_in_order() -> None:
    found = mentions("Yesterday was fun; on Friday too. Yesterday again!", SAID)
    assert [(m.text, m.day.day) for m in found] == [("Yesterday", 7), ("on Friday", 5)]


def test_words_that_only_look_like_dates_are_not_read_as_dates() -> None:
    # dateparser's own search reads "we" as Wednesday and "May" as the month
    assert dates_of("May I ask what we should bring? I second that", SAID) == ""


def test_a_message_without_relative_dates_names_none() -> None:
    assert dates_of("I love painting sunsets", SAID) == ""
    assert dates_of("", SAID) == ""


def test_a_huge_or_hostile_message_is_read_without_error() -> None:
    huge = ("yesterday " + "\u200b\u202e" * 3 + "x" * 50) * 2_000
    assert dates_of(huge, SAID) == "7 May 2023"
    assert dates_of("\x00\x1b[31m last   Saturday \n", SAID) == "6 May 2023"


def test_a_date_out_of_range_is_left_out_not_guessed() -> None:
    assert dates_of("99 years ago", datetime(1, 6, 1, tzinfo=UTC).timestamp()) == ""


async def test_messages_are_resolved_concurrently_from_several_threads() -> None:
    texts = [f"yesterday, message {n}" for n in range(8)]
    found = await asyncio.gather(*(asyncio.to_thread(dates_of, t, SAID) for t in texts))
    assert found == ["7 May 2023"] * 8
