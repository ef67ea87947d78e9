"""TraceStore: save and find runs by id, Discord message, interaction, and (user, channel)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from datetime import datetime

import pytest

from memory.stores.buffer import BufferedMessage, ChannelBuffer
from memory.stores.database import Database
from memory.stores.traces import (
    BY_MESSAGE_SQL,
    LAST_FOR_SQL,
    MAX_EVENT_TEXT,
    MAX_RECALLED,
    PRUNE_SQL,
    Recalled,
    TraceRecord,
    TraceStore,
)

Make = Callable[..., TraceRecord]


async def test_a_saved_trace_reads_back_equal(traces: TraceStore, make_trace: Make) -> None:
    rec = make_trace(1, message_id="1180000000000000001", interaction_id="1190000000000000001")
    await traces.save(rec)
    assert await traces.get("trace-1") == rec


async def test_the_recalled_memories_read_back_in_order_with_rank_and_search(
        traces: TraceStore, make_trace: Make, db: Database) -> None:
    recalled = (Recalled("item-b", 1), Recalled("item-a", 2), Recalled("item-a", 1, "tool 1"))
    await traces.save(dataclasses.replace(make_trace(0), recalled=recalled))
    assert (await traces.get("trace-0")).recalled == recalled
    raw = (await db.fetchone("SELECT recalled_json FROM traces WHERE trace_id = 'trace-0'"))[0]
    assert "item-b" in raw and "text" not in raw  # ids only: the words stay in the memory store


async def test_a_trace_without_recalled_memories_reads_back_an_empty_tuple(traces: TraceStore, make_trace: Make) -> None:
    await traces.save(make_trace(0))
    assert (await traces.get("trace-0")).recalled == ()


async def test_a_huge_recall_keeps_the_first_max_recalled(traces: TraceStore, make_trace: Make) -> None:
    many = tuple(Recalled(f"item-{n}", n % 5 + 1, f"tool {n // 5}") for n in range(MAX_RECALLED + 50))
    await traces.save(dataclasses.replace(make_trace(0), recalled=many))
    assert (await traces.get("trace-0")).recalled == many[:MAX_RECALLED]


@pytest.mark.parametrize("bad", [(Recalled("", 1),), (Recalled("x", -1),), [Recalled("x", 1)], ("x",)])
async def test_malformed_recalled_memories_are_refused(traces: TraceStore, make_trace: Make, bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        await traces.save(dataclasses.replace(make_trace(0), recalled=bad))
    assert await traces.get("trace-0") is None


async def test_an_unknown_trace_id_gives_none(traces: TraceStore) -> None:
    assert await traces.get("nope") is None
    assert await traces.by_message("123") is None
    assert await traces.last_for("42", "100") is None


async def test_events_are_stored_as_json_and_come_back_as_dicts(traces: TraceStore, make_trace: Make, db: Database) -> None:
    events = [
        {"type": "tool_finished", "step": 2, "tool": "calculator", "args": {"expression": "2+2"},
         "observation": "4", "ok": True, "elapsed_ms": 0.4},
        {"type": "run_ended", "outcome": "answered", "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
    ]
    await traces.save(make_trace(0, events=events))
    raw = (await db.fetchone("SELECT events_json FROM traces WHERE trace_id = 'trace-0'"))[0]
    assert '"calculator"' in raw
    assert (await traces.get("trace-0")).events == events


async def test_a_megabyte_text_in_the_events_is_kept_to_its_start_with_a_note(
        traces: TraceStore, make_trace: Make) -> None:
    reply = "y" * 1_000_000
    await traces.save(make_trace(0, events=[{"type": "model_called", "content": reply,
                                             "args": {"q": ["z" * 1_000_000]}}]))
    (event,) = (await traces.get("trace-0")).events
    note = f" [... {1_000_000 - MAX_EVENT_TEXT} more characters not kept]"
    assert event["content"] == "y" * MAX_EVENT_TEXT + note
    assert event["args"]["q"] == ["z" * MAX_EVENT_TEXT + note]


async def test_a_value_json_cannot_hold_is_stored_as_text(traces: TraceStore, make_trace: Make) -> None:
    when = datetime(2026, 1, 1)
    await traces.save(make_trace(0, events=[{"type": "odd", "when": when}]))
    assert (await traces.get("trace-0")).events == [{"type": "odd", "when": str(when)}]


async def test_attach_message_makes_the_trace_findable_by_that_message(traces: TraceStore, make_trace: Make) -> None:
    await traces.save(make_trace(0))
    await traces.attach_message("trace-0", "1180000000000000001")
    found = await traces.by_message("1180000000000000001")
    assert found is not None and found.trace_id == "trace-0"
    assert found.message_id == "1180000000000000001"


async def test_attach_message_to_an_unknown_trace_raises_key_error(traces: TraceStore) -> None:
    with pytest.raises(KeyError, match="missing"):
        await traces.attach_message("missing", "1")


async def test_last_for_gives_the_newest_trace_of_that_user_in_that_channel(traces: TraceStore, make_trace: Make) -> None:
    await traces.save(make_trace(3))
    await traces.save(make_trace(1))
    await traces.save(make_trace(9, channel_id="200"))
    await traces.save(make_trace(8, user_id="43"))
    assert (await traces.last_for("42", "100")).trace_id == "trace-3"
    assert (await traces.last_for("42", "200")).trace_id == "trace-9"
    assert (await traces.last_for("43", "100")).trace_id == "trace-8"
    assert await traces.last_for("43", "200") is None


async def test_saving_a_trace_id_twice_is_refused_and_keeps_the_first(traces: TraceStore, make_trace: Make) -> None:
    await traces.save(make_trace(0))
    with pytest.raises(ValueError, match="already stored"):
        await traces.save(make_trace(0, answer="different"))
    assert (await traces.get("trace-0")).answer == "answer 0"


async def test_buffer_and_trace_are_written_together_or_not_at_all(
    db: Database, make_trace: Make, make_message: Callable[..., BufferedMessage]
) -> None:
    buffer, traces = ChannelBuffer(db), TraceStore(db)
    await traces.save(make_trace(0))
    with pytest.raises(ValueError, match="already stored"):
        async with db.transaction():
            await buffer.append(make_message(0, content="question"))
            await buffer.append(make_message(1, role="assistant", content="answer"))
            await traces.save(make_trace(0))  # clashes: the whole turn must vanish
    assert await buffer.recent("100") == []

    async with db.transaction():
        await buffer.append(make_message(0, content="question"))
        await traces.save(make_trace(1))
    assert [m.content for m in await buffer.recent("100")] == ["question"]
    assert await traces.get("trace-1") is not None


@pytest.mark.parametrize(
    "text",
    ["", "a" * 100_000, "\u202e\u200b\u05e9\u05dc\u05d5\u05dd", "nul\x00", "'); DROP TABLE traces; --"],
    ids=["empty", "100kb", "rtl-zero-width", "nul", "sql"],
)
async def test_question_answer_and_events_keep_any_text(traces: TraceStore, make_trace: Make, text: str) -> None:
    rec = make_trace(0, question=text, answer=text, events=[{"type": "final_answer", "answer": text}])
    await traces.save(rec)
    assert await traces.get("trace-0") == rec


@pytest.mark.parametrize("ident", ["console", "not-a-snowflake", "ünï", "1' OR '1'='1"])
async def test_ids_need_not_be_snowflakes(traces: TraceStore, make_trace: Make, ident: str) -> None:
    await traces.save(make_trace(0, trace_id=ident, user_id=ident, channel_id=ident, message_id=ident))
    assert (await traces.by_message(ident)).trace_id == ident
    assert (await traces.last_for(ident, ident)).trace_id == ident


@pytest.mark.parametrize(
    ("fields", "error", "names"),
    [
        ({"trace_id": ""}, ValueError, "trace_id"),
        ({"user_id": 42}, TypeError, "user_id"),
        ({"guild_id": " "}, ValueError, "guild_id"),
        ({"steps": -1}, ValueError, "steps"),
        ({"prompt_tokens": "12"}, TypeError, "prompt_tokens"),
        ({"completion_tokens": True}, TypeError, "completion_tokens"),
        ({"elapsed_ms": math.nan}, ValueError, "elapsed_ms"),
        ({"events": "not a list"}, TypeError, "events"),
        ({"events": [1, 2]}, TypeError, "events"),
        ({"answer": None}, TypeError, "answer"),
        ({"created_at": datetime(2026, 1, 1)}, ValueError, "timezone-aware"),
    ],
)
async def test_malformed_records_are_refused_naming_the_field(
    traces: TraceStore, make_trace: Make, fields: dict, error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        await traces.save(make_trace(0, **fields))
    assert await traces.get(fields.get("trace_id") or "trace-0") is None


async def test_traces_survive_close_and_reopen(db_path, make_trace: Make) -> None:
    async with Database.open(db_path) as db:
        await TraceStore(db).save(make_trace(0, message_id="5"))
    async with Database.open(db_path) as db:
        assert (await TraceStore(db).by_message("5")).trace_id == "trace-0"


@pytest.mark.parametrize(
    ("sql", "index"),
    [
        (BY_MESSAGE_SQL, "traces_message"),
        (LAST_FOR_SQL, "traces_user_channel"),
        (PRUNE_SQL, "traces_time"),
    ],
    ids=["by_message", "last_for", "prune"],
)
async def test_lookups_use_their_index(db: Database, sql: str, index: str) -> None:
    plan = await db.fetchall("EXPLAIN QUERY PLAN " + sql, ("1",) * sql.count("?"))
    assert any(index in row["detail"] for row in plan), [row["detail"] for row in plan]


async def test_every_index_of_the_traces_serves_one_of_its_lookups(db: Database) -> None:
    rows = await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'traces'"
                             " AND sql IS NOT NULL")  # not the primary key's own
    assert {row["name"] for row in rows} == {"traces_message", "traces_user_channel", "traces_time"}
