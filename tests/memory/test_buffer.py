"""ChannelBuffer: appending, the recent window (count and token budget), clear, prune, bad input."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from memory.stores.buffer import PRUNE_SQL, RECENT_SQL, BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.tokens import estimate_tokens

from tests.memory.conftest import T0

Make = Callable[..., BufferedMessage]


async def test_an_appended_message_reads_back_equal(buffer: ChannelBuffer, make_message: Make) -> None:
    msg = make_message(1, role="assistant", author_name="Bot", message_id="1234567890123")
    await buffer.append(msg)
    assert await buffer.recent("100") == [msg]


async def test_recent_returns_the_latest_messages_oldest_first(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append_many([make_message(i) for i in range(10)])
    window = await buffer.recent("100", limit=3)
    assert [m.content for m in window] == ["message 7", "message 8", "message 9"]


async def test_recent_after_and_before_bound_the_window_by_time(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append_many([make_message(i) for i in range(10)])
    window = await buffer.recent("100", after=T0 + timedelta(seconds=2), before=T0 + timedelta(seconds=6))
    assert [m.content for m in window] == ["message 3", "message 4", "message 5"]


async def test_count_and_sizes_measure_the_messages_after_a_time_in_sql(
        buffer: ChannelBuffer, make_message: Make) -> None:
    texts = ["short", "word " * 300, "nul \x00 inside and é accents", "\u202eright to left"]
    await buffer.append_many([make_message(i, content=text) for i, text in enumerate(texts)])
    assert await buffer.count("100") == 4
    assert await buffer.count("100", after=T0) == 3
    assert await buffer.count("999") == 0
    sizes = await buffer.sizes("100", after=T0, limit=2)
    assert [(s.created_at, s.tokens) for s in sizes] == [
        (T0 + timedelta(seconds=i), estimate_tokens(texts[i])) for i in (2, 3)]


async def test_recent_orders_by_time_not_by_arrival(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append(make_message(5))
    await buffer.append(make_message(1))
    await buffer.append(make_message(3))
    assert [m.content for m in await buffer.recent("100")] == ["message 1", "message 3", "message 5"]


async def test_messages_at_the_same_instant_keep_arrival_order(buffer: ChannelBuffer, make_message: Make) -> None:
    for word in ("first", "second", "third"):
        await buffer.append(make_message(0, content=word))
    assert [m.content for m in await buffer.recent("100")] == ["first", "second", "third"]


async def test_channels_are_kept_apart(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append(make_message(0, channel_id="100", content="in 100"))
    await buffer.append(make_message(1, channel_id="200", content="in 200"))
    assert [m.content for m in await buffer.recent("100")] == ["in 100"]
    assert [m.content for m in await buffer.recent("200")] == ["in 200"]
    assert await buffer.recent("300") == []


async def test_a_dm_message_keeps_guild_none(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append(make_message(0, guild_id=None))
    assert (await buffer.recent("100"))[0].guild_id is None


async def test_created_at_comes_back_as_the_same_aware_utc_instant(buffer: ChannelBuffer, make_message: Make) -> None:
    paris = timezone(timedelta(hours=1))
    said = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=paris)
    await buffer.append(make_message(0, created_at=said))
    back = (await buffer.recent("100"))[0].created_at
    assert back == said
    assert back.utcoffset() == timedelta(0)


async def test_the_same_discord_message_is_stored_once(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append(make_message(0, message_id="111"))
    await buffer.append(make_message(0, message_id="111", content="replayed event"))
    await buffer.append_many([make_message(1, message_id="111"), make_message(2, message_id="222")])
    assert [(m.content, m.message_id) for m in await buffer.recent("100")] == [
        ("message 0", "111"),
        ("message 2", "222"),
    ]


async def test_messages_without_discord_ids_are_all_kept(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append_many([make_message(0), make_message(0), make_message(0)])
    assert len(await buffer.recent("100")) == 3


async def test_an_invalid_message_in_a_batch_stores_none_of_it(buffer: ChannelBuffer, make_message: Make) -> None:
    with pytest.raises(ValueError):
        await buffer.append_many([make_message(0), make_message(1, content="  "), make_message(2)])
    assert await buffer.recent("100") == []


async def test_append_many_of_nothing_does_nothing(buffer: ChannelBuffer) -> None:
    await buffer.append_many([])
    assert await buffer.recent("100") == []


# --- the token budget ----------------------------------------------------------------------


async def test_the_budget_drops_the_oldest_messages_first(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append_many([make_message(i, content="x" * 400) for i in range(5)])  # 100 tokens each
    window = await buffer.recent("100", token_budget=250)
    assert [m.created_at for m in window] == [T0 + timedelta(seconds=3), T0 + timedelta(seconds=4)]


async def test_count_and_budget_both_bound_the_window(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append_many([make_message(i, content="x" * 40) for i in range(10)])  # 10 tokens each
    assert len(await buffer.recent("100", limit=3, token_budget=1000)) == 3
    assert len(await buffer.recent("100", limit=30, token_budget=45)) == 4


async def test_the_window_stays_contiguous_past_an_oversized_older_message(
    buffer: ChannelBuffer, make_message: Make
) -> None:
    await buffer.append(make_message(0, content="small and old"))
    await buffer.append(make_message(1, content="y" * 4000))
    await buffer.append(make_message(2, content="newest"))
    window = await buffer.recent("100", token_budget=50)
    assert [m.content for m in window] == ["newest"]


async def test_a_newest_message_over_the_budget_comes_alone_cut_with_a_note(
    buffer: ChannelBuffer, make_message: Make
) -> None:
    await buffer.append(make_message(0, content="older"))
    huge = "z" * 10_000
    await buffer.append(make_message(1, content=huge))
    window = await buffer.recent("100", token_budget=100)
    assert len(window) == 1
    assert window[0].content.startswith("zzz")
    assert "truncated" in window[0].content
    assert estimate_tokens(window[0].content) <= 100
    assert (await buffer.recent("100", limit=1))[0].content == huge  # the stored row is whole


async def test_a_budget_too_small_even_for_the_cut_note_gives_an_empty_window(
    buffer: ChannelBuffer, make_message: Make
) -> None:
    await buffer.append(make_message(0, content="z" * 10_000))
    assert await buffer.recent("100", token_budget=5) == []


async def test_a_zero_budget_or_limit_gives_an_empty_window(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append(make_message(0))
    assert await buffer.recent("100", token_budget=0) == []
    assert await buffer.recent("100", limit=0) == []


async def test_negative_bounds_are_refused(buffer: ChannelBuffer) -> None:
    with pytest.raises(ValueError, match="limit"):
        await buffer.recent("100", limit=-1)
    with pytest.raises(ValueError, match="token_budget"):
        await buffer.recent("100", token_budget=-5)


# --- clear and prune -----------------------------------------------------------------------


async def test_clear_empties_one_channel_and_counts(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append_many([make_message(i) for i in range(3)] + [make_message(9, channel_id="200")])
    assert await buffer.clear("100") == 3
    assert await buffer.recent("100") == []
    assert len(await buffer.recent("200")) == 1
    assert await buffer.clear("100") == 0


async def test_prune_deletes_only_messages_older_than_the_cutoff(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append_many(
        [make_message(i, channel_id=c) for i in range(0, 100, 10) for c in ("100", "200")]
    )
    assert await buffer.prune(T0 + timedelta(seconds=50)) == 10
    assert [m.created_at for m in await buffer.recent("100")] == [T0 + timedelta(seconds=s) for s in (50, 60, 70, 80, 90)]
    assert len(await buffer.recent("200")) == 5


async def test_prune_handles_more_rows_than_one_batch(
    buffer: ChannelBuffer, make_message: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memory.stores.buffer.PRUNE_BATCH", 7)
    await buffer.append_many([make_message(i) for i in range(30)])
    assert await buffer.prune(T0 + timedelta(seconds=25)) == 25
    assert len(await buffer.recent("100")) == 5


async def test_history_is_kept_on_disk_past_the_window(buffer: ChannelBuffer, make_message: Make, db: Database) -> None:
    await buffer.append_many([make_message(i) for i in range(60)])
    assert len(await buffer.recent("100")) == 40
    assert (await db.fetchone("SELECT count(*) FROM buffer_messages"))[0] == 60


async def test_prune_with_a_naive_datetime_is_refused(buffer: ChannelBuffer) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        await buffer.prune(datetime(2026, 1, 1))


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", " ", "\n\t  \r\n"])
async def test_empty_or_whitespace_content_is_refused(buffer: ChannelBuffer, make_message: Make, content: str) -> None:
    with pytest.raises(ValueError, match="empty or only whitespace"):
        await buffer.append(make_message(0, content=content))
    assert await buffer.recent("100") == []


@pytest.mark.parametrize(
    "content",
    [
        "a" * 100_000 + "END",
        "zero\u200bwidth\u200c\u200djoiner\ufeff",
        "\u202eright-to-left override \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
        "nul\x00byte\x00inside",
        "'; DROP TABLE buffer_messages; --",
        "Robert'); DELETE FROM traces WHERE ('1'='1",
        "emoji 👩‍👩‍👧 and combining e\u0301",
        "  leading and trailing whitespace kept  \n",
    ],
    ids=["100kb", "zero-width", "rtl", "nul", "sql-drop", "sql-delete", "emoji", "whitespace-edges"],
)
async def test_any_real_text_is_stored_exactly(buffer: ChannelBuffer, make_message: Make, content: str) -> None:
    await buffer.append(make_message(0, content=content, author_name=content[:50]))
    [back] = await buffer.recent("100")
    assert back.content == content
    assert back.author_name == content[:50]


async def test_a_lone_surrogate_is_stored_as_a_replacement_character(buffer: ChannelBuffer, make_message: Make) -> None:
    await buffer.append(make_message(0, content="broken \ud800 escape"))
    assert (await buffer.recent("100"))[0].content == "broken \ufffd escape"


@pytest.mark.parametrize("channel_id", ["console", "not-a-snowflake", "-1", "ünïcødé", "1' OR '1'='1", "x" * 500])
async def test_ids_need_not_be_snowflakes(buffer: ChannelBuffer, make_message: Make, channel_id: str) -> None:
    await buffer.append(make_message(0, channel_id=channel_id, author_id=channel_id, message_id=channel_id))
    await buffer.append(make_message(1, channel_id="100"))
    [back] = await buffer.recent(channel_id)
    assert (back.channel_id, back.author_id, back.message_id) == (channel_id, channel_id, channel_id)
    assert await buffer.clear(channel_id) == 1
    assert len(await buffer.recent("100")) == 1


@pytest.mark.parametrize(
    ("fields", "error", "names"),
    [
        ({"channel_id": 100}, TypeError, "channel_id"),
        ({"channel_id": ""}, ValueError, "channel_id"),
        ({"author_id": "  "}, ValueError, "author_id"),
        ({"guild_id": ""}, ValueError, "guild_id"),
        ({"message_id": 5}, TypeError, "message_id"),
        ({"role": "system"}, ValueError, "role"),
        ({"content": None}, TypeError, "content"),
        ({"created_at": datetime(2026, 1, 1)}, ValueError, "timezone-aware"),
        ({"created_at": "2026-01-01"}, TypeError, "datetime"),
    ],
)
async def test_malformed_fields_are_refused_naming_the_field(
    buffer: ChannelBuffer, make_message: Make, fields: dict, error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        await buffer.append(make_message(0, **fields))
    assert await buffer.recent("100") == []


async def test_recent_with_a_malformed_channel_id_is_refused(buffer: ChannelBuffer) -> None:
    with pytest.raises(TypeError, match="channel_id"):
        await buffer.recent(100)  # type: ignore[arg-type]


async def test_the_recent_window_is_read_through_the_channel_time_index(db: Database) -> None:
    plan = [row["detail"] for row in await db.fetchall("EXPLAIN QUERY PLAN " + RECENT_SQL, ("100", 0, 2**62, 40))]
    assert any("buffer_messages_channel_time" in d for d in plan), plan
    assert not any("TEMP B-TREE" in d for d in plan), plan  # no sort of the channel's history


async def test_prune_finds_old_rows_through_the_time_index(db: Database) -> None:
    plan = [row["detail"] for row in await db.fetchall("EXPLAIN QUERY PLAN " + PRUNE_SQL, (0, 10))]
    assert any("buffer_messages_time" in d for d in plan), plan
