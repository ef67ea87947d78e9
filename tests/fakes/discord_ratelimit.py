"""Discord's per-route rate limits for FakeDiscord: buckets, headers, 429s, and what the client did.

Discord answers every request of a rate-limited route with headers that describe its bucket
(``X-RateLimit-Limit``, ``-Remaining``, ``-Reset``, ``-Reset-After``, ``-Bucket``), and a request
over the limit with 429, a JSON body holding ``retry_after`` (seconds) and ``global``, and the
``Retry-After`` and ``X-RateLimit-Scope`` headers; a 429 from Discord itself (not from Cloudflare)
carries ``Via``, which discord.py checks before it retries. This module does the same for message
sends and edits (channel messages and interaction webhooks), one bucket per route and major
parameter, a fixed window from the bucket's first request; it can also answer a seeded share of
requests 429 at random (Discord's "sub-ratelimits", which the headers do not announce).

It records what the client did, for a bench to grade:

- ``early_retries``: a request repeated (same method, path and body) before the ``retry_after`` of
  the 429 that refused it had elapsed;
- ``overruns``: requests made while the bucket's last headers said none remained and the window
  had not reset (a client that reads the headers waits instead; the fake answers these 429 too);
- ``never_retried``: refused requests that never came back (a message given up).

A burst of retries shows as early retries: each repeat is answered (and recorded) on its own.

Must not import the product; it is the far end of the wire.
"""

from __future__ import annotations

import fnmatch
import json
import random
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_ROUTES", "RateLimitRecord", "RateLimiter"]

# (method, path pattern, bucket hash, how many leading path segments are the major parameter)
DEFAULT_ROUTES: tuple[tuple[str, str, str, int], ...] = (
    ("POST", "/channels/*/messages", "msg-send", 2),
    ("PATCH", "/channels/*/messages/*", "msg-edit", 2),
    ("POST", "/webhooks/*/*", "hook-send", 3),
    ("PATCH", "/webhooks/*/*/messages/*", "hook-edit", 3),
)
CLOCK_SLACK_S = 0.005  # the client's timer and ours differ by a scheduling tick


@dataclass(slots=True)
class RateLimitRecord:
    """One 429 the fake sent: the refused request, its retry_after, and when it came back."""

    bucket: str
    key: tuple[str, str, str]     # method, path, body as JSON: how its retry is recognised
    at: float
    retry_after: float
    injected: bool                # a random sub-ratelimit, not an exhausted bucket
    retried_at: float | None = None  # when the refused request came back


@dataclass(slots=True)
class _Bucket:
    window_start: float
    used: int = 0
    announced_empty_until: float = 0.0  # the last headers said remaining 0 until then


class RateLimiter:
    """Buckets of `limit` requests per `window_s` for `routes`; a `inject_rate` share of
    requests refused at random with a retry_after drawn from `retry_after_s` (seeded)."""

    def __init__(self, *, limit: int = 5, window_s: float = 5.0, inject_rate: float = 0.0,
                 retry_after_s: tuple[float, float] = (0.2, 0.8), seed: int = 0,
                 routes: tuple[tuple[str, str, str, int], ...] = DEFAULT_ROUTES) -> None:
        self.limit = limit
        self.window_s = window_s
        self.inject_rate = inject_rate
        self.retry_after_s = retry_after_s
        self.routes = routes
        self.records: list[RateLimitRecord] = []
        self.requests = 0            # requests of rate-limited routes seen
        self.overruns = 0
        self._random = random.Random(seed)
        self._buckets: dict[str, _Bucket] = {}
        self._open: dict[tuple[str, str, str], RateLimitRecord] = {}  # refused, not yet retried

    def _bucket_of(self, method: str, path: str) -> tuple[str, str] | None:
        for route_method, pattern, name, major in self.routes:
            if method == route_method and fnmatch.fnmatchcase(path, pattern):
                return name, name + ":" + "/".join(path.split("/")[: major + 1])
        return None

    def check(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        """For a request: (429, body, headers) to refuse it, or (0, None, headers) to let it
        through with the bucket headers to add to its answer. Routes without a limit: (0, None, {})."""
        found = self._bucket_of(method, path)
        if found is None:
            return 0, None, {}
        name, major = found
        now = time.monotonic()
        self.requests += 1
        key = (method, path, json.dumps(body, sort_keys=True, default=str))
        if (refused := self._open.pop(key, None)) is not None:
            refused.retried_at = now
        bucket = self._buckets.get(major)
        if bucket is None or now >= bucket.window_start + self.window_s:
            bucket = self._buckets[major] = _Bucket(window_start=now)
        reset_after = bucket.window_start + self.window_s - now
        if now + CLOCK_SLACK_S < bucket.announced_empty_until:
            self.overruns += 1
        if bucket.used >= self.limit:
            return self._refuse(name, key, now, reset_after, injected=False)
        if self.inject_rate and self._random.random() < self.inject_rate:
            return self._refuse(name, key, now, self._random.uniform(*self.retry_after_s), injected=True)
        bucket.used += 1
        remaining = self.limit - bucket.used
        if remaining == 0:
            bucket.announced_empty_until = bucket.window_start + self.window_s
        return 0, None, self._headers(name, remaining, reset_after)

    def _refuse(self, name: str, key: tuple[str, str, str], now: float, retry_after: float, *,
                injected: bool) -> tuple[int, dict[str, Any], dict[str, str]]:
        retry_after = round(max(retry_after, 0.001), 3)
        record = RateLimitRecord(name, key, now, retry_after, injected)
        self.records.append(record)
        self._open[key] = record
        headers = {**self._headers(name, 0, retry_after), "Retry-After": str(max(1, round(retry_after))),
                   "X-RateLimit-Scope": "shared" if injected else "user", "Via": "1.1 google"}
        body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False,
                "code": 0}
        return 429, body, headers

    def _headers(self, name: str, remaining: int, reset_after: float) -> dict[str, str]:
        return {"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
                "X-RateLimit-Reset-After": f"{reset_after:.3f}", "X-RateLimit-Bucket": name}

    # -- grading -----------------------------------------------------------------------------

    @property
    def early_retries(self) -> int:
        """Repeats that came before their 429's retry_after had elapsed."""
        return sum(1 for r in self.records
                   if r.retried_at is not None and r.retried_at - r.at + CLOCK_SLACK_S < r.retry_after)

    @property
    def never_retried(self) -> int:
        """Refused requests that never came back."""
        return sum(1 for r in self.records if r.retried_at is None)
