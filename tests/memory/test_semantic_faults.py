"""Bad input and broken storage for the per-user semantic memory: clear errors, nothing lost."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.semantic.chroma_backend import ChromaStore
from memory.semantic.embeddings import LocalEmbedder
from memory.errors import ConfigError, StoreUnavailable
from memory.semantic import MAX_TEXT_CHARS, UserMemory, open_user_memory, scope_for
from tests.memory.fixtures_semantic import Clock, RecordingEmbedder

pytestmark = pytest.mark.slow  # loads the embedding model: handed out first (tests/conftest.py)

ALICE = "111111111111111111"
GUILD = scope_for("900000000000000000")


@pytest.fixture
async def keyword_memory(tmp_path: Path, local_embedder: LocalEmbedder, clock: Clock) -> AsyncIterator[UserMemory]:
    """Keyword-only search: an item is found only when it shares a word with the query."""
    mem = open_user_memory(str(tmp_path / "kw"), embedder=local_embedder, clock=clock, search_mode="keyword")
    yield mem
    await mem.close()


@pytest.mark.parametrize("text", ["", "   ", "\n\t  \n", "\u200b\u200b", "\u200f\u202e \u2066"])
async def test_blank_or_invisible_text_is_refused_and_nothing_is_stored(memory: UserMemory, text: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        await memory.add(ALICE, text, scope=GUILD)

    assert await memory.list(ALICE) == []


@pytest.mark.parametrize("query", ["", "   ", "\u200b", "\t\n"])
async def test_a_blank_query_finds_nothing(memory: UserMemory, query: str) -> None:
    await memory.add(ALICE, "something worth remembering", scope=GUILD)

    assert await memory.search(ALICE, query, scope=GUILD) == []


async def test_a_100_kb_text_is_truncated_at_a_word_boundary_and_marked(keyword_memory: UserMemory) -> None:
    memory = keyword_memory
    words = ["alpha"] * 10 + ["filler"] * 16_000 + ["omegaword"]
    text = " ".join(words)
    assert len(text) >= 100_000

    await memory.add(ALICE, text, scope=GUILD)

    [item] = await memory.list(ALICE)
    assert len(item.text) <= MAX_TEXT_CHARS
    assert text.startswith(item.text) and not item.text.endswith(" ")
    assert item.text.split(" ")[-1] == "filler"
    assert item.metadata["truncated_from"] == len(text)
    assert [h.id for h in await memory.search(ALICE, "alpha", scope=GUILD)] == [item.id]
    assert await memory.search(ALICE, "omegaword", scope=GUILD) == []


async def test_a_text_at_the_limit_is_kept_whole(memory: UserMemory) -> None:
    text = ("x" * 99 + " ") * (MAX_TEXT_CHARS // 100)
    text = text[:MAX_TEXT_CHARS]

    await memory.add(ALICE, text, scope=GUILD)

    [item] = await memory.list(ALICE)
    assert item.text == text
    assert "truncated_from" not in item.metadata


async def test_zero_width_characters_do_not_hide_a_word(keyword_memory: UserMemory) -> None:
    text = "I grow to\u200bma\u200btoes and basil on my bal\u200dcony"
    await keyword_memory.add(ALICE, text, scope=GUILD)
    await keyword_memory.add(ALICE, "I grow potatoes in the garden", scope=GUILD)

    hits = await keyword_memory.search(ALICE, "tomatoes", scope=GUILD)

    assert [h.text for h in hits] == [text]


async def test_invisible_characters_are_not_embedded_but_are_stored(local_embedder: LocalEmbedder,
                                                                    tmp_path: Path) -> None:
    recorder = RecordingEmbedder(local_embedder)
    hidden = "My\u200b favourite\u200b band is\u2060 \u202eRadiohead"
    async with open_user_memory(str(tmp_path / "c"), embedder=recorder) as mem:
        await mem.add(ALICE, hidden, scope=GUILD)

        assert recorder.texts == ["My favourite band is Radiohead"]
        assert [h.text for h in await mem.list(ALICE)] == [hidden]


async def test_right_to_left_text_is_stored_as_given_and_found(keyword_memory: UserMemory) -> None:
    memory = keyword_memory
    hebrew = "\u202bאני אוהב פלאפל עם טחינה\u202c"
    arabic = "أنا أحب القهوة العربية"
    await memory.add(ALICE, hebrew, scope="dm")
    await memory.add(ALICE, arabic, scope="dm")

    assert (await memory.search(ALICE, "פלאפל", scope="dm"))[0].text == hebrew
    assert (await memory.search(ALICE, "القهوة", scope="dm"))[0].text == arabic


async def test_a_user_id_that_is_not_a_snowflake_works_and_stays_separate(memory: UserMemory) -> None:
    await memory.add("console-user", "I prefer tea over coffee", scope="dm")
    await memory.add(ALICE, "I prefer coffee over tea", scope="dm")

    hits = await memory.search("console-user", "tea or coffee", k=10)

    assert [h.text for h in hits] == ["I prefer tea over coffee"]
    assert await memory.forget("console-user") == 1


@pytest.mark.parametrize("user_id", ["", "   ", "a\x00b", "line\nbreak", "x" * 129])
async def test_an_unusable_user_id_is_refused_by_every_method(memory: UserMemory, user_id: str) -> None:
    for call in (memory.add(user_id, "text"), memory.search(user_id, "text"), memory.list(user_id),
                 memory.forget(user_id), memory.delete(user_id, "id"), memory.export(user_id)):
        with pytest.raises(ValueError, match="user_id"):
            await call


async def test_a_user_id_that_is_not_a_string_is_refused(memory: UserMemory) -> None:
    with pytest.raises(TypeError, match="user_id"):
        await memory.add(111111111111111111, "text")  # type: ignore[arg-type]


async def test_a_scope_not_made_by_scope_for_is_refused(memory: UserMemory) -> None:
    with pytest.raises(ValueError, match="scope_for"):
        await memory.add(ALICE, "text", scope="900000000000000000")
    with pytest.raises(ValueError, match="scope_for"):
        await memory.search(ALICE, "text", scope="guild:")


@pytest.mark.parametrize(("metadata", "problem"), [
    ({"tags": ["a", "b"]}, "nested list"),
    ({"where": {"channel": "1"}}, "nested dict"),
    ({"obj": object()}, "object"),
    ({"score": math.nan}, "finite"),
    ({"user_id": "222"}, "reserved"),
    ({"scope": "dm"}, "reserved"),
    ({"created_at": "yesterday"}, "epoch seconds"),
    ({"": "x"}, "non-empty"),
])
async def test_unusable_metadata_is_refused_by_name_and_nothing_is_stored(memory: UserMemory, metadata: dict,
                                                                         problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        await memory.add(ALICE, "text", metadata, GUILD)

    assert await memory.list(ALICE) == []


async def test_metadata_values_are_kept_and_datetimes_become_iso_text(memory: UserMemory) -> None:
    when = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    await memory.add(ALICE, "text", {"channel_id": "5", "n": 3, "w": 0.5, "ok": True, "at": when, "gone": None},
                     GUILD)

    [item] = await memory.list(ALICE)

    assert {k: item.metadata[k] for k in ("channel_id", "n", "w", "ok", "at")} == {
        "channel_id": "5", "n": 3, "w": 0.5, "ok": True, "at": when.isoformat()}
    assert "gone" not in item.metadata


def test_a_chroma_path_that_is_a_file_is_unavailable_naming_the_path(local_embedder: LocalEmbedder,
                                                                     tmp_path: Path) -> None:
    path = tmp_path / "not-a-folder"
    path.write_text("I am a file")

    with pytest.raises(StoreUnavailable, match="not-a-folder"):
        open_user_memory(str(path), embedder=local_embedder)


def test_a_chroma_path_below_a_file_is_unavailable_naming_the_path(local_embedder: LocalEmbedder,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")

    with pytest.raises(StoreUnavailable, match="file/chroma"):
        open_user_memory(str(tmp_path / "file" / "chroma"), embedder=local_embedder)


def test_a_collection_made_with_another_model_is_refused(local_embedder: LocalEmbedder, tmp_path: Path) -> None:
    ChromaStore.open(path=tmp_path / "c", host=None, port=None, collection="user_memory",
                     embedder_name="text-embedding-3-small", dimension=1536)

    with pytest.raises(ConfigError, match="text-embedding-3-small"):
        open_user_memory(str(tmp_path / "c"), embedder=local_embedder)


def test_no_folder_and_no_server_is_a_config_error(local_embedder: LocalEmbedder) -> None:
    with pytest.raises(ConfigError, match="CHROMA_HOST"):
        open_user_memory(None, embedder=local_embedder)
