"""Per-server settings without Discord: the catalogue of LLM_MODELS, how values are checked,
how a channel's values override its server's, the SQLite store (migration 4) that keeps each
guild's rows apart and logs who changed what, and the memory and cooldown values on the turn
path (a real Runtime against the fake model)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.settings.config import ConfigError, load_settings
from bot.settings.model_catalog import ModelEntry, model_for_turn, parse_models
from bot.settings.place import PERSONA_MAX_CHARS, InvalidSetting, SettingRules, resolve
from bot.process.runtime import Runtime
from memory.stores.database import Database
from memory.stores.guild_settings import GuildSettingsStore, StoredSetting
from memory.stores.migrations import SCHEMA_VERSION
from tests.bot.conftest import ALICE, ask, system_text
from tests.fakes.openai_server import FakeOpenAI

GUILD, OTHER = "100000000000000001", "100000000000000002"
CHANNEL, THREAD, ELSEWHERE = "300000000000000001", "300000000000000009", "300000000000000002"
WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _rules(**overrides: object) -> SettingRules:
    catalog = parse_models('[{"name": "big", "vision": true}]', {}, "small")
    options = {"tool_names": lambda: ["calculator", "web_search"], "mcp_servers": ["files"],
               "operator_global_memory": False, **overrides}
    return SettingRules(catalog, **options)  # type: ignore[arg-type]


def _row(channel: str | None, key: str, value: object) -> StoredSetting:
    return StoredSetting(GUILD, channel, key, value, "1", WHEN)  # type: ignore[arg-type]


# ------------------------------------------------------------------ LLM_MODELS


def test_llm_models_lists_entries_and_the_default_model_is_always_allowed() -> None:
    catalog = parse_models('[{"name": "vl", "base_url": "http://127.0.0.1:9/v1/", "api_key_env": "VL_KEY", '
                           '"vision": true}, {"name": "small", "vision": true}]', {"VL_KEY": "sk-secret"}, "small")
    assert catalog.names() == ["small", "vl"]
    assert catalog.get("vl") == ModelEntry("vl", "http://127.0.0.1:9/v1", "VL_KEY", True)
    assert catalog.default.vision and catalog.key_for(catalog.get("vl"), "http://x/v1", "other") == "sk-secret"  # type: ignore[arg-type]
    assert "sk-secret" not in repr(catalog)
    assert model_for_turn(catalog, "vl").name == "vl"
    assert model_for_turn(catalog, "removed-since") is catalog.default
    assert model_for_turn(catalog, None) is catalog.default


@pytest.mark.parametrize(("raw", "expected"), [
    ("[{", "LLM_MODELS is not valid JSON"),
    ('{"name": "x"}', "LLM_MODELS must be a JSON array"),
    ('[{"name": ""}]', 'LLM_MODELS entry 1 needs a "name"'),
    ('[{"name": "a"}, {"name": "b", "colour": 1}]', "LLM_MODELS entry 2 ('b') has unknown key(s) colour"),
    ('[{"name": "a", "base_url": "ftp://x"}]', "LLM_MODELS entry 1 ('a'): base_url is not a valid http(s) URL"),
    ('[{"name": "a", "api_key_env": "UNSET_KEY"}]', "LLM_MODELS entry 1 ('a'): api_key_env names UNSET_KEY, which is not set"),
    ('[{"name": "a", "vision": "yes"}]', "LLM_MODELS entry 1 ('a'): vision must be true or false"),
    ('[{"name": "a"}, {"name": "a"}]', "LLM_MODELS entry 2 ('a') repeats a name"),
    ('[{"name": "m", "base_url": "http://x"}]', "LLM_MODELS entry 1 ('m') is LLM_MODEL"),
])
def test_a_bad_llm_models_entry_stops_start_up_with_one_line_naming_it(raw: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"LLM_MODEL": "m", "LLM_MODELS": raw})
    assert str(caught.value).startswith(expected) and "\n" not in str(caught.value)


def test_admin_user_ids_and_the_content_intent_are_read_from_the_environment() -> None:
    s = load_settings({"ADMIN_USER_IDS": "1, 2", "BUFFER_ALL_MESSAGES": "true"})
    assert s.admin_user_ids == {"1", "2"} and s.message_content_intent
    assert not load_settings({}).message_content_intent
    with pytest.raises(ConfigError, match="ADMIN_USER_IDS"):
        load_settings({"ADMIN_USER_IDS": "me"})


# ------------------------------------------------------------------ checking values


@pytest.mark.parametrize(("key", "raw", "message"), [
    ("model", "gpt-9", "Unknown model 'gpt-9'. Choose one of: small, big."),
    ("cooldown", "soon", "Cooldown must be a number of seconds"),
    ("cooldown", "-1", "Cooldown must be between 0 and 3600 seconds."),
    ("cooldown", "nan", "Cooldown must be between 0 and 3600 seconds."),
    ("memory", "everywhere", "Memory must be one of: server, off, global."),
    ("memory", "global", "The operator keeps memories per server"),
    ("free_response", "maybe", "free-response must be on or off"),
    ("persona", "x" * (PERSONA_MAX_CHARS + 1), f"The persona is {PERSONA_MAX_CHARS + 1} characters"),
    ("base_url", "http://evil", "Unknown setting 'base_url'"),
])
def test_an_invalid_value_is_refused_with_a_short_sentence(key: str, raw: str, message: str) -> None:
    with pytest.raises(InvalidSetting) as caught:
        _rules().parse(key, raw)
    assert str(caught.value).startswith(message) and len(str(caught.value)) < 300


def test_valid_values_are_stored_typed() -> None:
    rules = _rules(operator_global_memory=True)
    assert rules.parse("model", " big ") == "big"
    assert rules.parse("cooldown", "2.5") == 2.5
    assert rules.parse("auto_thread", "ON") is True
    assert rules.parse("memory", "Global") == "global"


def test_tools_are_known_built_ins_or_tools_of_a_configured_mcp_server() -> None:
    rules = _rules()
    assert rules.tool_key("web_search") == "tool:web_search"
    assert rules.tool_key("files__read_text_file") == "tool:files__read_text_file"  # its server may be down
    for name in ("shell", "github__create_issue", "files__"):
        with pytest.raises(InvalidSetting, match="Unknown tool"):
            rules.tool_key(name)


# ------------------------------------------------------------------ precedence


def test_a_channel_value_overrides_the_servers_and_other_channels_do_not_count() -> None:
    rows = [_row(None, "persona", "server persona"), _row(None, "cooldown", 10.0),
            _row(None, "tool:web_search", False), _row(CHANNEL, "persona", "channel persona"),
            _row(CHANNEL, "tool:web_search", True), _row(ELSEWHERE, "free_response", True),
            _row(THREAD, "bot_thread", True)]
    here = resolve(rows, (CHANNEL,))
    assert here.persona == "channel persona" and here.cooldown_s == 10.0
    assert here.tools_off == frozenset() and not here.free_response and not here.bot_thread
    assert here.sources == {"persona": "channel", "cooldown": "server", "tool:web_search": "channel"}
    in_thread = resolve(rows, (CHANNEL, THREAD))
    assert in_thread.persona == "channel persona" and in_thread.bot_thread
    assert resolve(rows, (ELSEWHERE,)).tools_off == {"web_search"}


# ------------------------------------------------------------------ the store


async def test_the_store_keeps_guilds_apart_logs_who_changed_what_and_resets(tmp_path: Path) -> None:
    async with Database.open(tmp_path / "bot.sqlite3") as db:
        assert await db.schema_version() == SCHEMA_VERSION
        store = GuildSettingsStore(db)
        await store.put(GUILD, None, "persona", "a pirate", "alice", WHEN)
        await store.put(GUILD, CHANNEL, "cooldown", 5.0, "alice", WHEN)
        await store.put(GUILD, CHANNEL, "cooldown", 7.0, "bob", WHEN)
        await store.put(OTHER, ELSEWHERE, "auto_thread", True, "carol", WHEN)
        ours = await store.for_guild(GUILD)
        assert [(r.channel_id, r.key, r.value, r.updated_by) for r in ours] == [
            (None, "persona", "a pirate", "alice"), (CHANNEL, "cooldown", 7.0, "bob")]
        assert await store.clear(GUILD, ELSEWHERE, None, "mallory", WHEN) == 0  # another guild's channel
        assert [r.key for r in await store.for_guild(OTHER)] == ["auto_thread"]
        assert await store.clear(GUILD, CHANNEL, None, "alice", WHEN) == 1
        log = await store.history(GUILD)
        assert [(c.key, c.value, c.actor_id) for c in log] == [
            ("cooldown", None, "alice"), ("cooldown", 7.0, "bob"), ("cooldown", 5.0, "alice"),
            ("persona", "a pirate", "alice")]
        assert [c.actor_id for c in await store.history(OTHER)] == ["carol"]


# ------------------------------------------------------------------ on the turn path


async def test_memory_off_for_a_server_neither_recalls_nor_remembers_there(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: noted"
    await runtime.places.set_value(GUILD, None, "memory", "off", ALICE)
    result = await runtime.pipeline.handle(ask("my cat is called Whiskers", guild=GUILD))
    assert result.ok and "recall_memory" not in system_text(fake.requests[-1])
    assert await runtime.services.memory.memory_items(ALICE, GUILD) == []
    assert len(await runtime.buffer.recent("300000000000000001")) == 2  # the conversation is kept
    await runtime.pipeline.handle(ask("my dog is called Rex", guild=OTHER))
    assert {h.text for h in await runtime.services.memory.memory_items(ALICE, OTHER)} == {"my dog is called Rex", "noted"}


async def test_a_servers_cooldown_replaces_the_operators(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: ok"
    await runtime.places.set_value(GUILD, None, "cooldown", "600", ALICE)
    first = await runtime.pipeline.handle(ask("one", guild=GUILD))
    again = await runtime.pipeline.handle(ask("two", guild=GUILD))
    elsewhere = await runtime.pipeline.handle(ask("three", guild=OTHER))
    assert (first.ok, again.outcome, elsewhere.ok) == (True, "cooldown", True)


# ------------------------------------------------------------------ the operator's floor


def test_a_cooldown_below_the_operators_is_refused_and_one_above_it_is_kept() -> None:
    rules = _rules(cooldown_floor_s=30.0)
    for raw in ("0", "29.9"):
        with pytest.raises(InvalidSetting, match=r"^Cooldown must be between 30 seconds \(the operator's minimum\)"):
            rules.parse("cooldown", raw)
    assert rules.parse("cooldown", "30") == 30.0 and rules.parse("cooldown", "120") == 120.0


def test_an_operator_floor_above_the_usual_maximum_is_itself_allowed() -> None:
    assert _rules(cooldown_floor_s=7200.0).parse("cooldown", "7200") == 7200.0


async def test_a_server_cannot_lower_the_operators_cooldown_even_with_a_value_stored_before(
        make_runtime: Callable[..., Runtime], fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: ok"
    async with make_runtime(USER_COOLDOWN_S="600") as runtime:
        with pytest.raises(InvalidSetting):
            await runtime.places.set_value(GUILD, None, "cooldown", "0", ALICE)
        # a value stored while the operator's floor was lower (or by an older version) is lifted
        await GuildSettingsStore(runtime.db).put(GUILD, None, "cooldown", 0.0, ALICE, WHEN)
        await runtime.places.load()
        assert runtime.places.for_place(GUILD, ("300000000000000001",)).cooldown_s == 0.0
        first = await runtime.pipeline.handle(ask("one", guild=GUILD))
        again = await runtime.pipeline.handle(ask("two", guild=GUILD))
    assert (first.ok, again.outcome) == (True, "cooldown")
