"""Approximate token counting, for budgets (channel buffer windows, the bot's context size).

The estimate is deliberately cheap and tokenizer-free, and errs on the high side so that a
budget is not blown: ASCII text counts one token per four characters, every non-ASCII
character (accents, CJK, emoji, zero-width marks) counts one token, and the result is never
below the number of whitespace-separated words. It is an approximation, not a tokenizer: real
counts differ by model, typically within about 25 % for English prose.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

__all__ = ["TRUNCATION_MARKER", "estimate_tokens", "truncate_to_tokens"]

TRUNCATION_MARKER = "\n[... truncated: {kept} of {total} characters kept]"


def estimate_tokens(text: str) -> int:
    """Approximate number of model tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    if text.isascii():
        ascii_chars, other_chars = len(text), 0
    else:
        ascii_chars = len(text.encode("ascii", "ignore"))
        other_chars = len(text) - ascii_chars
    by_chars = -(-ascii_chars // 4) + other_chars
    if by_chars >= (len(text) + 1) // 2:  # no text has more words than that
        return max(by_chars, 1)
    return max(by_chars, len(text.split()))


def truncate_to_tokens(text: str, max_tokens: int) -> str | None:
    """``text`` cut to at most ``max_tokens`` (estimated) with a visible marker at the cut.

    Returns ``text`` unchanged when it fits, and None when not even the marker fits.
    The start of the text is kept.
    """
    if estimate_tokens(text) <= max_tokens:
        return text

    def cut(n: int) -> str:
        return text[:n] + TRUNCATION_MARKER.format(kept=n, total=len(text))

    if estimate_tokens(cut(0)) > max_tokens:
        return None
    low, high = 0, len(text)  # invariant: cut(low) fits, cut(high) does not
    while high - low > 1:
        mid = (low + high) // 2
        if estimate_tokens(cut(mid)) <= max_tokens:
            low = mid
        else:
            high = mid
    return cut(low)
