"""`python -m agent "question"`: one question against the configured endpoint, step by step.

Reads `.env` from the current directory into the environment (variables already set win),
loads the agent settings, registers the built-in tools, runs the agent and prints each event
as it happens (thought, action, input, observation, timings), then the answer, which streams
as the model writes it (`--no-stream` asks for whole replies).

Exit codes: 0 answered; 3 ended without an answer (step limit, or the model never answered
properly); 1 the model endpoint failed; 2 configuration missing or invalid. Errors are one line
on stderr, never a traceback, and never contain the API key.

The only module of agent/ that reads os.environ; imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx
from dotenv import load_dotenv
from rich.console import Console
from rich.text import Text

from agent.config import AgentSettings, load_agent_settings
from agent.errors import ConfigError, LLMError
from agent.events import (
    AgentEvent,
    AnswerDelta,
    FinalAnswer,
    ModelCalled,
    Nudge,
    RunEnded,
    ToolFinished,
    ToolStarted,
)
from agent.llm import LLMClient
from agent.loop import Agent
from agent.tools.builtin import register_builtin_tools
from agent.tools.registry import ToolContext, ToolRegistry

EXIT_OK, EXIT_LLM, EXIT_CONFIG, EXIT_NO_ANSWER = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent",
        description="Ask the ReAct agent one question and watch it work.",
        epilog="Settings come from the environment and ./.env: OPENAI_BASE_URL, OPENAI_API_KEY, "
        "LLM_MODEL, LLM_PROTOCOL, AGENT_MAX_STEPS, ... Exit codes: 0 answered, 1 model "
        "endpoint failed, 2 configuration missing or invalid, 3 no answer.",
    )
    parser.add_argument("question", nargs="+", help="the question (words are joined)")
    parser.add_argument("--protocol", choices=("text", "native"), help="override LLM_PROTOCOL")
    parser.add_argument("--max-steps", type=int, help="override AGENT_MAX_STEPS")
    parser.add_argument("--env-file", type=Path, default=Path(".env"), help="default: ./.env")
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    parser.add_argument(
        "--no-stream", dest="stream", action="store_false",
        help="ask the model for whole replies instead of streaming the answer",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    return parser


class _Printer:
    """Prints events as they come: readable with rich, or one JSON object per line."""

    def __init__(self, console: Console, as_json: bool) -> None:
        self.console = console
        self.as_json = as_json
        self._streamed: tuple[int, str] | None = None  # (step, text) of the last streamed answer
        self._line_open = False  # the streamed answer's line has not been ended yet

    def show(self, event: AgentEvent) -> None:
        if self.as_json:
            self.console.file.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
        else:
            self._render(event)
        self.console.file.flush()  # each step shows as it happens, even through a pipe

    def _render(self, event: AgentEvent) -> None:
        out = self.console.print
        if isinstance(event, AnswerDelta):
            self._stream(event)
            return
        if self._line_open:  # end the streamed answer's line before what follows it
            out()
            self._line_open = False
        if isinstance(event, ModelCalled):
            out(
                Text.assemble(
                    (f"[step {event.step}] ", "bold cyan"),
                    (f"model {event.elapsed_ms:.0f} ms, {event.usage.total_tokens} tokens", "dim"),
                )
            )
        elif isinstance(event, ToolStarted):
            if event.thought:
                out(_field("Thought", event.thought, "italic"))
            out(_field("Action", event.tool, "bold"))
            out(_field("Input", json.dumps(event.args, ensure_ascii=False), ""))
        elif isinstance(event, ToolFinished):
            line = _field("Observation", event.observation, "green" if event.ok else "red")
            line.append(f"  ({event.elapsed_ms:.1f} ms)", style="dim")
            out(line)
        elif isinstance(event, Nudge):
            out(_field(f"Nudge ({event.problem})", event.message.splitlines()[0], "yellow"))
        elif isinstance(event, FinalAnswer):
            if event.thought:
                out(_field("Thought", event.thought, "italic"))
        elif isinstance(event, RunEnded):
            streamed, self._streamed = self._streamed, None
            label = "Answer" if event.outcome == "answered" else f"No answer ({event.outcome})"
            if streamed is None or streamed[1] != event.answer:  # not shown, or shown otherwise
                out(Text.assemble((f"{label}: ", "bold"), event.answer))
            out(
                Text(
                    f"{event.steps} step{'' if event.steps == 1 else 's'}, {event.elapsed_ms / 1000:.1f} s, "
                    f"{event.usage.prompt_tokens} prompt + {event.usage.completion_tokens} "
                    "completion tokens",
                    style="dim",
                )
            )


    def _stream(self, event: AnswerDelta) -> None:
        """The answer as it comes, on an "Answer:" line of its own (RunEnded then need not
        repeat it, unless the parsed answer came out different)."""
        if not self._line_open or self._streamed is None or self._streamed[0] != event.step:
            if self._line_open:
                self.console.print()
            self.console.print(Text("Answer: ", "bold"), end="")
            self._streamed, self._line_open = (event.step, ""), True
        self.console.print(Text(event.text), end="")
        self._streamed = (event.step, self._streamed[1] + event.text)


def _field(label: str, value: str, style: str) -> Text:
    return Text.assemble(("    " + label + ": ", "bold"), (value, style))


async def _ask(settings: AgentSettings, question: str, printer: _Printer, *, stream: bool) -> int:
    llm = LLMClient.from_settings(settings)
    try:
        async with httpx.AsyncClient(timeout=settings.tool_timeout_s) as http:
            registry = ToolRegistry(default_timeout_s=settings.tool_timeout_s)
            register_builtin_tools(registry, settings, http)
            agent = Agent(
                llm, registry, protocol=settings.protocol, max_steps=settings.max_steps,
                stream=stream,
            )
            context = ToolContext(
                user_id="cli", channel_id="cli", guild_id=None, display_name=_user_name()
            )
            outcome = "no_answer"
            async for event in agent.run(question, context=context):
                printer.show(event)
                if isinstance(event, RunEnded):
                    outcome = event.outcome
    finally:
        await llm.aclose()
    return EXIT_OK if outcome == "answered" else EXIT_NO_ANSWER


def _user_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    question = " ".join(args.question).strip()
    if not question:
        err.print("error: the question is empty", markup=False)
        return EXIT_CONFIG
    if args.env_file.is_file():
        load_dotenv(args.env_file, override=False)
    env = dict(os.environ)
    if args.protocol:
        env["LLM_PROTOCOL"] = args.protocol
    if args.max_steps is not None:
        env["AGENT_MAX_STEPS"] = str(args.max_steps)
    try:
        settings = load_agent_settings(env)
    except ConfigError as exc:
        err.print(f"config error: {exc}", markup=False)
        return EXIT_CONFIG
    if not settings.is_configured:
        err.print(settings.missing(), markup=False)
        return EXIT_CONFIG
    printer = _Printer(Console(highlight=False, soft_wrap=True), args.json)
    try:
        return asyncio.run(_ask(settings, question, printer, stream=args.stream))
    except LLMError as exc:
        err.print(f"model error ({exc.kind}): {exc}", markup=False)
        return EXIT_LLM
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
