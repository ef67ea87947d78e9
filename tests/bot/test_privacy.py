"""bot.turn.privacy.MemoryPolicy: one rule for where a person's items are stored, recalled and
managed; what was said in private is never in a public reply's reach."""

from __future__ import annotations

import pytest

from bot.turn.privacy import DM_SCOPE, MemoryPolicy, Reach, is_private_scope

G = "100000000000000001"
PLACE = MemoryPolicy(operator_global=False)
GLOBAL = MemoryPolicy(operator_global=True)


def test_a_public_turn_stores_in_its_server_and_a_private_one_in_its_servers_private_scope() -> None:
    assert PLACE.store_scope(G, private=False) == f"guild:{G}"
    assert PLACE.store_scope(G, private=True) == f"guild:{G}:private"
    assert PLACE.store_scope(None, private=False) == DM_SCOPE == PLACE.store_scope(None, private=True)
    assert PLACE.visibility(G, False) == "public"
    assert PLACE.visibility(G, True) == PLACE.visibility(None, False) == "private"


def test_private_scopes_are_the_dm_the_private_ones_and_anything_unreadable() -> None:
    assert not is_private_scope(f"guild:{G}")
    assert is_private_scope(f"guild:{G}:private") and is_private_scope("dm")
    assert is_private_scope(None) and is_private_scope(7)  # missing or malformed: never public


@pytest.mark.parametrize("policy", [PLACE, GLOBAL], ids=["place", "global"])
@pytest.mark.parametrize("setting", [None, "server", "global"])
def test_no_public_reach_ever_holds_a_private_item(policy: MemoryPolicy, setting: str | None) -> None:
    reach = policy.recall(G, False, setting)
    if reach.scopes is None:
        assert reach.public_only
    else:
        assert not any(is_private_scope(scope) for scope in reach.scopes)


def test_a_private_answer_recalls_its_servers_public_and_private_items() -> None:
    assert PLACE.recall(G, True, None) == Reach((f"guild:{G}", f"guild:{G}:private"))
    assert PLACE.recall(G, False, None) == Reach((f"guild:{G}",))
    assert PLACE.recall(None, False, None) == Reach((DM_SCOPE,))


def test_global_widens_public_answers_to_public_items_and_private_answers_to_everything() -> None:
    assert GLOBAL.recall(G, False, None) == Reach(None, public_only=True)
    assert GLOBAL.recall(G, True, None) == Reach(None)
    assert GLOBAL.recall(None, False, None) == Reach(None)


def test_a_server_set_to_memory_server_keeps_recall_and_management_in_the_server_under_global() -> None:
    assert GLOBAL.recall(G, False, "server") == Reach((f"guild:{G}",))
    managed = GLOBAL.manage(G, "server")
    assert managed.scopes == (f"guild:{G}", f"guild:{G}:private") and managed.guild_id == G
    assert GLOBAL.manage(G, None).everywhere  # the operator's global, not narrowed


def test_a_stored_global_setting_does_not_widen_past_an_operator_who_keeps_places() -> None:
    assert PLACE.recall(G, False, "global") == Reach((f"guild:{G}",))
    assert not PLACE.manage(G, "global").everywhere


def test_memory_off_neither_recalls_nor_stores() -> None:
    assert not PLACE.remembers("off") and PLACE.remembers(None) and PLACE.remembers("server")


def test_a_dm_manages_everything_and_a_server_only_its_own() -> None:
    assert PLACE.manage(None, None) == Reach(None)
    assert PLACE.manage(G, None) == Reach((f"guild:{G}", f"guild:{G}:private"), guild_id=G)


def test_a_malformed_guild_id_is_refused_rather_than_scoped() -> None:
    with pytest.raises(ValueError):
        PLACE.store_scope("has space", private=False)
