"""Hybrid ranking of one user's memory candidates: BM25 + dense similarity + time.

This module is pure: no I/O, no storage, no model. `memory.semantic` gathers candidates
(dense similarities, BM25 scores from `memory.semantic.keyword_index` over the user's items, which
tokenizes with `tokenize` below, each item's creation time) and calls `fuse` to get the
final order.

- `plan_query` turns a question into a `QueryPlan`: the text worth searching for (chatter
  such as "what did I tell you about" and time expressions removed), an optional time
  window ("yesterday", "last week", "on Monday", "two days ago"), and how much recency
  should count (only for questions about time or about the current state of things).
  It also notes what the question looks like, which sets BM25's weight for it: the names
  and other rare-looking words it spells out ("Priya", "K2"), whether it asks about the
  present state of something ("where do I live now?") or about what the bot said ("what
  did you recommend?").
- `tokenize` is what BM25 matches on: Unicode NFKC, case-folding, punctuation split, stop
  words, and the Snowball English stemmer (PyStemmer); `make_tokenizer` builds the other
  variants the retrieval evaluation compares. `memory.semantic.keyword_index` is BM25 over it.
- `fuse` merges the two rankings ("dense", "keyword" or "hybrid"), weighs the bot's own
  replies by whether the question is about them, keeps one item per stored exchange, and
  applies the window and recency of the plan; `fuse_keyed` is the same over integer keys and numpy arrays (what
  `memory.semantic.search` calls with rows, and what `fuse` does its work with).

It must not import anything from `agent/`, `bot/`, or the storage modules of `memory/`.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import unicodedata
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import Stemmer

__all__ = [
    "DEFAULT_CONFIG",
    "QueryPlan",
    "RankingConfig",
    "exchange_of",
    "Keyed",
    "fuse",
    "fuse_keyed",
    "keyword_weight_for",
    "make_tokenizer",
    "names_in",
    "plan_query",
    "said_by",
    "search_form",
    "tokenize",
]

log = logging.getLogger(__name__)

DAY = 86_400.0

# ---------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves im ive id ill dont didnt doesnt isnt wasnt thats whats
    s t d ll m re ve also ok okay yeah yes hey hi hello thanks thank please really
    bot user tell told say said remember mention mentioned
    """.split()
)

_SUFFIXES = ("ingly", "ings", "ing", "edly", "ies", "ied", "ed", "es", "s", "ly")
STEMMINGS = ("snowball", "light", "none")


def _light_stem(word: str) -> str:
    """Strip one common English suffix, keeping at least a 3-letter stem (the stemming used
    before Snowball; kept as a variant for the retrieval evaluation)."""
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                return stem + "y"
            if suffix == "es" and not stem.endswith(("s", "x", "z", "ch", "sh")):
                return stem + "e"
            if suffix == "s" and stem.endswith(("s", "u", "i")):
                return word
            if len(stem) >= 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]
            return stem
    return word


# A PyStemmer Stemmer must not be shared between threads (searches run on worker threads).
_stemmers = threading.local()
# PyStemmer caches the stems of up to 10,000 words per stemmer by default (one stemmer per
# thread here), memory counted in no bound of ours. On chat text the cache saved a fraction
# of a microsecond a word; on words that never repeat (names, numbers) its bookkeeping and
# purges made stemming several times slower (bench/stem_cache_bench.py, docs/decisions/0008-stemmer-cache-off.md).
# So no cache: Snowball's C stemmer is fast enough on its own.
STEM_CACHE_WORDS = 0


def _snowball_stems(words: list[str]) -> list[str]:
    """Snowball's English (Porter2) stemmer for ASCII words; other scripts are left alone."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english", STEM_CACHE_WORDS)
    if all(map(str.isascii, words)):
        return stemmer.stemWords(words)  # one call for the text's words, not one per word
    return [stemmer.stemWord(w) if w.isascii() else w for w in words]


def _clean(text: str) -> str:
    """NFKC-normalize, case-fold and drop format characters (zero-width, bidi marks)."""
    if text.isascii():  # NFKC leaves ASCII as it is, case-folds it as lower() does, and it has no format character
        return text.lower().replace("'", "")
    return _clean_unicode(text)


def _clean_unicode(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").replace("'", "").replace("’", "")


def make_tokenizer(stemming: str = "snowball", *, stop_words: bool = True) -> Callable[[str], list[str]]:
    """A tokenizer: normalized words, `stop_words` dropped or not, stemmed per `stemming`
    ("snowball", "light" suffix stripping, or "none")."""
    if stemming not in STEMMINGS:
        raise ValueError(f"stemming must be one of {', '.join(STEMMINGS)}: {stemming!r}")
    stems: Callable[[list[str]], list[str]] = {
        "snowball": _snowball_stems, "light": lambda words: [_light_stem(w) for w in words], "none": list,
    }[stemming]
    stop = STOP_WORDS if stop_words else frozenset()

    def words_of(text: str) -> list[str]:
        if not text:
            return []
        return stems([w for w in _WORD.findall(_clean(text)) if w not in stop])

    return words_of


tokenize = make_tokenizer()
tokenize.__doc__ = "Words of `text` for BM25: normalized, stop words removed, Snowball-stemmed."


# ---------------------------------------------------------------------------------------
# Query planning
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryPlan:
    """What to search for and when: `since`/`until` are epoch seconds (None = open);
    `names`: how many names or rare-looking words the question spells out; `current`: it asks
    about the present state of something ("where do I live now?"), with no time window;
    `about_reply`: it asks what the bot said ("what did you recommend?"); `named`: the names it
    spells out, case-folded (`names_in`), which `said_by` matches with an item's speaker;
    `asks_when`: it asks for a time ("when did ...", "how long ago", "what year")."""

    search_text: str
    since: float | None
    until: float | None
    recency_weight: float
    names: int = 0
    current: bool = False
    about_reply: bool = False
    named: frozenset[str] = frozenset()
    asks_when: bool = False


_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "a couple of": 2,
    "few": 3, "a few": 3,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUM = r"(\d{1,3}|a couple of|a few|couple of|few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"

# Chatter around the real subject of a memory question.
_CHATTER = re.compile(
    r"\b(?:what|which|when|where|who|how)\b(?:\s+(?:did|do|was|were|had|have|is|are))?\s+"
    r"(?:i|we)\s+(?:say|said|tell|told|mention|mentioned|write|wrote|talk|talked|ask|asked)"
    r"(?:\s+(?:you|to you|the bot))?(?:\s+(?:about|regarding|on))?\b"
    r"|\b(?:do|can|could)\s+you\s+remember\b|\bremind\s+me\b|\bi\s+(?:told|said\s+to)\s+you\b"
    r"|\bdid\s+i\s+(?:ever\s+)?(?:say|tell|mention)\b",
    re.IGNORECASE,
)

_RECENCY_WORDS = re.compile(
    r"\b(?:now|currently|current|these days|nowadays|latest|most recent|recently|lately|"
    r"still|anymore|any more|at the moment|right now|new|newest|last time)\b",
    re.IGNORECASE,
)

# A question about what the bot itself said: "what did you recommend", "your advice".
_ABOUT_REPLY = re.compile(
    r"\b(?:did|do|would|have|had|could|can)\s+you\s+(?:ever\s+|just\s+)?"
    r"(?:recommend|suggest|say|tell|give|advise|propose|mention|offer|send|share|explain|answer|reply|think)"
    r"|\byou\s+(?:recommended|suggested|advised|proposed|told\s+me|said|gave\s+me)\b"
    r"|\byour\s+(?:advice|suggestions?|recommendations?|tips?|ideas?|answer|reply)\b",
    re.IGNORECASE,
)

# A capitalised word that does not start a sentence ("Priya", "Berlin"), or a word mixing
# letters and digits ("K2", "X-T30"): what BM25 finds better than a sentence embedding.
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<![.!?])(?<!^)(?<=\s|\()([A-Z][\w’'-]*)")
_MIXED = re.compile(r"\b(?=\w*\d)(?=\w*[^\W\d])\w+\b")
_NOT_NAMES = frozenset({"I", "I'm", "I’m", "I've", "I’ve", "I'd", "I’d", "I'll", "I’ll", "OK"}
                       | {d.title() for d in _WEEKDAYS}
                       | {"January", "February", "March", "April", "May", "June", "July", "August",
                          "September", "October", "November", "December"})


def names_in(text: str) -> frozenset[str]:
    """The capitalised words `text` spells out past its first word ("Melanie" in "What did
    Melanie paint?", possessive "'s" dropped), case-folded: the names a question may give."""
    found = {m.group(1).rstrip("’'-").removesuffix("’s").removesuffix("'s")
             for m in _CAPITALISED.finditer(text)}
    return frozenset(w.casefold() for w in found if w and w not in _NOT_NAMES)


def count_names(text: str) -> int:
    """How many distinct names or rare-looking words `text` spells out (see `_CAPITALISED`)."""
    return len(names_in(text) | {w.casefold() for w in _MIXED.findall(text)})


def said_by(plan: QueryPlan, speaker: object) -> bool:
    """Whether the question names `speaker` (an item's metadata "speaker"): any word of the
    speaker's name, case-folded, among the names the question spells out."""
    if not plan.named or not isinstance(speaker, str):
        return False
    return any(word in plan.named for word in _WORD.findall(speaker.casefold()))


# A question asking for a time: "when did ...", "how long ago", "what year / month / date".
_ASKS_WHEN = re.compile(
    r"^\W*when\b|\bhow\s+long\s+ago\b|\b(?:what|which)\s+(?:year|month|day|date|week|time\s+of\s+year)\b"
    r"|\bin\s+what\s+(?:year|month)\b|\bsince\s+when\b",
    re.IGNORECASE,
)


def search_form(text: str) -> str:
    """`text` as it is searched for: runs of spaces folded, end punctuation trimmed."""
    return " ".join(text.split()).strip(" ?!.,;:")


def _day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _window(expr: str, match: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    today = _day_start(now)
    if expr == "today":
        return today, now
    if expr == "tonight" or expr == "this_morning":
        return today, now
    if expr == "yesterday":
        return today - timedelta(days=1), today
    if expr == "last_night":
        return today - timedelta(hours=12), today + timedelta(hours=6)
    if expr == "ago":
        count = _NUMBERS.get(match.group("n").lower()) or int(match.group("n"))
        unit = match.group("unit").lower()
        days = {"day": 1, "week": 7, "month": 30}[unit.rstrip("s")]
        centre = today - timedelta(days=count * days)
        slack = timedelta(days=max(1.0, count * days * 0.25))
        if days == 1:
            return centre - timedelta(days=0.5 if count == 1 else 1), centre + timedelta(days=1.5)
        return centre - slack, centre + slack + timedelta(days=1)
    if expr == "last_week":
        return today - timedelta(days=today.weekday() + 7), today - timedelta(days=today.weekday())
    if expr == "this_week":
        return today - timedelta(days=today.weekday()), now
    if expr == "last_weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        return saturday, saturday + timedelta(days=2)
    if expr == "last_month":
        return today - timedelta(days=45), today - timedelta(days=14)
    if expr == "this_month":
        return today.replace(day=1), now
    if expr == "weekday":
        target = _WEEKDAYS.index(match.group("day").lower())
        back = (today.weekday() - target) % 7 or 7
        day = today - timedelta(days=back)
        return day, day + timedelta(days=1)
    if expr == "past_days":
        count = _NUMBERS.get(match.group("n").lower()) or int(match.group("n"))
        unit = match.group("unit").lower().rstrip("s")
        days = {"day": 1, "week": 7, "month": 30}[unit]
        return now - timedelta(days=count * days), now
    if expr == "other_day":
        return today - timedelta(days=6), today
    raise ValueError(expr)


_TIME_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("ago", re.compile(rf"\b(?P<n>{_NUM})\s+(?P<unit>days?|weeks?|months?)\s+ago\b", re.I)),
    ("past_days", re.compile(
        rf"\b(?:in\s+)?(?:the\s+)?(?:past|last)\s+(?P<n>{_NUM})\s+(?P<unit>days?|weeks?|months?)\b", re.I)),
    ("last_night", re.compile(r"\blast\s+night\b", re.I)),
    ("last_weekend", re.compile(r"\b(?:last|this\s+past|over\s+the)\s+weekend\b", re.I)),
    ("last_week", re.compile(r"\blast\s+week\b", re.I)),
    ("this_week", re.compile(r"\b(?:this|earlier\s+this)\s+week\b", re.I)),
    ("last_month", re.compile(r"\blast\s+month\b", re.I)),
    ("this_month", re.compile(r"\bthis\s+month\b", re.I)),
    ("yesterday", re.compile(r"\byesterday\b", re.I)),
    ("this_morning", re.compile(r"\bthis\s+(?:morning|afternoon|evening)\b", re.I)),
    ("tonight", re.compile(r"\btonight\b", re.I)),
    ("today", re.compile(r"\b(?:today|earlier today)\b", re.I)),
    ("other_day", re.compile(r"\bthe\s+other\s+day\b", re.I)),
    ("weekday", re.compile(
        r"\b(?:on|last|this\s+past)\s+(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
        re.I)),
]


def plan_query(query: str, now: float, config: RankingConfig | None = None) -> QueryPlan:
    """Split a question into search text, an optional time window and a recency weight."""
    cfg = config or DEFAULT_CONFIG
    text = query or ""
    moment = datetime.fromtimestamp(now, tz=UTC)
    since: float | None = None
    until: float | None = None
    for expr, pattern in _TIME_PATTERNS if cfg.parse_time else ():
        match = pattern.search(text)
        if match is None:
            continue
        start, end = _window(expr, match, moment)
        since, until = start.timestamp(), min(end.timestamp(), now)
        text = text[: match.start()] + " " + text[match.end():]
        break
    without_time = search_form(text)
    current = since is None and _RECENCY_WORDS.search(text) is not None
    recency = 1.0 if since is not None else 0.5 if current else 0.0
    if not cfg.rewrite:
        text = without_time if cfg.strip_time else (query or "")
    else:
        text = _CHATTER.sub(" ", text)
    search_text = search_form(text)
    if not search_text:
        search_text = without_time or " ".join((query or "").split())
    return QueryPlan(search_text=search_text, since=since, until=until, recency_weight=recency,
                     names=count_names(search_text), current=current,
                     about_reply=_ABOUT_REPLY.search(query or "") is not None,
                     named=names_in(query or ""), asks_when=_ASKS_WHEN.search(query or "") is not None)


# ---------------------------------------------------------------------------------------
# Fusion
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankingConfig:
    """Every tunable part of the ranking, so the retrieval bench can measure each one.

    `fusion`: "rrf" (weighted reciprocal rank fusion, `rrf_k`) or "sum" (weighted sum of
    min-max normalized scores). BM25's weight is chosen per query from what the query looks
    like (`keyword_weight_for`): `current_keyword_weight` for a question about the present
    state of things (`QueryPlan.current`), `asked_keyword_weight` for one about what the bot
    said (`QueryPlan.about_reply`), `name_keyword_weight` for one that spells out names or
    rare-looking words (`QueryPlan.names`), `keyword_weight` otherwise (None: no change).
    The fused score of the bot's own replies (items of kind "reply") is scaled by
    `asked_reply_weight` when the question is about what the bot said, by `reply_weight`
    otherwise; `one_per_exchange` keeps only the best item of each stored exchange (the
    person's message and the bot's reply share a trace id), so k hits are k exchanges.
    `fusion_depth` keeps only each signal's best that many candidates (None: all of them).
    `window_bonus` is added (as a share of the best fused
    score) to items inside the plan's time window; `recency_boost` likewise scaled by
    `plan.recency_weight` and an exponential decay with `half_life_days`.
    `rewrite` lets `plan_query` strip chatter and time expressions from the search text,
    `strip_time` only the time expressions; `parse_time` lets it read time windows at all.
    `speaker_bonus` is added (as a share of the best fused score)
    to the candidates said by a person the question names (`said_by`), `dated_bonus` to those
    that name a date (metadata "dates", resolved when stored) when the question asks when.
    `keyword_scale` and `dense_scale` ("minmax" or "max") say how "sum" brings each signal's
    scores to [0, 1] before weighting them (`_signal`). A search takes the best
    max(`dense_candidates`, 10k) items by dense similarity as candidates (memory.semantic.search).
    `speaker_keyword_weight` is BM25's weight for a question naming a person who said some
    of the candidates (items with metadata "speaker"; None: as for any named question).

    The defaults are the winners of `bench/retrieval_eval.py` on the tuning splits of both
    of its datasets (docs/decisions/0006-hybrid-ranking.md): dense leads and BM25 weighs in
    by score sum; BM25 counts as much as dense for a named question, not at all for a
    question about now (BM25 finds the older statement of a changed fact), half for a
    question about the bot's words, whose replies count three times; one item per exchange.
    A fusion depth and stripping chatter or time words from the query did not win on both,
    so they are off; time windows and recency matter most for time questions. The speaker and
    dated bonuses won on LoCoMo's tuning part and change nothing on items without `speaker`
    or `dates` (docs/decisions/0028-locomo-recall.md); a BM25 weight of 2 for every named
    question won on LoCoMo but lost on the own sets' held-out split, so it stays 1 and is 2
    only for a question naming a person who said some of the candidates; 200 dense candidates
    and a speaker bonus of 0.4 won on LoCoMo's tuning part (the second round of 0028).
    """

    fusion: str = "sum"
    dense_weight: float = 1.0
    keyword_weight: float = 0.2
    name_keyword_weight: float | None = 1.0
    current_keyword_weight: float | None = 0.0
    asked_keyword_weight: float | None = 0.5
    reply_weight: float = 1.0
    asked_reply_weight: float = 3.0
    one_per_exchange: bool = True
    fusion_depth: int | None = None
    rrf_k: float = 10.0
    window_bonus: float = 1.0
    recency_boost: float = 0.5
    half_life_days: float = 7.0
    rewrite: bool = False
    strip_time: bool = False
    parse_time: bool = True
    speaker_bonus: float = 0.4
    dated_bonus: float = 0.3
    keyword_scale: str = "minmax"
    dense_scale: str = "minmax"
    dense_candidates: int = 200
    speaker_keyword_weight: float | None = 2.0


DEFAULT_CONFIG = RankingConfig()


def _finite(scores: Mapping[str, float]) -> dict[str, float]:
    return {
        k: float(v) for k, v in scores.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def exchange_of(metadata: Mapping[str, object]) -> str | None:
    """The exchange an item was stored from, for `one_per_exchange`: the trace id of the
    person's message (kind "exchange") and of the bot's reply (kind "reply"); None for other
    items (a fact the bot was asked to remember stands alone, though it shares the trace id)."""
    trace = metadata.get("trace_id")
    if metadata.get("kind") in ("exchange", "reply") and isinstance(trace, str) and trace:
        return trace
    return None


def keyword_weight_for(plan: QueryPlan, cfg: RankingConfig, *, names_a_speaker: bool = False) -> float:
    """BM25's weight in the fusion for this query: its own for a question about the present
    state of things (`current_keyword_weight`), more when it names people or things, and
    `speaker_keyword_weight` when it names a person who said some of the candidates."""
    if names_a_speaker and cfg.speaker_keyword_weight is not None:
        return cfg.speaker_keyword_weight
    if plan.current and cfg.current_keyword_weight is not None:
        return cfg.current_keyword_weight
    if plan.about_reply and cfg.asked_keyword_weight is not None:
        return cfg.asked_keyword_weight
    if plan.names and cfg.name_keyword_weight is not None:
        return cfg.name_keyword_weight
    return cfg.keyword_weight


Keyed = tuple[np.ndarray, np.ndarray]
"""Scores by integer key: (keys, values), two 1-D arrays of one length; keys are distinct."""


def _best_first(scores: Keyed, depth: int | None) -> Keyed:
    """The finite scores, best first (ties: smaller key first), at most `depth` of them."""
    keys, values = _finite_keyed(scores)
    order = np.lexsort((keys, -values))[:depth]
    return keys[order], values[order]


def _finite_keyed(scores: Keyed) -> Keyed:
    keys, values = np.asarray(scores[0], np.int64), np.asarray(scores[1], np.float64)
    finite = np.isfinite(values)
    return keys[finite], values[finite]


def _signal(scores: Keyed, weight: float, cfg: RankingConfig, scale: str = "minmax") -> Keyed:
    """One signal's share of the fused score, per key. With "sum" fusion `scale` says how the
    scores are brought to [0, 1]: "minmax" over the candidates, or "max" (divided by the best,
    so a weak match stays weak instead of becoming 0 or 1 by the spread of the others)."""
    if cfg.fusion == "sum" and cfg.fusion_depth is None:
        keys, values = _finite_keyed(scores)  # a sum over every candidate: their order does not matter
    else:
        keys, values = _best_first(scores, cfg.fusion_depth)
    if cfg.fusion == "rrf":
        return keys, weight / (cfg.rrf_k + np.arange(1, len(keys) + 1, dtype=np.float64))
    if not len(keys):
        return keys, values
    lo, hi = float(values.min()), float(values.max())
    if scale == "max" and hi > 0:
        return keys, weight * (values / hi)
    span = hi - lo
    return keys, weight * ((values - lo) / span) if span > 0 else np.full(len(keys), weight)


def fuse_keyed(
    plan: QueryPlan,
    *,
    dense: Keyed,
    keyword: Keyed,
    created_at: Keyed,
    now: float,
    k: int,
    mode: str = "hybrid",
    config: RankingConfig | None = None,
    replies: np.ndarray | None = None,
    exchanges: Keyed | None = None,
    said_by_named: np.ndarray | None = None,
    dated: np.ndarray | None = None,
) -> Keyed:
    """`fuse` over integer keys with numpy: the best `k` (keys, scores), best first.

    The same ranking as `fuse` (which calls this), with ties broken by the smaller key where
    `fuse` breaks them by id. `created_at` holds (keys, epoch seconds); as in `fuse`, the
    keys inside the plan's time window join the candidates. `replies` holds the keys of the
    bot's own replies (kind "reply"), whose fused score is scaled by `asked_reply_weight` when
    the plan asks what the bot said and by `reply_weight` otherwise (None: none are replies).
    `exchanges` holds (keys, exchange ids >= 0): with `one_per_exchange`, only the best key
    of each exchange is kept (keys without an exchange id stand alone). `said_by_named` holds
    the keys said by a person the question names, `dated` those that name a date: found
    candidates among them get `speaker_bonus`, and `dated_bonus` when the plan asks when.
    """
    if mode not in ("dense", "keyword", "hybrid"):
        raise ValueError(f"unknown ranking mode: {mode!r}")
    cfg = config or DEFAULT_CONFIG
    if cfg.fusion not in ("rrf", "sum"):
        raise ValueError(f"unknown fusion method: {cfg.fusion!r}")
    if {cfg.keyword_scale, cfg.dense_scale} - {"minmax", "max"}:
        raise ValueError(f"unknown score scaling: {cfg.keyword_scale!r} / {cfg.dense_scale!r}")
    empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
    if k <= 0:
        return empty
    parts: list[Keyed] = []
    if mode in ("dense", "hybrid"):
        parts.append(_signal(dense, cfg.dense_weight if mode == "hybrid" else 1.0, cfg, cfg.dense_scale))
    if mode in ("keyword", "hybrid"):
        names_a_speaker = said_by_named is not None and len(said_by_named) > 0
        weight = keyword_weight_for(plan, cfg, names_a_speaker=names_a_speaker) if mode == "hybrid" else 1.0
        parts.append(_signal(keyword, weight, cfg, cfg.keyword_scale))
    windowed = plan.since is not None or plan.until is not None
    timed = windowed or plan.recency_weight > 0
    times = _finite_keyed(created_at) if timed else empty  # in no particular order
    inside = empty[0]
    if windowed and cfg.window_bonus > 0:
        lo = plan.since if plan.since is not None else -math.inf
        hi = plan.until if plan.until is not None else math.inf
        inside = times[0][(times[1] >= lo) & (times[1] <= hi)]
    found = np.concatenate([p[0] for p in parts]) if parts else empty[0]
    keys, slot = np.unique(np.concatenate([found, inside]), return_inverse=True)
    # bincount adds in order, dense before keyword: the same sums as adding them one by one
    values = np.concatenate([*(p[1] for p in parts), np.zeros(len(inside))])
    base = np.bincount(slot, weights=values, minlength=len(keys)).astype(np.float64, copy=False)
    factor = cfg.asked_reply_weight if plan.about_reply else cfg.reply_weight
    if replies is not None and len(replies) and factor != 1.0:
        base[np.isin(keys, replies)] *= factor
    bonuses = [(said_by_named, cfg.speaker_bonus), (dated if plan.asks_when else None, cfg.dated_bonus)]
    if any(chosen is not None and len(chosen) and bonus > 0 for chosen, bonus in bonuses) and len(found):
        best = float(base.max()) or 1.0
        for chosen, bonus in bonuses:
            if chosen is not None and len(chosen) and bonus > 0:
                base[np.isin(keys, chosen) & (np.bincount(slot[: len(found)], minlength=len(keys)) > 0)] += bonus * best
    if timed:
        scored = np.bincount(slot[: len(found)], minlength=len(keys)) > 0
        scale = float(base[scored].max()) if scored.any() else 0.0
        scale = scale or 1.0
        if len(inside):
            base[np.bincount(slot[len(found):], minlength=len(keys)) > 0] += cfg.window_bonus * scale
        if plan.recency_weight > 0 and cfg.recency_boost > 0 and len(times[0]):
            order = np.argsort(times[0])
            at = np.minimum(np.searchsorted(times[0], keys, sorter=order), len(order) - 1)
            has = times[0][order[at]] == keys
            age_days = np.maximum(0.0, (now - times[1][order[at[has]]]) / DAY)
            decay = 0.5 ** (age_days / max(cfg.half_life_days, 1e-6))
            base[has] += plan.recency_weight * cfg.recency_boost * scale * decay
    order = np.lexsort((keys, -base))
    if cfg.one_per_exchange and exchanges is not None and len(exchanges[0]) and len(keys):
        # each key its own group (distinct negative ids) unless an exchange id says otherwise
        group = -1 - np.arange(len(keys), dtype=np.int64)
        at = np.minimum(np.searchsorted(keys, exchanges[0]), len(keys) - 1)
        known = keys[at] == exchanges[0]
        group[at[known]] = np.asarray(exchanges[1], np.int64)[known]
        _, first = np.unique(group[order], return_index=True)
        order = order[np.sort(first)]
    best = order[:k]
    return keys[best], base[best]


def fuse(
    plan: QueryPlan,
    *,
    dense: Mapping[str, float],
    keyword: Mapping[str, float],
    created_at: Mapping[str, float],
    now: float,
    k: int,
    mode: str = "hybrid",
    config: RankingConfig | None = None,
    kinds: Mapping[str, str] | None = None,
    exchanges: Mapping[str, str] | None = None,
    speakers: Mapping[str, str] | None = None,
    dated: Collection[str] | None = None,
) -> list[tuple[str, float]]:
    """Rank candidates, best first, at most `k` of them, as (id, score).

    `dense` maps id -> similarity (higher is better), `keyword` id -> BM25 score, and
    `created_at` id -> epoch seconds (pass all of the user's items: when the plan has a
    time window, items inside it are candidates even if neither search found them).
    `mode` is "dense" or "keyword" (one signal alone) or "hybrid" (both, fused per
    `config`, default `DEFAULT_CONFIG`). The plan's window and recency apply in every mode.
    `kinds` maps id -> the item's kind (metadata "kind"); items of kind "reply" are weighted
    as `fuse_keyed` says. `exchanges` maps id -> the exchange it was stored from (metadata
    "trace_id"): with `one_per_exchange` a ranking holds one item of each exchange. `speakers`
    maps id -> who said it (metadata "speaker") and `dated` holds the ids that name a date
    (metadata "dates"): `speaker_bonus` and `dated_bonus` weigh them. Ties are broken by id. The work is `fuse_keyed`'s, over the ids'
    positions in id order.
    """
    scores = [_finite(dense), _finite(keyword), _finite(created_at)]
    ids = sorted(set().union(*scores))
    position = {item_id: n for n, item_id in enumerate(ids)}

    def keyed(found: dict[str, float]) -> Keyed:
        return (np.fromiter((position[i] for i in found), np.int64, len(found)),
                np.fromiter(found.values(), np.float64, len(found)))

    replies = np.fromiter((position[i] for i, kind in (kinds or {}).items() if kind == "reply" and i in position),
                          np.int64)
    exchange_of = {i: e for i, e in (exchanges or {}).items() if i in position}
    exchange_ids = {e: n for n, e in enumerate(sorted(set(exchange_of.values())))}
    grouped = (np.fromiter((position[i] for i in exchange_of), np.int64, len(exchange_of)),
               np.fromiter((exchange_ids[e] for e in exchange_of.values()), np.int64, len(exchange_of)))
    named = np.fromiter((position[i] for i, who in (speakers or {}).items() if i in position and said_by(plan, who)),
                        np.int64)
    timed_ids = np.fromiter((position[i] for i in (dated or ()) if i in position), np.int64)
    keys, fused = fuse_keyed(plan, dense=keyed(scores[0]), keyword=keyed(scores[1]),
                             created_at=keyed(scores[2]), now=now, k=k, mode=mode, config=config,
                             replies=replies, exchanges=grouped, said_by_named=named, dated=timed_ids)
    return [(ids[key], score) for key, score in zip(keys.tolist(), fused.tolist(), strict=True)]

