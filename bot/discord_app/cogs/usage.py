"""`/usage`: today's tokens of the person asking, and of the server for a Manage Server member.

Always private (ephemeral). A member without Manage Server sees only their own use; one with
it (or listed in ADMIN_USER_IDS; in a DM, nobody) also sees the server's total against GUILD_DAILY_TOKENS and its
heaviest users, named by mention (which pings nobody: the client's allowed mentions).
"""

from __future__ import annotations


import discord
from discord import app_commands
from discord.ext import commands

from bot.settings.budgets import TokenBudget, UsageReport, reset_phrase
from bot.discord_app.interactions import tell

__all__ = ["UsageCog", "usage_text"]


def _of(tokens: int, limit: int) -> str:
    return f"{tokens:,} of {limit:,} tokens" if limit else f"{tokens:,} tokens (no daily limit)"


def usage_text(report: UsageReport, now_phrase: str) -> str:
    """The /usage message for a report; ``now_phrase`` says when the day resets."""
    lines = [f"Today (UTC) you have used {_of(report.user_tokens, report.user_limit)}."]
    if report.guild is not None:
        g = report.guild
        lines.append(f"This server has used {_of(g.tokens, g.limit)} today.")
        if g.top:
            lines.append("Most today: " + ", ".join(f"<@{u.user_id}> {u.tokens:,}" for u in g.top) + ".")
    lines.append(f"Budgets reset at {now_phrase}.")
    return "\n".join(lines)


class UsageCog(commands.Cog):
    """The /usage command."""

    def __init__(self, budget: TokenBudget, *, admin_user_ids: frozenset[str] = frozenset()) -> None:
        self.budget = budget
        self.admin_user_ids = admin_user_ids  # the operator's ADMIN_USER_IDS: admins everywhere

    @app_commands.command(name="usage", description="How many tokens you (and this server) used today")
    async def usage(self, interaction: discord.Interaction) -> None:
        """Show today's token use."""
        guild_id = str(interaction.guild_id) if interaction.guild_id is not None else None
        admin = guild_id is not None and (interaction.permissions.manage_guild
                                          or str(interaction.user.id) in self.admin_user_ids)
        report = await self.budget.report(str(interaction.user.id), guild_id, with_guild=admin)
        await tell(interaction, usage_text(report, reset_phrase(report.resets_at, self.budget.now())))
