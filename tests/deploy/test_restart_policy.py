"""The unit's Restart=on-failure, driven as systemd would (tests/deploy/restart_policy.py says
why not under systemd itself): the real `python -m bot run` killed with SIGKILL is started
again after RestartSec= and comes back with its state (its channel's conversation); a
configuration error or a clean stop is not restarted, and repeated failures hit the start limit."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from bench.chaos_world import World
from tests.deploy.restart_policy import RestartPolicy

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "react-discord-bot.service"


def test_the_units_policy_restarts_crashes_only() -> None:
    policy = RestartPolicy.from_unit(UNIT)
    assert (policy.restart, policy.restart_sec, policy.prevent_exit_status) == ("on-failure", 5.0, {2})
    assert policy.should_restart(-signal.SIGKILL) and policy.should_restart(1)  # a crash, a traceback
    assert not policy.should_restart(0)            # a graceful stop (SIGTERM is handled, exit 0)
    assert not policy.should_restart(-signal.SIGTERM)
    assert not policy.should_restart(2)            # a configuration error: restarting cannot fix it
    now = 1000.0
    five_failures = [now - 60 * n for n in range(5)]
    assert not policy.may_start(five_failures, now)
    assert policy.may_start(five_failures, now + policy.start_limit_interval_s)


@pytest.mark.slow  # starts the real bot process twice
async def test_a_killed_bot_is_restarted_after_restart_sec_and_keeps_its_conversation(tmp_path: Path) -> None:
    policy = RestartPolicy.from_unit(UNIT)
    async with World(tmp_path, channels=1, people=1) as world:
        channel, person = world.channel_ids[0], world.members[world.channel_ids[0]][0]
        world.model.reply("Final Answer: Noted, your cat is Miso.").reply("Final Answer: Miso")
        await world.bot.start(world.dc)
        first = await world.dc.user_says(channel, person, "My cat is called Miso.", mention_bot=True)
        await world.dc.wait_for(lambda: world.answers_to(first), timeout=60)

        world.bot.kill_now()
        assert world.bot.proc is not None
        code = await world.bot.proc.wait()
        died = time.monotonic()
        assert code == -signal.SIGKILL and policy.should_restart(code)
        await world.dc.wait_for(lambda: time.monotonic() - died >= policy.restart_sec,
                                timeout=policy.restart_sec + 1)
        await world.bot.start(world.dc)

        second = await world.dc.user_says(channel, person, "What is my cat called?", mention_bot=True)
        await world.dc.wait_for(lambda: world.answers_to(second), timeout=60)
        assert [m.content for m in world.answers_to(second)] == ["Miso"]
        history = [m.get("content") for m in world.model.requests[-1]["messages"]]
        assert "My cat is called Miso." in history and "Noted, your cat is Miso." in history
        assert await world.bot.stop() == 0 and not policy.should_restart(0)
