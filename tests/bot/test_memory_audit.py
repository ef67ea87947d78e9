"""bot.memory_audit: the numbered entries of /memory show, older ones marked, recalled memories, message links."""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence

import pytest
from rich.console import Console

from bot import services
from bot.console.chat import CONSOLE_USER, ConsoleChat
from bot.process.runtime import Runtime
from memory.semantic import MemoryHit
from memory.stores.traces import Recalled
from bot.discord_app.memory_audit_views import entry_pages
from bot.discord_app.views import excerpt
from bot.memory_audit import AuditEntry, audit_entries, message_link, recalled_memories
from tests.bot.conftest import ALICE

GUILD, CHANNEL = "100000000000000001", "300000000000000001"


def hit(item_id: str, text: str, created: float, kind: str = "fact", trace: str | None = None,
        scope: str = f"guild:{GUILD}", **extra: object) -> MemoryHit:
    meta = {"kind": kind, "created_at": created, "scope": scope, "channel_id": CHANNEL, **extra}
    if trace is not None:
        meta["trace_id"] = trace
    return MemoryHit(item_id, text, 0.0, meta)


def test_an_exchange_is_one_entry_with_both_items_and_the_persons_message() -> None:
    entries = audit_entries([hit("a", "I adopted a cat", 1.0, "exchange", "t1", message_id="900"),
                             hit("b", "Congratulations!", 1.0, "reply", "t1")])
    assert entries == [AuditEntry(1, "exchange", "you: I adopted a cat / me: Congratulations!", 1.0, GUILD, CHANNEL,
                                  "900", False, ("a", "b"))]


def test_a_fact_of_the_same_turn_is_its_own_entry_and_a_reply_whose_message_is_gone_stands_alone() -> None:
    entries = audit_entries([hit("a", "hi  there", 1.0, "exchange", "t1"), hit("b", "Their cat is Miso", 2.0, "fact", "t1"),
                             hit("c", "hello!", 1.0, "reply", "t1"),
                             hit("d", "and you?", 3.0, "reply", "t2")])  # its message item is gone (forgotten)
    assert [(e.kind, e.text, e.item_ids) for e in entries] == [
        ("exchange", "you: hi there / me: hello!", ("a", "c")), ("fact", "Their cat is Miso", ("b",)),
        ("exchange", "me: and you?", ("d",))]


def test_exchange_items_without_a_turn_stay_apart_and_no_items_make_no_entries() -> None:
    entries = audit_entries([hit("a", "one", 1.0, "exchange"), hit("b", "two", 2.0, "exchange", "")])
    assert [(e.kind, e.text) for e in entries] == [("exchange", "one"), ("exchange", "two")]
    assert audit_entries([]) == []


def test_entries_are_numbered_in_order_with_their_place() -> None:
    entries = audit_entries([hit("a", "one", 1.0), hit("b", "two", 2.0, scope="dm"),
                             hit("c", "three", 3.0, scope=f"guild:{GUILD}:private")])
    assert [(e.number, e.text, e.guild_id, e.private) for e in entries] == [
        (1, "one", GUILD, False), (2, "two", None, True), (3, "three", GUILD, True)]


def test_an_older_entry_on_the_same_subject_is_marked_older_and_both_are_kept() -> None:
    entries = audit_entries([hit("a", "I live in Lyon", 1.0), hit("b", "I like green tea", 2.0),
                             hit("c", "I moved from Lyon to Berlin", 3.0)])
    assert [(e.text, e.older) for e in entries] == [
        ("I live in Lyon", True), ("I like green tea", False), ("I moved from Lyon to Berlin", False)]


def test_a_word_said_in_many_entries_marks_nothing_older() -> None:
    entries = audit_entries([hit(str(n), f"went to the gym on day {n}", float(n)) for n in range(6)])
    assert not any(e.older for e in entries)


def test_my_answer_alone_does_not_make_an_entry_older() -> None:
    entries = audit_entries([hit("a", "I painted a lake", 1.0, "exchange", "t1"),
                             hit("b", "The sunset sounds lovely", 1.0, "reply", "t1"),
                             hit("c", "Any idea for dinner?", 2.0, "exchange", "t2"),
                             hit("d", "Maybe a sunset picnic by the lake", 2.0, "reply", "t2")])
    assert [e.older for e in entries] == [False, False]


def test_no_items_no_entries_and_malformed_metadata_is_shown_plainly() -> None:
    assert audit_entries([]) == []
    odd = MemoryHit("x", "  spaced\n text ", 0.0, {"created_at": "yesterday", "scope": 5, "kind": None})
    [entry] = audit_entries([odd])
    assert (entry.kind, entry.text, entry.created_at, entry.guild_id, entry.private) == (
        "item", "spaced text", None, None, True)  # an unknown scope counts as private


def test_recalled_memories_keep_the_order_and_show_a_forgotten_one_as_gone() -> None:
    kept = hit("a", "I live in Lyon", 1.0)
    shown = recalled_memories([Recalled("a", 1), Recalled("gone", 2), Recalled("a", 1, "tool 1")], {"a": kept})
    assert [(m.rank, m.search, m.hit) for m in shown] == [(1, "prompt", kept), (2, "prompt", None), (1, "tool 1", kept)]


def test_message_link_names_the_guild_or_a_dm_and_needs_both_ids() -> None:
    assert message_link(GUILD, CHANNEL, "9") == f"https://discord.com/channels/{GUILD}/{CHANNEL}/9"
    assert message_link(None, CHANNEL, "9") == f"https://discord.com/channels/@me/{CHANNEL}/9"
    assert message_link(GUILD, CHANNEL, None) is None and message_link(GUILD, None, "9") is None


def test_a_page_of_memory_show_holds_at_most_25_entries_for_its_select_menu() -> None:
    entries = audit_entries([hit(str(n), f"fact {n}", float(n)) for n in range(60)])
    pages = entry_pages(entries)
    assert [len(chosen) for _, chosen in pages] == [25, 25, 10]
    assert [e.number for _, chosen in pages for e in chosen] == list(range(1, 61))
    assert all(text.count("\n") + 1 == len(chosen) for text, chosen in pages)


def test_an_excerpt_is_one_line_cut_to_its_limit_with_an_ellipsis() -> None:
    assert excerpt("  call\n the\tbank  ", 100) == "call the bank"
    assert excerpt("call the bank today", 10) == "call the…"  # the space before the cut is dropped
    assert len(excerpt("word " * 5000, 100)) == 100
    assert excerpt("", 10) == ""


def test_a_huge_entry_is_cut_to_one_page() -> None:
    [(text, chosen)] = entry_pages(audit_entries([hit("x", "word " * 5000, 1.0)]))
    assert len(text) <= 2000 and len(chosen) == 1


@pytest.fixture
def audit_threads(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """The threads the services build /memory show's entries on, one per build."""
    threads: list[threading.Thread] = []

    def spied(hits: Sequence[MemoryHit]) -> list[AuditEntry]:
        threads.append(threading.current_thread())
        return audit_entries(hits)

    monkeypatch.setattr(services, "audit_entries", spied)
    return threads


async def test_memory_show_builds_its_entries_off_the_event_loop(runtime: Runtime,
                                                                  audit_threads: list[threading.Thread]) -> None:
    await runtime.user_memory.add(ALICE, "I moved to Lisbon", {"kind": "fact"}, scope=f"guild:{GUILD}")

    entries = await runtime.services.memory.memory_entries(ALICE, GUILD)

    assert [e.text for e in entries] == ["I moved to Lisbon"]
    assert audit_threads and audit_threads[0] is not threading.main_thread()


async def test_the_consoles_memory_show_builds_its_entries_off_the_event_loop(
        runtime: Runtime, audit_threads: list[threading.Thread]) -> None:
    await runtime.user_memory.add(CONSOLE_USER, "I moved to Lisbon", {"kind": "fact"}, scope=f"guild:{GUILD}")
    lines = iter(["/memory\n", "/quit\n"])
    out = io.StringIO()

    assert await ConsoleChat(runtime, Console(file=out, width=100), readline=lambda: next(lines, "")).run() == 0

    assert "[fact] I moved to Lisbon" in out.getvalue() and "1 remembered (1 item(s)):" in out.getvalue()
    assert audit_threads and audit_threads[0] is not threading.main_thread()
