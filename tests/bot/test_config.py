"""bot.settings.config.load_settings: every variable's parsing, defaults and one-line errors."""

from __future__ import annotations

import pytest

from bot.settings.config import DISCORD_DEFAULT_API_BASE_URL, ConfigError, Settings, load_settings

BASE = {"LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


def load(**extra: str) -> Settings:
    return load_settings({**BASE, **extra})


def error_of(**extra: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(**extra)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_defaults_when_nothing_is_set() -> None:
    s = load()
    assert s.discord_token is None and not s.has_discord_token
    assert s.dev_guild_id is None
    assert s.discord_api_base_url is None and s.discord_api == DISCORD_DEFAULT_API_BASE_URL
    assert s.max_concurrent_turns == 4
    assert s.max_context_tokens == 6000
    assert s.buffer_window == 40
    assert s.user_cooldown_s == 3.0
    assert s.buffer_all_messages is False
    assert s.allowed_guild_ids == frozenset() and s.allowed_channel_ids == frozenset()
    assert s.allowed_role_ids == frozenset() and s.blocked_user_ids == frozenset()
    assert s.allow_dms is True
    assert s.attachment_max_bytes == 100_000
    assert s.log_level == "INFO"
    assert s.shard_count is None and s.shard_ids is None
    assert s.turn_timeout_s == 180.0


def test_settings_are_frozen() -> None:
    s = load()
    with pytest.raises(AttributeError):
        s.max_context_tokens = 1  # type: ignore[misc]


def test_agent_and_memory_settings_are_composed() -> None:
    s = load(AGENT_MAX_STEPS="5", DATA_DIR="/tmp/x-bot-data", MEMORY_SCOPE="global")
    assert s.agent.max_steps == 5 and s.agent.model == "m"
    assert str(s.memory.data_dir) == "/tmp/x-bot-data" and s.memory.memory_scope == "global"


def test_agent_config_error_becomes_bot_config_error_with_same_text() -> None:
    assert error_of(LLM_PROTOCOL="smoke") == "LLM_PROTOCOL must be one of text, native: 'smoke'"


def test_memory_config_error_becomes_bot_config_error_with_same_text() -> None:
    assert error_of(CHROMA_PORT="http") == "CHROMA_PORT is not a whole number: 'http'"


def test_discord_token_is_kept_and_never_shown_in_repr() -> None:
    s = load(DISCORD_TOKEN="abc.def.ghi")
    assert s.discord_token == "abc.def.ghi" and s.has_discord_token
    assert "abc.def" not in repr(s)


def test_discord_token_with_spaces_is_refused_without_echoing_it() -> None:
    message = error_of(DISCORD_TOKEN="secret part2")
    assert "DISCORD_TOKEN" in message and "secret" not in message


def test_empty_values_count_as_unset() -> None:
    s = load(DISCORD_TOKEN="  ", MAX_CONCURRENT_TURNS="", ALLOWED_GUILD_IDS=" ")
    assert s.discord_token is None and s.max_concurrent_turns == 4
    assert s.allowed_guild_ids == frozenset()


def test_dev_guild_id_must_be_a_snowflake() -> None:
    assert load(DEV_GUILD_ID="123456789012345678").dev_guild_id == "123456789012345678"
    assert "DEV_GUILD_ID" in error_of(DEV_GUILD_ID="my-guild")


def test_discord_api_base_url_is_validated_and_trailing_slash_dropped() -> None:
    assert load(DISCORD_API_BASE_URL="http://127.0.0.1:5000/api/v10/").discord_api_base_url == (
        "http://127.0.0.1:5000/api/v10"
    )
    assert "DISCORD_API_BASE_URL" in error_of(DISCORD_API_BASE_URL="discord.com")


@pytest.mark.parametrize(
    ("name", "good", "attr", "bad"),
    [
        ("MAX_CONCURRENT_TURNS", "8", "max_concurrent_turns", ["0", "x", "1.5"]),
        ("MAX_CONTEXT_TOKENS", "8000", "max_context_tokens", ["10", "many"]),
        ("BUFFER_WINDOW", "0", "buffer_window", ["-1", "ten"]),
        ("ATTACHMENT_MAX_BYTES", "2048", "attachment_max_bytes", ["-5", "1kb"]),
    ],
)
def test_whole_number_settings(name: str, good: str, attr: str, bad: list[str]) -> None:
    assert getattr(load(**{name: good}), attr) == int(good)
    for value in bad:
        message = error_of(**{name: value})
        assert message.startswith(name) and repr(value) in message


def test_user_cooldown_accepts_fractions_and_zero() -> None:
    assert load(USER_COOLDOWN_S="0.5").user_cooldown_s == 0.5
    assert load(USER_COOLDOWN_S="0").user_cooldown_s == 0.0
    for bad in ("-1", "soon", "nan", "inf"):
        assert error_of(USER_COOLDOWN_S=bad).startswith("USER_COOLDOWN_S")


def test_turn_timeout_must_be_positive() -> None:
    assert load(TURN_TIMEOUT_S="30").turn_timeout_s == 30.0
    for bad in ("0", "-3", "x"):
        assert error_of(TURN_TIMEOUT_S=bad).startswith("TURN_TIMEOUT_S")


@pytest.mark.parametrize("name,attr", [("BUFFER_ALL_MESSAGES", "buffer_all_messages"),
                                       ("ALLOW_DMS", "allow_dms")])
def test_boolean_settings(name: str, attr: str) -> None:
    for raw in ("true", "TRUE", "1", "yes", "on"):
        assert getattr(load(**{name: raw}), attr) is True
    for raw in ("false", "0", "no", "Off"):
        assert getattr(load(**{name: raw}), attr) is False
    assert error_of(**{name: "maybe"}) == f"{name} must be true or false: 'maybe'"


@pytest.mark.parametrize("name,attr", [
    ("ALLOWED_GUILD_IDS", "allowed_guild_ids"),
    ("ALLOWED_CHANNEL_IDS", "allowed_channel_ids"),
    ("ALLOWED_ROLE_IDS", "allowed_role_ids"),
    ("BLOCKED_USER_IDS", "blocked_user_ids"),
])
def test_snowflake_lists(name: str, attr: str) -> None:
    s = load(**{name: "111, 222,,333 "})
    assert getattr(s, attr) == frozenset({"111", "222", "333"})
    message = error_of(**{name: "111,abc"})
    assert message.startswith(name) and "'abc'" in message


def test_log_level_is_case_insensitive_and_checked() -> None:
    assert load(LOG_LEVEL="debug").log_level == "DEBUG"
    assert error_of(LOG_LEVEL="loud").startswith("LOG_LEVEL must be one of")


def test_shards() -> None:
    s = load(SHARD_COUNT="4", SHARD_IDS="2, 0,2")
    assert s.shard_count == 4 and s.shard_ids == (0, 2)
    assert load(SHARD_COUNT="2").shard_ids is None


@pytest.mark.parametrize(("env", "needle"), [
    ({"SHARD_IDS": "0"}, "SHARD_IDS needs SHARD_COUNT"),
    ({"SHARD_COUNT": "0"}, "SHARD_COUNT must be"),
    ({"SHARD_COUNT": "2", "SHARD_IDS": "2"}, "SHARD_IDS has 2"),
    ({"SHARD_COUNT": "2", "SHARD_IDS": "a"}, "SHARD_IDS must be"),
    ({"SHARD_COUNT": "2", "SHARD_IDS": ","}, "SHARD_IDS lists no shard ids"),
])
def test_bad_shard_settings(env: dict[str, str], needle: str) -> None:
    assert needle in error_of(**env)
