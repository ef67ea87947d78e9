"""memory.stores.reminders: pending reminders survive a reopen, a person's count is held to the
limit even by concurrent adds, an occurrence is closed once (a repeating one moves on, a
one-off goes), a stale close or a cancel by someone else changes nothing, and a forget erases
the person's reminders (everywhere, or in one server)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest

from memory.stores.database import Database
from memory.stores.erasure import PersonErasure
from memory.stores.reminders import NewReminder, ReminderLimitReached, ReminderStore
from tests.memory.conftest import T0

ANN, BEN = "42", "43"
GUILD, OTHER = "900", "901"


def new(user: str = ANN, *, guild: str | None = GUILD, minutes: int = 10, message: str = "call the bank",
        rule: str | None = None) -> NewReminder:
    return NewReminder(user_id=user, display_name="ann", guild_id=guild, channel_id="100", by_dm=guild is None,
                       message=message, ask=False, rule=rule, zone="Europe/Paris",
                       start_local="2026-01-02T04:14:05", due_at=T0 + timedelta(minutes=minutes))


@pytest.fixture
def store(db: Database) -> ReminderStore:
    return ReminderStore(db)


async def test_an_added_reminder_is_listed_with_everything_it_was_given(store: ReminderStore) -> None:
    added = await store.add(new(rule="FREQ=DAILY;BYHOUR=8"), max_pending=25, now=T0)
    [listed] = await store.pending_for(ANN)
    assert listed == added
    assert (listed.message, listed.rule, listed.zone, listed.due_at, listed.guild_id, listed.by_dm) == (
        "call the bank", "FREQ=DAILY;BYHOUR=8", "Europe/Paris", T0 + timedelta(minutes=10), GUILD, False)
    assert listed.prepared is None and listed.created_at == T0


async def test_pending_reminders_survive_closing_and_reopening_the_file(db_path: Path) -> None:
    async with Database.open(db_path) as db:
        added = await ReminderStore(db).add(new(), max_pending=25, now=T0)
        await ReminderStore(db).prepare(added, "prepared words")
    async with Database.open(db_path) as db:
        [again] = await ReminderStore(db).due(T0 + timedelta(hours=1))
    assert again.id == added.id and again.prepared == "prepared words"


async def test_the_limit_refuses_one_more_for_that_person_only(store: ReminderStore) -> None:
    for i in range(3):
        await store.add(new(minutes=i), max_pending=3, now=T0)
    with pytest.raises(ReminderLimitReached, match="at most 3"):
        await store.add(new(), max_pending=3, now=T0)
    await store.add(new(BEN), max_pending=3, now=T0)
    assert len(await store.pending_for(ANN)) == 3


async def test_concurrent_adds_never_pass_the_limit(store: ReminderStore) -> None:
    results = await asyncio.gather(*(store.add(new(minutes=i), max_pending=25, now=T0) for i in range(40)),
                                   return_exceptions=True)
    assert sum(isinstance(r, ReminderLimitReached) for r in results) == 15
    assert len(await store.pending_for(ANN)) == 25


async def test_an_empty_message_is_refused_and_a_huge_or_malformed_one_kept_whole(store: ReminderStore) -> None:
    with pytest.raises(ValueError, match="empty"):
        await store.add(new(message="  \n"), max_pending=25, now=T0)
    huge = "x" * 200_000
    await store.add(new(message=huge), max_pending=25, now=T0)
    await store.add(new(message="bad \ud800 surrogate", minutes=20), max_pending=25, now=T0)
    messages = [r.message for r in await store.pending_for(ANN)]
    assert messages == [huge, "bad \ufffd surrogate"]


async def test_due_lists_only_what_is_due_oldest_first(store: ReminderStore) -> None:
    late = await store.add(new(minutes=5), max_pending=25, now=T0)
    early = await store.add(new(minutes=1), max_pending=25, now=T0)
    await store.add(new(minutes=60), max_pending=25, now=T0)
    assert [r.id for r in await store.due(T0 + timedelta(minutes=5))] == [early.id, late.id]
    assert await store.due(T0) == []
    assert await store.next_due(T0) == T0 + timedelta(minutes=1)
    assert await store.next_due(T0 + timedelta(minutes=5)) == T0 + timedelta(minutes=60)
    assert await store.next_due(T0 + timedelta(minutes=60)) is None


async def test_due_pages_on_after_the_last_one_read_even_between_reminders_due_at_the_same_time(
        store: ReminderStore) -> None:
    ids = [(await store.add(new(minutes=1 + i // 2), max_pending=25, now=T0)).id for i in range(5)]
    now = T0 + timedelta(minutes=5)
    first = await store.due(now, limit=2)
    second = await store.due(now, after=first[-1], limit=2)
    third = await store.due(now, after=second[-1], limit=2)
    assert [r.id for r in first + second + third] == ids
    assert await store.due(now, after=third[-1], limit=2) == []


async def test_closing_a_one_off_deletes_it_and_a_repeating_one_moves_to_its_next_time(store: ReminderStore) -> None:
    once = await store.add(new(), max_pending=25, now=T0)
    daily = await store.add(new(rule="FREQ=DAILY"), max_pending=25, now=T0)
    await store.prepare(daily, "today's words")
    assert await store.close(once, None)
    assert await store.close(daily, daily.due_at + timedelta(days=1))
    [left] = await store.pending_for(ANN)
    assert left.id == daily.id and left.due_at == daily.due_at + timedelta(days=1) and left.prepared is None


async def test_an_occurrence_is_closed_once_and_a_stale_one_changes_nothing(store: ReminderStore) -> None:
    daily = await store.add(new(rule="FREQ=DAILY"), max_pending=25, now=T0)
    assert await store.close(daily, daily.due_at + timedelta(days=1))
    assert not await store.close(daily, daily.due_at + timedelta(days=1))  # the same occurrence again
    assert not await store.prepare(daily, "stale")
    [left] = await store.pending_for(ANN)
    assert left.due_at == daily.due_at + timedelta(days=1) and left.prepared is None


async def test_a_person_cancels_only_their_own(store: ReminderStore) -> None:
    mine = await store.add(new(), max_pending=25, now=T0)
    assert not await store.cancel(BEN, mine.id)
    assert await store.cancel(ANN, mine.id)
    assert not await store.cancel(ANN, mine.id)
    assert await store.pending_for(ANN) == []


async def test_closing_a_cancelled_reminder_does_not_bring_it_back(store: ReminderStore) -> None:
    daily = await store.add(new(rule="FREQ=DAILY"), max_pending=25, now=T0)
    await store.cancel(ANN, daily.id)
    assert not await store.close(daily, daily.due_at + timedelta(days=1))
    assert await store.get(daily.id) is None


async def test_a_time_zone_is_kept_per_person_and_replaced(store: ReminderStore) -> None:
    assert await store.zone(ANN) is None
    await store.set_zone(ANN, "Europe/Paris", now=T0)
    await store.set_zone(ANN, "Asia/Tokyo", now=T0)
    assert (await store.zone(ANN), await store.zone(BEN)) == ("Asia/Tokyo", None)


async def test_forgetting_everywhere_erases_all_the_persons_reminders_only(store: ReminderStore, db: Database) -> None:
    await store.add(new(), max_pending=25, now=T0)
    await store.add(new(guild=None), max_pending=25, now=T0)
    await store.add(new(BEN), max_pending=25, now=T0)
    erased = await PersonErasure(db).erase(ANN)
    assert erased.reminders == 2
    assert await store.pending_for(ANN) == [] and len(await store.pending_for(BEN)) == 1


async def test_forgetting_everywhere_erases_the_persons_time_zone_and_one_server_keeps_it(
        store: ReminderStore, db: Database) -> None:
    await store.set_zone(ANN, "Europe/Paris", now=T0)
    await store.set_zone(BEN, "Asia/Tokyo", now=T0)
    assert (await PersonErasure(db).erase(ANN, GUILD)).time_zones == 0
    assert await store.zone(ANN) == "Europe/Paris"
    assert (await PersonErasure(db).erase(ANN)).time_zones == 1
    assert (await store.zone(ANN), await store.zone(BEN)) == (None, "Asia/Tokyo")


async def test_forgetting_in_one_server_keeps_reminders_set_elsewhere(store: ReminderStore, db: Database) -> None:
    await store.add(new(), max_pending=25, now=T0)
    elsewhere = await store.add(dataclasses.replace(new(), guild_id=OTHER), max_pending=25, now=T0)
    in_dm = await store.add(new(guild=None), max_pending=25, now=T0)
    erased = await PersonErasure(db).erase(ANN, GUILD)
    assert erased.reminders == 1
    assert {r.id for r in await store.pending_for(ANN)} == {elsewhere.id, in_dm.id}
