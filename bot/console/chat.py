"""The console chat: the turn pipeline in a terminal, as one local user in one channel.

Same pipeline and storage as the Discord bot (DATA_DIR), so what is said here is remembered
across restarts. The console is a private place, like a DM: its memory scope is "dm".
Steps show live as they happen (thought, tool, input, observation, time); the answer streams on
an "answer:" line as the model writes it, and is printed whole (as Markdown) only when what
streamed differs from it (a step limit, an answer parsed otherwise).
Typed commands: /trace, /memory [export [file] | forget], /reset, /help, /quit. Ctrl-D or
Ctrl-C leaves.

The console user's reminders that fall due while the chat runs are printed as they fall due
(bot.console.reminders).

Input is read by a daemon thread feeding an asyncio queue, so the event loop never blocks on
the terminal and a pending read never holds up the exit.

Part of bot/: a front end over bot.turn.pipeline; prints through rich (a CLI, so output is its job).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from agent.events import AgentEvent, AnswerDelta, FinalAnswer, ModelCalled, Nudge, RunEnded, ToolFinished, ToolStarted
from bot.console.reminders import ConsoleReminderSender
from bot.reminders.delivery import ReminderDelivery
from bot.settings.config import Settings
from bot.turn.requests import TurnRequest
from bot.process.runtime import Runtime
from bot.process.shutdown import StopSignal, serve_until_stopped

__all__ = ["CONSOLE_CHANNEL", "CONSOLE_USER", "ConsoleChat", "run_console"]

CONSOLE_USER = "console"
CONSOLE_CHANNEL = "console"
OBSERVATION_CHARS = 600

HELP = """\
Type a question and press Enter. Commands:
  /trace                  the steps of the last answer
  /memory                 what I remember about you
  /memory export [file]   all of it as JSON (to a file, or shown here)
  /memory forget          erase it (asks first)
  /reset                  forget this conversation's recent messages (not your memory)
  /help                   this help
  /quit                   leave (Ctrl-D and Ctrl-C too)"""


def _clip(text: str, limit: int = OBSERVATION_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + f" [... {len(text) - limit} more characters]"


class _LineReader:
    """Reads stdin lines in a daemon thread; `get()` returns the next line, None at EOF."""

    def __init__(self, loop: asyncio.AbstractEventLoop, readline: Callable[[], str]) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = loop
        self._readline = readline
        self._wanted = threading.Semaphore(0)
        threading.Thread(target=self._pump, name="console-input", daemon=True).start()

    def _pump(self) -> None:
        while True:
            self._wanted.acquire()
            try:
                line: str | None = self._readline()
            except (EOFError, OSError, ValueError):
                line = None
            if line == "":
                line = None
            self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
            if line is None:
                return

    async def get(self) -> str | None:
        self._wanted.release()
        line = await self._queue.get()
        return None if line is None else line.rstrip("\r\n")


def _is_terminal(readline: Callable[[], str]) -> bool:
    """Whether ``readline`` reads a terminal (which echoes what is typed)."""
    stream = getattr(readline, "__self__", None)
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class ConsoleChat:
    """One local user talking to the pipeline; `run()` returns the exit code."""

    def __init__(self, runtime: Runtime, console: Console | None = None, *,
                 readline: Callable[[], str] = sys.stdin.readline,
                 user_id: str = CONSOLE_USER, channel_id: str = CONSOLE_CHANNEL,
                 display_name: str = "you") -> None:
        self.runtime = runtime
        self.console = console or Console(highlight=False)
        self._readline = readline
        self.user_id = user_id
        self.channel_id = channel_id
        self.display_name = display_name
        self._reader: _LineReader | None = None
        self._echo = not _is_terminal(readline)  # piped input is not echoed by a terminal: echo it
        self._streamed: tuple[int, str] | None = None  # (step, text) of the answer streamed
        self._line_open = False  # the streamed answer's line is not ended yet

    async def _input(self, prompt: str) -> str | None:
        assert self._reader is not None
        self.console.print(Text(prompt, style="bold cyan"), end="")
        self.console.file.flush()
        line = await self._reader.get()
        if line is None or self._echo:
            self.console.print(Text(line or "", style="bold"))  # end the prompt's line
        return line

    async def run(self) -> int:
        delivery = ReminderDelivery(self.runtime.reminders, ConsoleReminderSender(self.console, self.user_id),
                                    turns=self.runtime.pipeline)
        reminders = asyncio.create_task(delivery.run(), name="console-reminders")
        try:
            return await self._chat()
        finally:
            reminders.cancel()
            await asyncio.gather(reminders, return_exceptions=True)
            await delivery.stop()

    async def _chat(self) -> int:
        self._reader = _LineReader(asyncio.get_running_loop(), self._readline)
        s = self.runtime.settings
        if self.runtime.user_memory.loading:
            self.console.print(Text("Loading the embedding model...", style="dim"))
            self.console.file.flush()
            await self.runtime.user_memory.loaded()
        self.console.print(Text(f"Console chat with {s.agent.model} (data in {s.memory.data_dir.resolve()}). "
                                "Type /help for commands, /quit to leave.", style="dim"))
        while True:
            line = await self._input("you> ")
            if line is None:
                break
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                if not await self._command(line):
                    break
                continue
            await self._ask(line)
        self.console.print(Text("bye", style="dim"))
        return 0

    # -- a question -------------------------------------------------------------------------

    async def _ask(self, text: str) -> None:
        request = TurnRequest(user_id=self.user_id, display_name=self.display_name, guild_id=None,
                              channel_id=self.channel_id, text=text)
        self._streamed = None
        result = await self.runtime.pipeline.handle(request, self._show_event)
        self._end_line()
        streamed, self._streamed = self._streamed, None
        if result.ok and streamed is not None and streamed[1].strip() == result.text:
            return  # shown as it streamed
        if result.ok:
            self.console.print(Panel(Markdown(result.text), title="answer", title_align="left",
                                     border_style="green"))
        elif result.trace_id is not None:  # an honest non-answer (step limit)
            self.console.print(Panel(Text(result.text), title=result.outcome, title_align="left",
                                     border_style="yellow"))
        else:
            self.console.print(Text(result.text, style="bold red"))

    async def _show_event(self, event: AgentEvent) -> None:
        if isinstance(event, AnswerDelta):
            if not self._line_open or self._streamed is None or self._streamed[0] != event.step:
                self._end_line()
                self.console.print(Text("  answer: ", style="bold green"), end="")
                self._streamed, self._line_open = (event.step, ""), True
            self.console.print(Text(event.text), end="")
            self._streamed = (event.step, self._streamed[1] + event.text)
        else:
            self._end_line()
            if isinstance(event, (ToolStarted, Nudge)):
                self._streamed = None  # that step's text was not the answer
            self.console.print(self.render_event(event.to_dict()))
        self.console.file.flush()

    def _end_line(self) -> None:
        if self._line_open:
            self.console.print()
            self._line_open = False

    @staticmethod
    def render_event(e: dict[str, Any]) -> Text:
        """One step as terminal text, from an event dict (live events and stored traces alike)."""
        kind = e.get("type")
        out = Text()
        if kind == ModelCalled.type:
            usage = e.get("usage") or {}
            out.append(f"  step {e.get('step')}  model {e.get('elapsed_ms', 0):.0f} ms, "
                       f"{usage.get('total_tokens', 0)} tokens", style="dim")
        elif kind == ToolStarted.type:
            if e.get("thought"):
                out.append("  thought: ", style="magenta").append(_clip(str(e["thought"])) + "\n")
            out.append("  tool: ", style="cyan").append(str(e.get("tool")))
            out.append("  input: ", style="cyan").append(json.dumps(e.get("args"), ensure_ascii=False))
        elif kind == ToolFinished.type:
            style = "green" if e.get("ok") else "red"
            out.append("  observation: ", style=style).append(_clip(str(e.get("observation", ""))))
            out.append(f"  ({e.get('elapsed_ms', 0):.0f} ms)", style="dim")
        elif kind == Nudge.type:
            out.append(f"  nudge ({e.get('problem')}): ", style="yellow").append(_clip(str(e.get("message", "")), 200))
        elif kind == FinalAnswer.type:
            if e.get("thought"):
                out.append("  thought: ", style="magenta").append(_clip(str(e["thought"])))
            else:
                out.append("  final answer", style="dim")
        elif kind == RunEnded.type:
            usage = e.get("usage") or {}
            out.append(f"  {e.get('outcome')} after {e.get('steps')} step(s), "
                       f"{usage.get('total_tokens', 0)} tokens, {e.get('elapsed_ms', 0) / 1000:.1f} s",
                       style="dim")
        else:
            out.append(f"  {kind}", style="dim")
        return out

    # -- commands ---------------------------------------------------------------------------

    async def _command(self, line: str) -> bool:
        """Run a typed command; False means leave."""
        parts = line.split()
        name, args = parts[0].lower(), parts[1:]
        services = self.runtime.services
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            self.console.print(Text(HELP))
        elif name == "/trace":
            record = await services.traces.last_trace(self.user_id, self.channel_id)
            if record is None:
                self.console.print(Text("No answer to show the steps of yet.", style="yellow"))
                return True
            self.console.print(Text(f"Trace of: {_clip(record.question, 200)}", style="bold"))
            for event in record.events:
                self.console.print(self.render_event(event))
        elif name == "/memory":
            await self._memory(args)
        elif name == "/reset":
            removed = await services.channels.reset_channel(self.channel_id)
            self.console.print(Text(f"Cleared {removed} message(s) of this conversation. "
                                    "Your memory is kept (/memory forget erases it).", style="green"))
        else:
            self.console.print(Text(f"Unknown command {name}. Type /help.", style="yellow"))
        return True

    async def _memory(self, args: list[str]) -> None:
        services = self.runtime.services
        sub = args[0].lower() if args else "show"
        if sub in ("show", "list"):
            entries = await services.memory.memory_entries(self.user_id, None)  # built off the event loop
            if not entries:
                self.console.print(Text("I don't remember anything about you yet.", style="yellow"))
                return
            items = sum(len(entry.item_ids) for entry in entries)
            self.console.print(Text(f"{len(entries)} remembered ({items} item(s)):", style="bold"))
            for entry in entries:
                self.console.print(Text(f"- [{entry.kind}] ", style="dim").append(_clip(entry.text, 300)))
        elif sub == "export":
            items = await services.memory.memory_export(self.user_id, None)
            data = json.dumps(items, ensure_ascii=False, indent=2)
            if len(args) > 1:
                path = Path(args[1]).expanduser()
                try:
                    await asyncio.to_thread(path.write_text, data + "\n", encoding="utf-8")
                except OSError as exc:
                    self.console.print(Text(f"Could not write {path}: {exc.strerror or exc}", style="red"))
                    return
                self.console.print(Text(f"Wrote {len(items)} item(s) to {path}.", style="green"))
            else:
                self.console.print(Text(data))
        elif sub == "forget":
            answer = await self._input("Erase everything I keep of what you said? [y/N] ")
            if (answer or "").strip().lower() not in ("y", "yes"):
                self.console.print(Text("Kept.", style="dim"))
                return
            forgotten = await services.memory.memory_forget(self.user_id, None)
            self.console.print(Text(forgotten.summary(), style="green"))
        else:
            self.console.print(Text("Use /memory, /memory export [file] or /memory forget.", style="yellow"))


async def run_console(settings: Settings, stop: StopSignal) -> int:
    """Open the stores and chat until /quit, end of input or ``stop`` (then shut down
    gracefully: see bot.process.shutdown); the stores close on the way out. Returns the exit code."""
    async with Runtime(settings) as runtime:
        code = await serve_until_stopped(ConsoleChat(runtime).run(), runtime.pipeline.tracker, stop,
                                         timeout_s=settings.shutdown_timeout_s)
    return 0 if code is None else int(code)
