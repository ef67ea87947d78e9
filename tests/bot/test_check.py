"""`python -m bot check`: one line per check against the loopback fakes (FakeOpenAI, FakeDiscord),
a real Chroma server and a down one; exit 0 only when all pass; secrets never printed, and a
placeholder key (`ollama`, `x`) changes nothing that is printed."""

from __future__ import annotations

import asyncio
import io
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.process.check import _Redactor, run_checks
from tests.bot.test_console import child_env
from tests.fakes.chroma_server import ChromaServer, free_port
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts `python -m bot check` processes and a Chroma server: handed out first (tests/conftest.py)

DISCORD_SECRET = "Qz7Kd9Vw3Xp1Lm5Nb8Rt2Yh6Jf4Gc0SsEeUuIiOoAa"
OPENAI_SECRET = "sk-Wv4Tg8Hn2Mk6Pq0Zr3Xy7Bj5Lc9Df1"


@pytest.fixture
async def dc() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(token=DISCORD_SECRET) as server:
        yield server


def check_env(fake: FakeOpenAI, data: Path, **extra: str) -> dict[str, str]:
    return {"LLM_MODEL": "fake-model", "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": OPENAI_SECRET,
            "DATA_DIR": str(data), "EMBEDDING_BACKEND": "openai", "EMBEDDING_BASE_URL": fake.base_url,
            "EMBEDDING_MODEL": "fake-embed", "CHROMA_PROCESS": "false", **extra}


async def check(env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """The checks of `python -m bot check`, run in this process: in a thread, since run_checks
    drives its own event loop while the fakes serve on this one. The import of the stack is
    paid once per test session instead of once per test; check_process runs the real command
    where its exit code, stderr or a fresh process is what is tested."""
    out = io.StringIO()
    code = await asyncio.to_thread(run_checks, child_env(env), out)
    return code, out.getvalue(), ""


async def check_process(env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "check", cwd=cwd, env=child_env(env),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def line(out: str, name: str) -> str:
    found = [ln for ln in out.splitlines() if ln[6:].startswith(name)]
    assert found, f"no {name!r} line in:\n{out}"
    return found[0]


def fix_after(out: str, name: str) -> str:
    lines = out.splitlines()
    index = lines.index(line(out, name))
    assert index + 1 < len(lines) and "fix: " in lines[index + 1], out
    return lines[index + 1]


async def test_everything_reachable_passes_with_one_ok_line_per_check(
        fake: FakeOpenAI, dc: FakeDiscord, tmp_path: Path) -> None:
    code, out, _ = await check_process(check_env(fake, tmp_path / "data", DISCORD_TOKEN=DISCORD_SECRET,
                                                 DISCORD_API_BASE_URL=dc.api_base, CHROMA_PROCESS="true"),
                                       tmp_path)  # the embedded Chroma opened in its worker, as the bot does
    assert code == 0, out
    for name in ("configuration", "data folder", "SQLite schema", "Chroma", "embeddings",
                 "model endpoint", "Discord token"):
        assert line(out, name).startswith("ok"), out
    assert "logged in as ReActBot" in line(out, "Discord token")
    assert out.strip().endswith("all checks passed")


async def test_the_model_check_is_a_one_token_request(fake: FakeOpenAI, tmp_path: Path) -> None:
    await check(check_env(fake, tmp_path / "data"), tmp_path)
    assert len(fake.requests) == 1
    assert fake.requests[0]["max_tokens"] == 1 and fake.requests[0]["model"] == "fake-model"


async def test_each_line_is_printed_as_its_check_completes_not_all_at_the_end(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.delay(1.0).reply("ok")  # the model check is in flight for a second
    out = io.StringIO()
    checking = asyncio.create_task(asyncio.to_thread(run_checks, child_env(check_env(fake, tmp_path / "data")), out))
    while not fake.requests and not checking.done():  # until the model check has sent its request
        await asyncio.sleep(0.01)
    shown = out.getvalue()
    assert await checking == 0
    for name in ("configuration", "data folder", "SQLite schema", "Chroma", "embeddings"):
        assert line(shown, name).startswith("ok"), shown
    assert "model endpoint" not in shown and "all checks passed" not in shown


async def test_without_a_discord_token_the_discord_check_is_skipped_as_console_mode(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    code, out, _ = await check(check_env(fake, tmp_path / "data"), tmp_path)
    assert code == 0, out
    assert line(out, "Discord token").startswith("skip") and "not set: console mode" in out


async def test_a_token_discord_refuses_fails_with_the_fix(fake: FakeOpenAI, dc: FakeDiscord, tmp_path: Path) -> None:
    code, out, _ = await check(check_env(fake, tmp_path / "data", DISCORD_TOKEN="Wq0Zx9Kv2Fh7Lq4Jt6",
                                         DISCORD_API_BASE_URL=dc.api_base), tmp_path)
    assert code == 1
    assert line(out, "Discord token").startswith("fail") and "401" in line(out, "Discord token")
    assert "DISCORD_TOKEN" in fix_after(out, "Discord token")


async def test_a_refused_api_key_fails_the_model_check(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.error(401, body={"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
    code, out, _ = await check(check_env(fake, tmp_path / "data"), tmp_path)
    assert code == 1
    assert line(out, "model endpoint").startswith("fail")
    assert "OPENAI_API_KEY" in fix_after(out, "model endpoint")


async def test_an_unknown_model_fails_with_the_model_fix(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.error(404, body={"error": {"message": "model not found"}})
    code, out, _ = await check(check_env(fake, tmp_path / "data"), tmp_path)
    assert code == 1 and "LLM_MODEL" in fix_after(out, "model endpoint")


async def test_a_model_endpoint_that_is_down_fails_and_names_the_address(fake: FakeOpenAI, tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}/v1"
    code, out, _ = await check(check_env(fake, tmp_path / "data", OPENAI_BASE_URL=down), tmp_path)
    assert code == 1
    assert line(out, "model endpoint").startswith("fail") and down in line(out, "model endpoint")
    assert "OPENAI_BASE_URL" in fix_after(out, "model endpoint")


async def test_a_real_chroma_server_passes_its_heartbeat(fake: FakeOpenAI, tmp_path: Path) -> None:
    with ChromaServer(tmp_path / "chroma-server") as server:
        code, out, _ = await check(check_env(fake, tmp_path / "data", CHROMA_HOST=server.host,
                                             CHROMA_PORT=str(server.port)), tmp_path)
    assert code == 0, out
    assert line(out, "Chroma").startswith("ok") and f"{server.host}:{server.port}" in line(out, "Chroma")


async def test_a_chroma_server_that_is_down_fails_with_the_fix(fake: FakeOpenAI, tmp_path: Path) -> None:
    port = free_port()
    code, out, _ = await check(check_env(fake, tmp_path / "data", CHROMA_HOST="127.0.0.1",
                                         CHROMA_PORT=str(port)), tmp_path)
    assert code == 1
    assert line(out, "Chroma").startswith("fail") and f"127.0.0.1:{port}" in line(out, "Chroma")
    assert "CHROMA_HOST" in fix_after(out, "Chroma")


async def test_a_memory_built_with_another_embedding_model_fails_the_chroma_check(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    code, out, _ = await check(check_env(fake, tmp_path / "data"), tmp_path)
    assert code == 0 and line(out, "Chroma").startswith("ok"), out
    code, out, _ = await check(check_env(fake, tmp_path / "data", EMBEDDING_MODEL="other-embed"), tmp_path)
    assert code == 1
    assert line(out, "Chroma").startswith("fail") and "fake-embed" in line(out, "Chroma")
    assert "EMBEDDING_MODEL" in fix_after(out, "Chroma")


async def test_a_data_dir_that_cannot_be_created_fails_and_skips_the_stores_in_it(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out, _ = await check(check_env(fake, blocker / "data"), tmp_path)
    assert code == 1
    assert line(out, "data folder").startswith("fail") and "DATA_DIR" in line(out, "data folder")
    assert line(out, "SQLite schema").startswith("skip") and line(out, "Chroma").startswith("skip")


async def test_a_database_of_a_newer_version_fails_the_schema_check(fake: FakeOpenAI, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / "bot.sqlite3")
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    code, out, _ = await check(check_env(fake, data), tmp_path)
    assert code == 1
    assert line(out, "SQLite schema").startswith("fail") and "999" in line(out, "SQLite schema")


async def test_the_embeddings_endpoint_down_fails_the_embeddings_check(fake: FakeOpenAI, tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}/v1"
    code, out, _ = await check(check_env(fake, tmp_path / "data", EMBEDDING_BASE_URL=down), tmp_path)
    assert code == 1
    assert line(out, "embeddings").startswith("fail") and "EMBEDDING_BASE_URL" in fix_after(out, "embeddings")


async def test_the_local_embedding_model_loads_offline(fake: FakeOpenAI, tmp_path: Path) -> None:
    env = check_env(fake, tmp_path / "data", EMBEDDING_BACKEND="local")
    del env["EMBEDDING_MODEL"], env["EMBEDDING_BASE_URL"]
    code, out, _ = await check_process(env, tmp_path)
    assert code == 0, out
    assert "384-dimension" in line(out, "embeddings") and "offline" in line(out, "embeddings")


async def test_a_chroma_process_setting_that_is_not_a_boolean_fails_the_configuration_line(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    code, out, _ = await check(check_env(fake, tmp_path / "data", CHROMA_PROCESS="sometimes"), tmp_path)
    assert code == 1
    assert line(out, "configuration").startswith("fail") and "CHROMA_PROCESS" in line(out, "configuration")


async def test_a_missing_model_setting_is_one_failed_configuration_line(tmp_path: Path) -> None:
    code, out, _ = await check({"DATA_DIR": str(tmp_path / "d")}, tmp_path)
    assert code == 1
    assert line(out, "configuration").startswith("fail") and "LLM_MODEL" in out


def secret_pieces(secret: str, size: int = 4) -> set[str]:
    return {secret[i:i + size] for i in range(len(secret) - size + 1)}


@pytest.mark.parametrize("discord_ok", [True, False])
async def test_no_piece_of_any_secret_is_ever_printed(fake: FakeOpenAI, dc: FakeDiscord, tmp_path: Path,
                                                      discord_ok: bool) -> None:
    # the endpoints echo the secrets back in their error texts, as some servers do
    fake.error(401, body={"error": {"message": f"Incorrect API key provided: {OPENAI_SECRET}"}})
    token = DISCORD_SECRET if discord_ok else DISCORD_SECRET[::-1]
    env = check_env(fake, tmp_path / "data", DISCORD_TOKEN=token, DISCORD_API_BASE_URL=dc.api_base,
                    EMBEDDING_API_KEY="emb-Hq3Vz8Nw1Kx5Rt0Py", LOG_LEVEL="DEBUG")
    code, out, err = await check_process(env, tmp_path)
    assert code == 1
    printed = out + err
    for secret in (OPENAI_SECRET, token, "emb-Hq3Vz8Nw1Kx5Rt0Py"):
        leaked = [piece for piece in secret_pieces(secret) if piece in printed]
        assert leaked == [], f"pieces of a secret printed: {leaked}\n{printed}"


def fix_lines(out: str) -> list[str]:
    return [ln.strip() for ln in out.splitlines() if ln.strip().startswith("fi")]


async def test_a_placeholder_key_leaves_a_model_name_that_contains_it_whole(fake: FakeOpenAI, tmp_path: Path) -> None:
    env = check_env(fake, tmp_path / "data", OPENAI_API_KEY="ollama", LLM_MODEL="ollama-qwen")
    code, out, _ = await check(env, tmp_path)
    assert code == 0, out
    assert f"model ollama-qwen at {fake.base_url}, data in" in line(out, "configuration")
    assert line(out, "model endpoint").endswith(f"ollama-qwen at {fake.base_url} answers")
    assert "[secret]" not in out


async def test_a_one_letter_key_leaves_every_fix_line_whole(fake: FakeOpenAI, dc: FakeDiscord, tmp_path: Path) -> None:
    fake.error(404, body={"error": {"message": "model not found"}})
    env = check_env(fake, tmp_path / "data", OPENAI_API_KEY="x", DISCORD_TOKEN="Wq0Zx9Kv2Fh7Lq4Jt6",
                    DISCORD_API_BASE_URL=dc.api_base, EMBEDDING_BASE_URL=f"http://127.0.0.1:{free_port()}/v1")
    code, out, _ = await check(env, tmp_path)
    assert code == 1
    assert fix_lines(out) == [
        "fix: check EMBEDDING_BASE_URL, EMBEDDING_MODEL and EMBEDDING_API_KEY (or OPENAI_API_KEY), "
        "or use EMBEDDING_BACKEND=local",
        "fix: set LLM_MODEL to a model the endpoint serves (see its /models list)",
        "fix: copy the bot token again from the developer portal (Bot > Reset Token) into DISCORD_TOKEN",
    ]
    assert "[secret]" not in out


async def test_a_real_key_the_model_servers_error_body_echoes_is_blanked_whole(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.error(400, body={"error": {"message": f"Incorrect API key provided: {OPENAI_SECRET}; see your account"}})
    code, out, _ = await check(check_env(fake, tmp_path / "data"), tmp_path)
    assert code == 1
    assert "Incorrect API key provided: [secret]; see your account" in line(out, "model endpoint")
    assert OPENAI_SECRET not in out


async def test_a_discord_token_the_error_message_echoes_is_blanked_whole(
        fake: FakeOpenAI, dc: FakeDiscord, tmp_path: Path) -> None:
    # a relay in front of Discord (DISCORD_API_BASE_URL) that quotes the token it was sent
    dc.inject_error("GET", "/users/@me", 403, body={"code": 50001, "message": f"Bot {DISCORD_SECRET} is not allowed"})
    env = check_env(fake, tmp_path / "data", DISCORD_TOKEN=DISCORD_SECRET, DISCORD_API_BASE_URL=dc.api_base)
    code, out, _ = await check(env, tmp_path)
    assert code == 1
    assert line(out, "Discord token").endswith("Discord answered HTTP 403: Bot [secret] is not allowed")
    assert DISCORD_SECRET not in out


async def test_a_huge_error_text_is_cut_after_the_key_is_blanked_so_no_half_key_is_left(
        fake: FakeOpenAI, tmp_path: Path) -> None:
    # 40 copies, one space apart: before blanking, some copy straddles wherever the text is cut
    fake.error(500, body={"error": {"message": " ".join([OPENAI_SECRET] * 40)}})
    code, out, _ = await check(check_env(fake, tmp_path / "data"), tmp_path)
    assert code == 1
    detail = line(out, "model endpoint")
    assert detail.endswith("...") and len(detail) < 500
    assert [piece for piece in secret_pieces(OPENAI_SECRET, 8) if piece in out] == []


async def test_a_password_in_a_base_url_is_never_printed_however_short(fake: FakeOpenAI, tmp_path: Path) -> None:
    with_password = fake.base_url.replace("http://", "http://bot:hunter2@", 1)
    env = check_env(fake, tmp_path / "data", OPENAI_BASE_URL=with_password)
    code, out, _ = await check(env, tmp_path)
    assert code == 0, out
    shown = fake.base_url.replace("http://", "http://bot:***@", 1)
    assert f"at {shown}," in line(out, "configuration") and f"at {shown} answers" in line(out, "model endpoint")
    assert "hunter2" not in out


KEY_16 = "Zr3Xy7Bj5Lc9Df1Q"


@pytest.mark.parametrize("text", ["fix: set LLM_MODEL", "ollama-qwen", "a x b", "xxxxxxxxxxxxxxx!",
                                  KEY_16[:-1], KEY_16[1:], ""])
def test_short_values_and_pieces_of_keys_are_left_as_they_are(text: str) -> None:
    redact = _Redactor(["x", "ollama", "xxxxxxxxxxxxxxx", KEY_16, ""])  # 15 x's: one short of a key
    assert redact(text) == text


def test_a_whole_key_of_16_characters_or_more_is_blanked_wherever_it_is_quoted() -> None:
    redact = _Redactor([KEY_16, OPENAI_SECRET])
    assert redact(f"{KEY_16}, '{OPENAI_SECRET}' and {KEY_16}") == "[secret], '[secret]' and [secret]"


def test_a_key_inside_a_longer_key_does_not_leave_the_longer_ones_ends() -> None:
    longer = f"org-{KEY_16}-project"
    assert _Redactor([KEY_16, longer])(f"sent {longer}") == "sent [secret]"
