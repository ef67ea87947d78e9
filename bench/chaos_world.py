"""The chaos bench's world: the real `python -m bot run` process against loopback fakes, and
the checks made on what it left on disk.

`World` starts FakeDiscord (REST + gateway), FlakyModel (chat + embeddings) and FakeSearxNG
(the web_search tool's far end), one guild with channels and people, and `BotProcess`, the
bot as a child process with DISCORD_API_BASE_URL, OPENAI_BASE_URL, EMBEDDING_BASE_URL and
SEARXNG_URL at those fakes, its DATA_DIR in the run's folder and its stderr in a log file.
The checks read the SQLite file with the sqlite3 module and the Chroma folder with chromadb
in a child process (never while the bot runs).

Part of bench/: drives the product from outside, as an operator's machine would.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import sqlite3
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from tests.fakes.discord_server import FakeDiscord, FakeMessage
from tests.fakes.flaky_model import FlakyModel
from tests.fakes.searxng import FakeSearxNG

__all__ = ["BotProcess", "DiskState", "MemoryState", "World", "read_disk", "read_memory", "tree_pids"]

REPO = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "probe"   # bench/probe/sitecustomize.py: diagnostics
READY_TIMEOUT_S = 120.0
EXIT_TIMEOUT_S = 90.0
ORPHAN_TIMEOUT_S = 30.0    # a killed bot's children (the Chroma worker) must be gone by then
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
PR_CAPBSET_DROP = 24  # <linux/prctl.h>
CAP_LAST = 63  # above the kernel's last capability: dropping those fails harmlessly


def drop_capabilities() -> None:
    """In a child before exec: empty the capability bounding set, so that a root process keeps
    no capability, as under the unit's `CapabilityBoundingSet=` (a process holding
    CAP_SYS_PTRACE reads any other's environment and memory, dumpable or not)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(CAP_LAST + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)


def tree_pids(pid: int) -> list[int]:
    """`pid` and all its descendants (Linux /proc)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError, ValueError):
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class BotProcess:
    """One `python -m bot run` child; restartable, its stderr appended to `log_path`.

    A kill also watches the bot's own children (the Chroma worker process and its
    multiprocessing helper): each still running ORPHAN_TIMEOUT_S after the kill is counted in
    `orphans` (and then killed, so that the next start does not share the folder with it).
    """

    def __init__(self, env: Mapping[str, str], cwd: Path, log_path: Path, *, tree: Path = REPO,
                 probe: bool = False) -> None:
        self.env = dict(env)
        self.tree = tree
        self.probe = probe             # bench/probe on the PYTHONPATH (its variables in `env`)
        self.cwd = cwd
        self.log_path = log_path
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0
        self.kills = 0
        self.crashes: list[int] = []   # exit codes of exits nobody asked for
        self.children_seen = 0         # the bot's child processes when it was killed
        self.orphans = 0               # of those, still running ORPHAN_TIMEOUT_S after the kill
        self.without_capabilities = False  # started as the unit starts it (drop_capabilities), as root
        self._killed_children: list[int] = []

    async def start(self, dc: FakeDiscord) -> None:
        """Start the bot and wait until it has identified on the gateway."""
        identified = len(dc.identifies)
        paths = (str(PROBE) if self.probe else "", str(self.tree), os.environ.get("PYTHONPATH", ""))
        pythonpath = os.pathsep.join(p for p in paths if p)
        env = {**{k: v for k, v in os.environ.items() if k in KEPT_ENV}, **self.env,
               "PYTHONPATH": pythonpath, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
        with open(self.log_path, "ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "run", cwd=self.cwd, env=env,
                preexec_fn=drop_capabilities if self.without_capabilities and os.geteuid() == 0 else None,
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log)
        self.starts += 1
        try:
            await dc.wait_for(lambda: len(dc.identifies) > identified and self._connected(dc)
                              or self.proc is None or self.proc.returncode is not None,
                              timeout=READY_TIMEOUT_S)
        except TimeoutError:
            raise RuntimeError(f"the bot did not connect within {READY_TIMEOUT_S:g} s; see {self.log_path}") from None
        if self.proc.returncode is not None:
            self.crashes.append(self.proc.returncode)
            raise RuntimeError(f"the bot exited at start-up ({self.proc.returncode}); see {self.log_path}")

    @staticmethod
    def _connected(dc: FakeDiscord) -> bool:
        return any(s.conn is not None for s in dc._sessions.values())

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def kill_now(self) -> None:
        """SIGKILL at once (from a hook or a timer): no handler, no flush, as a power cut."""
        if self.running:
            assert self.proc is not None
            self._killed_children = tree_pids(self.proc.pid)[1:]
            self.proc.send_signal(signal.SIGKILL)

    async def wait_killed(self) -> None:
        assert self.proc is not None
        code = await asyncio.wait_for(self.proc.wait(), EXIT_TIMEOUT_S)
        if code == -signal.SIGKILL:
            self.kills += 1
        else:
            self.crashes.append(code)
        children, self._killed_children = self._killed_children, []
        self.children_seen += len(children)
        deadline = asyncio.get_running_loop().time() + ORPHAN_TIMEOUT_S
        while any(_alive(p) for p in children) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
        for pid in filter(_alive, children):
            self.orphans += 1
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    async def kill_and_reap(self) -> None:
        """On the way out, however the run ended: the bot killed if it runs, and the children of
        its last kill (its Chroma worker) killed too if they outlived it."""
        if self.running:
            self.kill_now()
        if self.proc is not None and (self.proc.returncode is None or self._killed_children):
            await self.wait_killed()

    async def stop(self) -> int:
        """SIGTERM (graceful shutdown) and the exit code; non-zero counts as a crash."""
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(self.proc.wait(), EXIT_TIMEOUT_S)
        if code != 0:
            self.crashes.append(code)
        return code

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class World:
    """The fakes, one guild, `channels` text channels with `people` members each."""

    root: Path
    channels: int = 1
    people: int = 2
    extra_env: dict[str, str] = field(default_factory=dict)
    bot_tree: Path = REPO          # the checkout whose bot/ runs (another one: a baseline)
    probe: bool = False            # bench/probe's diagnostics in the bot (BotProcess)
    dc: FakeDiscord = field(init=False)
    model: FlakyModel = field(init=False)
    search: FakeSearxNG = field(init=False)
    bot: BotProcess = field(init=False)
    guild: str = field(init=False)
    channel_ids: list[str] = field(init=False, default_factory=list)
    members: dict[str, list[str]] = field(init=False, default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    async def __aenter__(self) -> World:
        self.root.mkdir(parents=True, exist_ok=True)
        self.dc = await FakeDiscord().__aenter__()
        self.model = await FlakyModel().start()
        self.search = await FakeSearxNG().start()
        self.guild = self.dc.add_guild("Chaos")
        for n in range(self.channels):
            channel = self.dc.add_channel(self.guild, f"room-{n}")
            self.channel_ids.append(channel)
            self.members[channel] = [self.dc.add_member(self.guild, name=f"p{n}-{k}") for k in range(self.people)]
        env = {"DISCORD_TOKEN": self.dc.token, "DISCORD_API_BASE_URL": self.dc.api_base,
               "LLM_MODEL": "fake-model", "OPENAI_BASE_URL": self.model.base_url, "OPENAI_API_KEY": "k",
               "EMBEDDING_BACKEND": "openai", "EMBEDDING_BASE_URL": self.model.base_url,
               "EMBEDDING_MODEL": "fake-embed", "SEARXNG_URL": self.search.base_url,
               "DATA_DIR": str(self.data_dir), "USER_COOLDOWN_S": "0", "LLM_MAX_RETRIES": "0",
               "LOG_LEVEL": "INFO", **self.extra_env}
        self.bot = BotProcess(env, self.root, self.root / "bot.log", tree=self.bot_tree, probe=self.probe)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.bot.kill_and_reap()
        await self.search.close()
        await self.model.close()
        await self.dc.__aexit__(exc_type, exc, tb)

    def answers_to(self, question: FakeMessage) -> list[FakeMessage]:
        """The bot's messages replying to `question` (its answer, possibly in chunks)."""
        return [m for m in self.dc.bot_messages(question.channel_id) if m.reference_id == question.id]

    def pings(self) -> int:
        """Bot messages that would ping @everyone/@here or a role."""
        return sum(1 for m in self.dc.bot_messages() if m.pings.everyone or m.pings.roles)


@dataclass(frozen=True)
class DiskState:
    """What the SQLite file holds after a stop or a kill."""

    integrity: str                 # "ok" or SQLite's first complaint
    torn_turns: int                # buffer rows not in whole (question, answer) pairs
    turns: dict[str, list[str]]    # channel -> the questions stored, in buffer order
    answered_traces: set[str]      # trace ids of answered turns
    trace_users: dict[str, str]    # trace id -> who asked
    unsettled_writes: int          # announced memory writes not settled (memory.stores.write_log; 0 without one)


def read_disk(data_dir: Path) -> DiskState:
    """Open the bot's SQLite file (the bot stopped) and read its state."""
    conn = sqlite3.connect(data_dir / "bot.sqlite3")
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        rows = conn.execute("SELECT channel_id, role, content, created_at_us FROM buffer_messages"
                            " ORDER BY id").fetchall()
        answered = {r[0] for r in conn.execute("SELECT trace_id FROM traces WHERE outcome = 'answered'")}
        trace_users = dict(conn.execute("SELECT trace_id, user_id FROM traces").fetchall())
        has_log = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_writes'").fetchone()
        unsettled = conn.execute("SELECT count(*) FROM memory_writes").fetchone()[0] if has_log else 0
    finally:
        conn.close()
    by_channel: dict[str, list[tuple[str, str, int]]] = {}
    for channel, role, content, at in rows:
        by_channel.setdefault(channel, []).append((role, content, at))
    torn = 0
    turns: dict[str, list[str]] = {}
    for channel, msgs in by_channel.items():
        i = 0
        while i < len(msgs):
            pair = msgs[i:i + 2]
            if len(pair) == 2 and pair[0][0] == "user" and pair[1][0] == "assistant" and pair[0][2] == pair[1][2]:
                turns.setdefault(channel, []).append(pair[0][1])
                i += 2
            else:
                torn += 1
                i += 1
    return DiskState(integrity, torn, turns, answered, trace_users, unsettled)


@dataclass(frozen=True)
class MemoryState:
    """The semantic memory's items by the trace they came from."""

    items_by_trace: dict[str, int]   # trace id -> items of any kind with it
    exchanges: dict[str, int]        # trace id -> exchange items with it
    owners: dict[str, set[str]]      # trace id -> the user ids its items are filed under
    texts: list[tuple[str, str]] = field(default_factory=list)  # (user id, document and metadata as JSON) of each item

    def leaks(self, disk: DiskState) -> int:
        """All of `leaks_by_kind`."""
        return sum(self.leaks_by_kind(disk).values())

    def leaks_by_kind(self, disk: DiskState) -> dict[str, int]:
        """Turns whose items are there without the answered turn, answered turns without
        exactly one exchange item, and turns with items filed under someone other than the
        person who asked."""
        return {"items without their turn": sum(1 for t in self.items_by_trace if t not in disk.answered_traces),
                "turns without their item": sum(1 for t in disk.answered_traces if self.exchanges.get(t) != 1),
                "items of another person": sum(1 for t, users in self.owners.items()
                                               if users != {disk.trace_users.get(t)})}


_READ_CHROMA = """
import json, sys, chromadb
from chromadb.config import Settings
settings = Settings(anonymized_telemetry=False)
if sys.argv[1].startswith("http://"):
    host, port = sys.argv[1][len("http://"):].rsplit(":", 1)
    client = chromadb.HttpClient(host=host, port=int(port), settings=settings)
else:
    client = chromadb.PersistentClient(path=sys.argv[1], settings=settings)
names = [c if isinstance(c, str) else c.name for c in client.list_collections()]
got = client.get_collection(sys.argv[2]).get(include=["metadatas", "documents"]) if sys.argv[2] in names else {}
print(json.dumps([[m.get("trace_id"), m.get("kind"), m.get("user_id"), d, json.dumps(m)]
                  for m, d in zip(got.get("metadatas") or [], got.get("documents") or []) if m]))
"""


async def read_memory(data_dir: Path, collection: str = "user_memory", *,
                      server_url: str | None = None) -> MemoryState:
    """Read every item of the embedded Chroma folder (or of the Chroma server at `server_url`,
    "http://host:port") in a child process."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _READ_CHROMA, server_url or str(data_dir / "chroma"), collection,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    out, err = await asyncio.wait_for(proc.communicate(), EXIT_TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"reading the Chroma folder failed: {err.decode()[-2000:]}")
    items: Counter[str] = Counter()
    exchanges: Counter[str] = Counter()
    owners: dict[str, set[str]] = {}
    texts: list[tuple[str, str]] = []
    for trace_id, kind, user_id, document, metadata in json.loads(out):
        items[trace_id] += 1
        exchanges[trace_id] += kind == "exchange"
        owners.setdefault(trace_id, set()).add(user_id)
        texts.append((user_id, f"{document}\n{metadata}"))
    return MemoryState(dict(items), dict(exchanges), owners, texts)
