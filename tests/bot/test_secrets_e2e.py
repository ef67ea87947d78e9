"""The bot's secrets stay in the bot, tried by the real start path: `python -m bot run` against
the fake Discord and model, with an MCP stdio server (the SDK-built test server) that reads
/proc/<parent>/environ and its siblings' (the Chroma worker) when the model calls its tool.
The secrets come from the environment and from systemd credentials ($CREDENTIALS_DIRECTORY).

Run as root (CI), the bot starts with an empty capability bounding set, as the unit's
`CapabilityBoundingSet=` gives it: a process holding CAP_SYS_PTRACE reads any process's
environment, dumpable or not."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from bench.chaos_world import drop_capabilities
import pytest

from tests.bot.test_console import child_env
from tests.bot.test_mcp_e2e import write_config
from tests.bot.test_shutdown import EXIT_WAIT_S, bot_env, sigterm_after
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.mcp_http import stdio_entry
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)

OPENAI_KEY = "sk-main-7Hq2Lw9X"
FAR_KEY = "sk-far-3Nb8Rt5Y"
EMBEDDING_KEY = "sk-embed-5Vd1Pc6Z"
CHROMA_TOKEN = "chroma-tok-9Kx4Mn2J"
STALE_TOKEN = "stale-discord-token-1Aa"
async def _start_bot(env: dict[str, str], cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "run", cwd=cwd, env=child_env(env),
        preexec_fn=drop_capabilities if os.geteuid() == 0 else None,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _run_and_probe(dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> tuple[dict, str]:
    """Start the bot, have the model call probe__family_environ, stop the bot; the server's
    report and the bot's stderr."""
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "DISCORD_TOKEN").write_text(dc.token + "\n")  # the credential wins over the env's
    (credentials / "EMBEDDING_API_KEY").write_text(EMBEDDING_KEY)
    report = tmp_path / "family.json"
    config = write_config(tmp_path, probe=stdio_entry(env={"FAMILY_REPORT": str(report)}))
    models = json.dumps([{"name": "far-model", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "FAR_KEY"}])
    env = bot_env(fake, tmp_path / "data", DISCORD_TOKEN=STALE_TOKEN, DISCORD_API_BASE_URL=dc.api_base,
                  OPENAI_API_KEY=OPENAI_KEY, FAR_KEY=FAR_KEY, LLM_MODELS=models,
                  CHROMA_AUTH_TOKEN=CHROMA_TOKEN, CREDENTIALS_DIRECTORY=str(credentials), MCP_CONFIG=config)
    fake.reply("Thought: look around.\nAction: probe__family_environ\nAction Input: {}")
    fake.reply("Final Answer: looked")
    guild = dc.add_guild("Guild")
    channel = dc.add_channel(guild, "general")
    alice = dc.add_member(guild, name="alice")
    async def answered() -> None:
        await dc.wait_until_connected(timeout=EXIT_WAIT_S)
        await dc.user_says(channel, alice, "what do you see?", mention_bot=True)
        await dc.wait_for(lambda: any(m.content == "looked" for m in dc.bot_messages(channel)),
                          timeout=EXIT_WAIT_S)

    err = await sigterm_after(await _start_bot(env, tmp_path), answered())
    return json.loads(report.read_text()), err


async def test_an_mcp_server_reads_no_secret_of_the_bot_or_its_other_children(
        dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> None:
    seen, err = await _run_and_probe(dc, fake, tmp_path)
    # the bot is non-dumpable: /proc/<pid>/environ (the environment it was started with) is closed
    assert seen["parent"].startswith("(unreadable: PermissionError")
    # its other children (the Chroma worker) started after the secrets left os.environ
    assert seen["siblings"] and any("DATA_DIR=" in text for text in seen["siblings"].values())
    everything = json.dumps(seen) + json.dumps(fake.requests)
    for secret in (OPENAI_KEY, FAR_KEY, EMBEDDING_KEY, CHROMA_TOKEN, dc.token, STALE_TOKEN):
        assert secret not in everything
    assert "Traceback" not in err


async def test_a_credential_wins_over_the_environment_with_one_warning_line(
        dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> None:
    _, err = await _run_and_probe(dc, fake, tmp_path)  # connected: the credential's token was used
    warned = [line for line in err.splitlines() if "DISCORD_TOKEN" in line]
    assert len(warned) == 1 and "the credential is used" in warned[0]
    assert sum("MCP stdio servers (probe)" in line and "credential files" in line for line in err.splitlines()) == 1
    assert STALE_TOKEN not in err and dc.token not in err
