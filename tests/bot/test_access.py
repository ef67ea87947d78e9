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


def test_dms_follow_allow_dms_only() -> None:
    assert not AccessPolicy.from_lists(allow_dms=False).allows(DM)
    assert AccessPolicy.from_lists(guilds=["2"], channels=["7"], roles=["8"]).allows(DM)
