"""README.md's shell commands, run: every ```sh block is run by a test unless an HTML comment
right before it says `<!-- not run: why -->`; a `<!-- dry run: why -->` block's `make` lines run
as `make -n` (their commands exist and parse; `make test` inside the test suite would recurse).

The commands run with bash (set -euo pipefail) from the repository root, with a fresh virtual
environment first on PATH: created by `python -m venv --without-pip`, the already installed
dependencies (pip and setuptools among them) seen through a .pth file pointing at .venv's
site-packages, and the project installed into it with `pip install --no-deps
--no-build-isolation -e .` (no network, seconds rather than the minutes a full dependency
install takes; the full install is what `make test` itself does). The model is the loopback FakeOpenAI (answering every
question with one calculator step), embeddings come from it too, DATA_DIR is a fresh folder,
and no DISCORD_TOKEN is set. Each block's output is checked: `python -m agent` prints the
README's ```text example line for line (durations aside), the console chat answers, then shows
the calculator step under /trace and the stored exchange under /memory, the check passes.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # builds a fresh venv and starts the bot: handed out first (tests/conftest.py)

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
FENCE = re.compile(r"(?:<!--\s*(?P<marker>not run|dry run):(?P<why>.*?)-->\s*\n)?```(?P<lang>sh|bash|shell)\n(?P<body>.*?)```",
                   re.DOTALL)


@dataclass(frozen=True)
class Block:
    index: int
    mode: str          # "run" | "dry run" | "not run"
    why: str
    commands: list[str]

    def __str__(self) -> str:
        return f"block{self.index}:{self.commands[0][:40]}"


def readme_blocks() -> list[Block]:
    blocks = []
    for i, m in enumerate(FENCE.finditer(README.read_text(encoding="utf-8"))):
        lines = [ln for ln in m["body"].splitlines() if ln.strip()]
        blocks.append(Block(i, m["marker"] or "run", (m["why"] or "").strip(), lines))
    return blocks


BLOCKS = readme_blocks()
RUN = [b for b in BLOCKS if b.mode != "not run"]


def script_of(block: Block) -> str:
    if block.mode == "run":
        return "\n".join(block.commands)
    out = []
    for line in block.commands:
        command = line.split("#", 1)[0].strip()
        assert command.startswith("make "), f"a dry-run block holds only make commands: {line!r}"
        out.append("make -n " + command.removeprefix("make ").strip())
    return "\n".join(out)


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("readme") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "-e", str(REPO)], check=True, timeout=300, cwd=REPO)
    return venv


def responder(body: dict[str, Any]) -> str:
    """One calculator step, then the answer (any question); one token for the check."""
    last = body["messages"][-1]["content"] or ""
    if body.get("max_tokens") == 1:
        return "ok"
    if "Observation" in last or "391" in last:
        return "Thought: The calculator says 391.\nFinal Answer: 17 × 23 = 391."
    return 'Thought: I should compute this exactly.\nAction: calculator\nAction Input: {"expression": "17 * 23"}'


def env_for(venv: Path, fake: FakeOpenAI, data: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "LC_ALL", "TMPDIR")}
    return {**keep, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
            "COLUMNS": "120", "LLM_MODEL": "qwen2.5:7b", "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "readme-test", "LLM_MAX_RETRIES": "0", "DATA_DIR": str(data),
            "EMBEDDING_BACKEND": "openai", "EMBEDDING_BASE_URL": fake.base_url,
            "EMBEDDING_MODEL": "fake-embed"}


def cli_example() -> str:
    """What the README's ```text example shows `python -m agent` printing (after the `$` line)."""
    match = re.search(r"```text\n\$ python -m agent \"what is 17 times 23\?\"\n(.*?)```",
                      README.read_text(encoding="utf-8"), re.DOTALL)
    assert match, "README.md has no example of `python -m agent` output"
    return match.group(1)


def timings_masked(text: str) -> list[str]:
    """The lines with each duration written as N (they differ from run to run)."""
    return [re.sub(r"\d+(?:\.\d+)?(?= (?:ms|s)\b)", "N", line) for line in text.strip().splitlines()]


def test_the_readme_has_runnable_blocks_and_says_why_any_is_not_run() -> None:
    assert len(RUN) >= 4
    for block in BLOCKS:
        if block.mode != "run":
            assert len(block.why) >= 10, f"{block}: say why it is not run as written"


def settings_table(path: Path) -> dict[str, set[str]]:
    """Variable -> the `quoted` values of its Default cell, for each one-variable table row."""
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \| ([^|]+) \|", path.read_text(encoding="utf-8"), re.M)
    return {name: set(re.findall(r"`([^`]+)`", cell)) for name, cell in rows}


def test_the_readme_settings_defaults_are_those_of_the_operators_guide() -> None:
    # deploy/README.md's table is checked against the settings code by tests/deploy.
    ours, guide = settings_table(README), settings_table(REPO / "deploy" / "README.md")
    assert len(ours) >= 8
    assert {name: ours[name] - guide.get(name, set()) for name in ours} == {name: set() for name in ours}


def test_a_fresh_venv_gets_the_package_installed_without_dependencies(fresh_venv: Path) -> None:
    proc = subprocess.run([str(fresh_venv / "bin" / "python"), "-c",
                           "import agent, bot, memory, sys; print(sys.prefix); print(bot.__file__)"],
                          capture_output=True, text=True, cwd="/", timeout=60)
    assert proc.returncode == 0, proc.stderr
    prefix, location = proc.stdout.split()
    assert Path(prefix) == fresh_venv and Path(location).is_relative_to(REPO)


@pytest.mark.parametrize("block", RUN, ids=str)
async def test_readme_shell_block_runs_in_the_fresh_venv_against_the_fakes(
        block: Block, fresh_venv: Path, tmp_path: Path) -> None:
    async with FakeOpenAI(responder=responder) as fake:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-euo", "pipefail", "-c", script_of(block), cwd=REPO,
            env=env_for(fresh_venv, fake, tmp_path / "data"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 300)
    text = out.decode() + err.decode()
    assert proc.returncode == 0, f"{script_of(block)}\n{text[-3000:]}"
    assert "Traceback" not in text
    if any("python -m agent" in c for c in block.commands):
        assert timings_masked(out.decode()) == timings_masked(cli_example())
    if any("python -m bot chat" in c for c in block.commands):
        answer, _, after = out.decode().partition("Trace of: what is 17 times 23?")
        trace, _, memory = after.partition("you> ")
        assert "391" in answer
        assert 'tool: calculator  input: {"expression": "17 * 23"}' in trace and "observation: 391" in trace
        assert "[exchange] you: what is 17 times 23? / me: " in memory
    if any("python -m bot check" in c for c in block.commands):
        assert "all checks passed" in out.decode()
