"""The operator's allow and block lists decide who the bot serves."""

from __future__ import annotations

from bot.discord_app.access import AccessPolicy, Where

GUILD = Where(user_id="10", guild_id="1", channel_id="100", parent_ids=("900",), role_ids=("50",))
DM = Where(user_id="10", guild_id=None, channel_id="200")


def test_empty_policy_allows_guilds_and_dms() -> None:
    policy = AccessPolicy()
    assert policy.allows(GUILD)
    assert policy.allows(DM)


def test_blocked_user_is_refused_everywhere() -> None:
    policy = AccessPolicy.from_lists(blocked=["10"])
    assert not policy.allows(GUILD)
    assert not policy.allows(DM)


def test_guild_outside_the_allow_list_is_refused() -> None:
    assert not AccessPolicy.from_lists(guilds=["2"]).allows(GUILD)
    assert AccessPolicy.from_lists(guilds=["1", "2"]).allows(GUILD)


def test_channel_allowed_directly() -> None:
    assert AccessPolicy.from_lists(channels=["100"]).allows(GUILD)
    assert not AccessPolicy.from_lists(channels=["101"]).allows(GUILD)


def test_category_id_allows_its_channels() -> None:
    assert AccessPolicy.from_lists(channels=["900"]).allows(GUILD)


def test_role_allow_list_needs_one_of_the_roles() -> None:
    assert AccessPolicy.from_lists(roles=["50"]).allows(GUILD)
    assert not AccessPolicy.from_lists(roles=["51"]).allows(GUILD)


def test_without_allow_lists_dms_follow_allow_dms() -> None:
    assert not AccessPolicy.from_lists(allow_dms=False).allows(DM)
    assert AccessPolicy.from_lists(blocked=["11"]).allows(DM)


def _dm(*memberships: tuple[str, tuple[str, ...]]) -> Where:
    return Where(user_id="10", guild_id=None, channel_id="200", memberships=memberships)


def test_with_a_guild_list_a_dm_is_answered_only_for_a_member_of_a_listed_guild() -> None:
    policy = AccessPolicy.from_lists(guilds=["1"])
    assert not policy.allows(DM)  # a stranger: no membership found
    assert not policy.allows(_dm(("2", ())))
    assert policy.allows(_dm(("2", ()), ("1", ())))


def test_with_a_role_list_a_dm_needs_a_listed_role_in_some_guild() -> None:
    policy = AccessPolicy.from_lists(roles=["50"])
    assert not policy.allows(_dm(("1", ("51",))))
    assert policy.allows(_dm(("1", ("51",)), ("3", ("50",))))


def test_with_guild_and_role_lists_the_role_must_be_held_in_a_listed_guild() -> None:
    policy = AccessPolicy.from_lists(guilds=["1"], roles=["50"])
    assert not policy.allows(_dm(("3", ("50",)), ("1", ())))
    assert policy.allows(_dm(("1", ("50",))))


def test_with_a_channel_list_no_dm_is_answered_and_allow_dms_off_wins() -> None:
    assert not AccessPolicy.from_lists(channels=["7"]).allows(_dm(("1", ("50",))))
    assert not AccessPolicy.from_lists(guilds=["1"], allow_dms=False).allows(_dm(("1", ())))


def test_a_blocked_member_of_a_listed_guild_is_refused_in_dms() -> None:
    assert not AccessPolicy.from_lists(guilds=["1"], blocked=["10"]).allows(_dm(("1", ())))


def test_the_guilds_looked_up_for_a_dm_are_the_listed_ones_or_those_with_a_listed_role() -> None:
    bot_guilds = {"1": frozenset({"50"}), "2": frozenset({"60"}), "3": frozenset()}
    assert AccessPolicy.from_lists(guilds=["1", "9"]).dm_guilds_to_check(bot_guilds) == ["1"]
    assert AccessPolicy.from_lists(roles=["60"]).dm_guilds_to_check(bot_guilds) == ["2"]
    assert AccessPolicy.from_lists().dm_guilds_to_check(bot_guilds) == []
    assert AccessPolicy.from_lists(guilds=["1"], channels=["7"]).dm_guilds_to_check(bot_guilds) == []
