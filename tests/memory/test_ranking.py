"""Specification of memory.semantic.ranking: the tokenizer, query planning, fusion, near-duplicate removal
(BM25 itself: test_keyword_index.py)."""

from __future__ import annotations

import math
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from memory.semantic import ranking
from memory.semantic.ranking import (
    DEFAULT_CONFIG,
    QueryPlan,
    RankingConfig,
    count_names,
    exchange_of,
    fuse,
    fuse_keyed,
    keyword_weight_for,
    make_tokenizer,
    plan_query,
    tokenize,
)

DAY = 86_400.0
# Wednesday 14 October 2026, noon UTC.
NOW = datetime(2026, 10, 14, 12, 0, tzinfo=UTC).timestamp()


def at(year: int, month: int, day: int, hour: int = 0) -> float:
    return datetime(year, month, day, hour, tzinfo=UTC).timestamp()


NO_TIME = QueryPlan(search_text="gym", since=None, until=None, recency_weight=0.0)


# -- tokenizer -------------------------------------------------------------------------


def test_tokenize_folds_case_punctuation_and_plurals() -> None:
    assert tokenize("GYMS!!! Cats, running.") == ["gym", "cat", "run"]


def test_tokenize_drops_zero_width_and_bidi_characters() -> None:
    assert tokenize("g\u200by\u200dm \u202eBerlin\u202c") == ["gym", "berlin"]


def test_tokenize_stems_english_words_and_leaves_other_scripts_alone() -> None:
    assert tokenize("Ich wohne in Köln, 東京 tokyo") == ["ich", "wohn", "köln", "東京", "tokyo"]


def test_ascii_text_tokenizes_as_the_full_unicode_normalization_would() -> None:
    ascii_text = "".join(chr(c) for c in range(128)) + " It's DON'T Priya's 42nd"
    assert ranking._clean(ascii_text) == ranking._clean_unicode(ascii_text)
    assert tokenize("Priya's SALSA-lessons") == tokenize("Priya’s SALSA-lessons​")  # ASCII and not


def test_snowball_stemming_joins_the_forms_of_a_verb() -> None:
    assert tokenize("adopted adopting adopts") == ["adopt"] * 3
    assert tokenize("recommended recommendation")[0] == "recommend"


def test_the_light_stemmer_and_no_stemming_remain_as_variants() -> None:
    assert make_tokenizer("light")("adopted lessons") == ["adopt", "lesson"]
    assert make_tokenizer("none")("adopted lessons") == ["adopted", "lessons"]
    assert make_tokenizer(stop_words=False)("the cat") == ["the", "cat"]
    with pytest.raises(ValueError, match="stemming"):
        make_tokenizer("porter")


def test_tokenizing_words_that_never_repeat_keeps_nothing_of_them() -> None:
    """Each question of a busy server brings new words (names, numbers): memory held after
    tokenizing them must not grow with how many there were (PyStemmer's cache, on by default,
    kept 10,000 of them per thread)."""
    tokenize("warm up the stemmer of this thread")
    texts = [f"asked q{n} about item{n}" for n in range(20_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for text in texts:
            tokenize(text)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 50_000  # 40,000 distinct words: a cache of them is megabytes


def test_tokenize_is_safe_from_many_threads() -> None:
    words = [f"running{n} swimming{n} adopted" for n in range(200)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(tokenize, words))
    assert all(r[2] == "adopt" and r[0].startswith("running") for r in results)


def test_a_huge_text_tokenizes_without_error() -> None:
    assert len(tokenize("lessons " * 100_000)) == 100_000


# -- plan_query ---------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "names"), [
    ("When did Priya start her salsa lessons?", 1),
    ("what did Priya's partner cook for us?", 1),
    ("which keyboard broke? my K2", 1),
    ("I met Tom. Then Anna came", 2),
    ("Where do I live now?", 0),
    ("what did I say on Monday in October?", 0),
    ("where do i live now", 0),
    ("", 0),
])
def test_names_and_rare_looking_words_are_counted(query: str, names: int) -> None:
    assert count_names(query) == names
    assert plan_query(query, NOW).names == names


def test_a_query_with_a_name_gives_bm25_its_name_weight() -> None:
    cfg = replace(DEFAULT_CONFIG, keyword_weight=0.2, name_keyword_weight=0.9)
    assert keyword_weight_for(plan_query("When did Priya start salsa?", NOW), cfg) == 0.9
    assert keyword_weight_for(plan_query("when did my sister start salsa?", NOW), cfg) == 0.2
    assert keyword_weight_for(plan_query("When did Priya start?", NOW),
                              replace(cfg, name_keyword_weight=None)) == 0.2


def test_the_name_weight_lets_the_keyword_match_win_for_a_named_query() -> None:
    dense = {"a": 0.9, "c": 0.85, "b": 0.8}
    keyword = {"b": 5.0}
    light = replace(DEFAULT_CONFIG, keyword_weight=0.1, name_keyword_weight=None)
    heavy = replace(light, name_keyword_weight=2.0)
    plan = plan_query("what did Priya adopt", NOW)
    assert fuse(plan, dense=dense, keyword=keyword, created_at={}, now=NOW, k=2, config=light)[0][0] == "a"
    assert fuse(plan, dense=dense, keyword=keyword, created_at={}, now=NOW, k=2, config=heavy)[0][0] == "b"


@pytest.mark.parametrize(("query", "about_reply"), [
    ("What did you recommend for dinner last week?", True),
    ("Which Zafón book did you recommend to me?", True),
    ("what did you tell me to pack for the rainy hike?", True),
    ("What gift did you suggest for Priya?", True),
    ("what was your advice about the tomatoes", True),
    ("what did I tell you about Priya?", False),
    ("do you remember my cat?", False),
    ("What did Priya recommend?", False),
    ("", False),
])
def test_a_question_about_what_the_bot_said_is_recognised(query: str, about_reply: bool) -> None:
    assert plan_query(query, NOW).about_reply is about_reply


def test_a_question_about_the_present_is_current_unless_it_names_a_time() -> None:
    assert plan_query("Where do I live now?", NOW).current
    assert plan_query("what does Priya do for work these days", NOW).current
    assert not plan_query("where did I say I live last week now?", NOW).current
    assert not plan_query("Where does Priya take salsa lessons?", NOW).current


def test_each_kind_of_question_gets_its_own_bm25_weight() -> None:
    cfg = replace(DEFAULT_CONFIG, keyword_weight=0.2, name_keyword_weight=1.5, current_keyword_weight=0.0,
                  asked_keyword_weight=0.3)
    assert keyword_weight_for(plan_query("What does Priya do for work now?", NOW), cfg) == 0.0
    assert keyword_weight_for(plan_query("What gift did you suggest for Priya?", NOW), cfg) == 0.3
    assert keyword_weight_for(plan_query("Where does Priya take salsa lessons?", NOW), cfg) == 1.5
    assert keyword_weight_for(plan_query("where does my sister take lessons?", NOW), cfg) == 0.2


def test_the_bots_replies_rank_higher_only_when_the_question_is_about_them() -> None:
    dense = {"message": 0.9, "reply": 0.8}
    kinds = {"reply": "reply", "message": "exchange"}
    cfg = replace(DEFAULT_CONFIG, fusion="rrf", asked_reply_weight=2.0, one_per_exchange=False)
    asked = plan_query("what quiche recipe did you give me?", NOW)
    told = plan_query("what did I have for dinner?", NOW)
    assert [i for i, _ in fuse(asked, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=cfg,
                               kinds=kinds)] == ["reply", "message"]
    assert [i for i, _ in fuse(told, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=cfg,
                               kinds=kinds)] == ["message", "reply"]
    assert [i for i, _ in fuse(asked, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=cfg)] \
        == ["message", "reply"]


def test_reply_weight_below_one_ranks_the_bots_replies_lower() -> None:
    dense = {"reply": 0.9, "message": 0.8}
    kinds = {"reply": "reply"}
    cfg = replace(DEFAULT_CONFIG, fusion="rrf", reply_weight=0.5)
    ranked = fuse(NO_TIME, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=cfg, kinds=kinds)
    assert [i for i, _ in ranked] == ["message", "reply"]


def test_one_per_exchange_keeps_only_the_best_item_of_each_exchange() -> None:
    dense = {"q1": 0.9, "r1": 0.85, "q2": 0.8, "alone": 0.75, "r2": 0.7, "q3": 0.6}
    exchanges = {"q1": "t1", "r1": "t1", "q2": "t2", "r2": "t2", "q3": "t3", "unknown": "t9"}
    cfg = replace(DEFAULT_CONFIG, one_per_exchange=True)
    ranked = fuse(NO_TIME, dense=dense, keyword={}, created_at={}, now=NOW, k=4, config=cfg, exchanges=exchanges)
    assert [i for i, _ in ranked] == ["q1", "q2", "alone", "q3"]
    every = fuse(NO_TIME, dense=dense, keyword={}, created_at={}, now=NOW, k=4,
                 config=replace(cfg, one_per_exchange=False), exchanges=exchanges)
    assert [i for i, _ in every] == ["q1", "r1", "q2", "alone"]


def test_an_exchange_is_the_message_and_the_reply_of_one_trace_and_a_fact_stands_alone() -> None:
    assert exchange_of({"trace_id": "t1", "kind": "exchange"}) == "t1"
    assert exchange_of({"trace_id": "t1", "kind": "reply"}) == "t1"
    assert exchange_of({"trace_id": "t1", "kind": "fact"}) is None
    assert exchange_of({"kind": "reply"}) is None
    assert exchange_of({"trace_id": 7, "kind": "reply"}) is None

def test_one_per_exchange_in_fuse_keyed_ignores_exchange_keys_that_are_not_candidates() -> None:
    cfg = replace(DEFAULT_CONFIG, one_per_exchange=True)
    keys, _ = fuse_keyed(NO_TIME, dense=(np.array([5, 3, 8]), np.array([0.9, 0.8, 0.7])),
                         keyword=(np.zeros(0, np.int64), np.zeros(0)), created_at=(np.zeros(0, np.int64), np.zeros(0)),
                         now=NOW, k=5, config=cfg,
                         exchanges=(np.array([5, 8, 99, 3]), np.array([0, 0, 0, 1])))
    assert keys.tolist() == [5, 3]


def test_fusion_depth_keeps_only_each_signals_best_candidates() -> None:
    dense = {"a": 0.9, "b": 0.8, "c": 0.1}
    keyword = {"c": 0.5, "d": 0.4, "e": 0.3}
    cfg = replace(DEFAULT_CONFIG, fusion_depth=2)
    ranked = fuse(NO_TIME, dense=dense, keyword=keyword, created_at={}, now=NOW, k=10, config=cfg)
    assert {i for i, _ in ranked} == {"a", "b", "c", "d"}
    everything = fuse(NO_TIME, dense=dense, keyword=keyword, created_at={}, now=NOW, k=10,
                      config=replace(cfg, fusion_depth=None))
    assert {i for i, _ in everything} == {"a", "b", "c", "d", "e"}


def test_yesterday_is_the_whole_previous_day() -> None:
    plan = plan_query("what was I anxious about yesterday?", NOW)
    assert (plan.since, plan.until) == (at(2026, 10, 13), at(2026, 10, 14))
    assert plan.recency_weight > 0


def test_last_week_is_the_previous_monday_to_sunday() -> None:
    plan = plan_query("what did I say last week about the gym?", NOW)
    assert (plan.since, plan.until) == (at(2026, 10, 5), at(2026, 10, 12))


def test_on_monday_is_the_most_recent_past_monday() -> None:
    plan = plan_query("what did I say on Monday about the interview?", NOW)
    assert (plan.since, plan.until) == (at(2026, 10, 12), at(2026, 10, 13))


def test_two_days_ago_covers_that_day() -> None:
    plan = plan_query("what did I tell you two days ago?", NOW)
    assert plan.since is not None and plan.until is not None
    assert plan.since <= at(2026, 10, 12, 15) <= plan.until
    assert plan.until <= NOW


def test_a_question_without_time_has_no_window_and_no_recency() -> None:
    plan = plan_query("what's my cat called?", NOW)
    assert (plan.since, plan.until, plan.recency_weight) == (None, None, 0.0)
    assert "cat" in plan.search_text


def test_words_about_the_present_ask_for_recency_without_a_window() -> None:
    plan = plan_query("where do I live these days?", NOW)
    assert plan.since is None and plan.until is None
    assert plan.recency_weight > 0


def test_rewriting_strips_chatter_and_time_words_when_enabled() -> None:
    plan = plan_query("What did I tell you last week about the gym?", NOW, replace(DEFAULT_CONFIG, rewrite=True))
    assert plan.search_text == "the gym"


def test_by_default_the_search_text_is_the_question_as_asked() -> None:
    plan = plan_query("What did I tell you last week about the gym?", NOW)
    assert plan.search_text == "What did I tell you last week about the gym"


def test_strip_time_removes_only_the_time_expression() -> None:
    plan = plan_query("What did I tell you last week about the gym?", NOW, replace(DEFAULT_CONFIG, strip_time=True))
    assert plan.search_text == "What did I tell you about the gym"


def test_time_parsing_can_be_turned_off() -> None:
    plan = plan_query("what did I say yesterday?", NOW, replace(DEFAULT_CONFIG, parse_time=False))
    assert plan.since is None and plan.until is None


@pytest.mark.parametrize("query", ["", "   ", "\u200b\u202e", "?", "\U0001f600" * 500, "x" * 100_000])
def test_blank_or_hostile_queries_plan_without_raising(query: str) -> None:
    plan = plan_query(query, NOW)
    assert isinstance(plan.search_text, str)
    assert plan.since is None


# -- fuse ---------------------------------------------------------------------------------


def test_dense_mode_ranks_by_dense_only() -> None:
    ranked = fuse(NO_TIME, dense={"a": 0.2, "b": 0.9}, keyword={"c": 9.0}, created_at={}, now=NOW, k=5,
                  mode="dense")
    assert [i for i, _ in ranked] == ["b", "a"]


def test_keyword_mode_ranks_by_keyword_only() -> None:
    ranked = fuse(NO_TIME, dense={"a": 0.9}, keyword={"b": 1.0, "c": 3.0}, created_at={}, now=NOW, k=5,
                  mode="keyword")
    assert [i for i, _ in ranked] == ["c", "b"]


def test_hybrid_mode_puts_an_item_both_searches_found_first() -> None:
    # (a few weak candidates too: min-max normalizing gives the weakest of each signal 0)
    ranked = fuse(NO_TIME, dense={"a": 0.9, "both": 0.85, "x": 0.1}, keyword={"both": 5.0, "c": 6.0, "y": 0.5},
                  created_at={}, now=NOW, k=5, mode="hybrid")
    assert ranked[0][0] == "both"
    assert {i for i, _ in ranked} == {"a", "both", "c", "x", "y"}


def test_sum_fusion_is_available_as_configuration() -> None:
    cfg = replace(DEFAULT_CONFIG, fusion="sum", keyword_weight=1.0)
    ranked = fuse(NO_TIME, dense={"a": 0.9, "b": 0.5, "c": 0.1}, keyword={"b": 10.0, "c": 1.0},
                  created_at={}, now=NOW, k=3, config=cfg)
    assert [i for i, _ in ranked] == ["b", "a", "c"]
    assert ranked[0][1] == pytest.approx(1.5)


def test_fuse_returns_at_most_k_best_first() -> None:
    dense = {str(n): n / 100 for n in range(50)}
    ranked = fuse(NO_TIME, dense=dense, keyword={}, created_at={}, now=NOW, k=3)
    assert [i for i, _ in ranked] == ["49", "48", "47"]
    assert ranked[0][1] >= ranked[1][1] >= ranked[2][1]


def test_ties_are_broken_by_id_in_fuse_and_by_the_smaller_key_in_fuse_keyed() -> None:
    assert [i for i, _ in fuse(NO_TIME, dense={"b": 0.5, "a": 0.5, "c": 0.5}, keyword={}, created_at={},
                               now=NOW, k=3)] == ["a", "b", "c"]
    keys, _ = fuse_keyed(NO_TIME, dense=(np.array([9, 2, 5]), np.array([0.5, 0.5, 0.5])),
                         keyword=(np.array([7]), np.array([1.0])), created_at=(np.zeros(0), np.zeros(0)),
                         now=NOW, k=4, mode="dense")
    assert keys.tolist() == [2, 5, 9]


def test_unknown_mode_or_fusion_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        fuse(NO_TIME, dense={}, keyword={}, created_at={}, now=NOW, k=5, mode="magic")
    with pytest.raises(ValueError, match="fusion"):
        fuse(NO_TIME, dense={"a": 1.0}, keyword={}, created_at={}, now=NOW, k=5,
             config=RankingConfig(fusion="magic"))


def test_recency_does_not_reorder_a_question_without_time() -> None:
    created = {"old": NOW - 40 * DAY, "new": NOW - 1 * DAY}
    ranked = fuse(NO_TIME, dense={"old": 0.80, "new": 0.79}, keyword={}, created_at=created, now=NOW, k=2)
    assert [i for i, _ in ranked] == ["old", "new"]


def test_recency_lifts_the_newer_item_for_a_question_about_now() -> None:
    plan = plan_query("where do I live now?", NOW)
    created = {"old": NOW - 40 * DAY, "new": NOW - 1 * DAY}
    dense = {"old": 0.80, "new": 0.79, "weak": 0.30}
    ranked = fuse(plan, dense=dense, keyword={}, created_at={**created, "weak": NOW}, now=NOW, k=2)
    assert [i for i, _ in ranked] == ["new", "old"]


def test_items_inside_the_time_window_win_and_join_the_candidates() -> None:
    plan = plan_query("what was I worried about yesterday?", NOW)
    created = {"match": NOW - 30 * DAY, "yesterday": at(2026, 10, 13, 22)}
    ranked = fuse(plan, dense={"match": 0.9}, keyword={}, created_at=created, now=NOW, k=2)
    assert [i for i, _ in ranked] == ["yesterday", "match"]


def test_empty_candidates_or_k_zero_give_an_empty_list() -> None:
    assert fuse(NO_TIME, dense={}, keyword={}, created_at={}, now=NOW, k=5) == []
    assert fuse(NO_TIME, dense={"a": 1.0}, keyword={"a": 1.0}, created_at={}, now=NOW, k=0) == []


def test_non_finite_scores_and_times_are_ignored() -> None:
    plan = plan_query("what did I say yesterday?", NOW)
    ranked = fuse(plan, dense={"a": math.nan, "b": 0.5}, keyword={"c": math.inf},
                  created_at={"b": math.nan, "d": -math.inf}, now=NOW, k=5)
    assert [i for i, _ in ranked] == ["b"]


# -- who said it, and when -------------------------------------------------------------


def test_the_names_a_question_spells_out_are_kept_case_folded() -> None:
    assert ranking.names_in("What did Melanie paint after Caroline's talk?") == {"melanie", "caroline"}
    assert ranking.names_in("When did I go?") == frozenset()
    assert ranking.names_in("") == frozenset()


def test_an_item_is_said_by_a_named_person_when_a_word_of_the_speaker_is_named() -> None:
    plan = plan_query("What did Melanie paint?", NOW)
    assert ranking.said_by(plan, "Melanie")
    assert ranking.said_by(plan, "melanie Smith")
    assert not ranking.said_by(plan, "Caroline")
    assert not ranking.said_by(plan, None)
    assert not ranking.said_by(plan_query("what did I paint?", NOW), "Melanie")


@pytest.mark.parametrize(("query", "asks_when"), [
    ("When did Caroline go to the support group?", True),
    ("How long ago did Melanie start painting?", True),
    ("In what year did Jon move?", True),
    ("Which month did the trip happen?", True),
    ("What did Melanie paint when she was young?", False),
    ("Where does Priya live?", False),
    ("", False),
])
def test_a_question_asking_for_a_time_is_recognised(query: str, asks_when: bool) -> None:
    assert plan_query(query, NOW).asks_when is asks_when


def test_the_speaker_bonus_lifts_what_the_named_person_said() -> None:
    dense = {"other": 0.9, "hers": 0.85, "far": 0.1}
    speakers = {"other": "Caroline", "hers": "Melanie", "far": "Caroline"}
    plan = plan_query("What did Melanie paint?", NOW)
    off = replace(DEFAULT_CONFIG, speaker_bonus=0.0)
    on = replace(DEFAULT_CONFIG, speaker_bonus=0.2)
    assert fuse(plan, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=off, speakers=speakers)[0][0] == "other"
    assert fuse(plan, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=on, speakers=speakers)[0][0] == "hers"


def test_the_dated_bonus_lifts_dated_items_only_for_a_question_asking_when() -> None:
    dense = {"undated": 0.9, "dated": 0.85, "far": 0.1}
    cfg = replace(DEFAULT_CONFIG, dated_bonus=0.2, speaker_bonus=0.0)
    when = plan_query("When did Melanie paint the sunrise?", NOW)
    what = plan_query("What did Melanie paint?", NOW)
    assert fuse(when, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=cfg, dated={"dated"})[0][0] == "dated"
    assert fuse(what, dense=dense, keyword={}, created_at={}, now=NOW, k=2, config=cfg, dated={"dated"})[0][0] == "undated"


def test_bonuses_never_bring_in_an_item_neither_search_found() -> None:
    plan = plan_query("When did Melanie paint?", NOW)
    cfg = replace(DEFAULT_CONFIG, dated_bonus=1.0, speaker_bonus=1.0)
    ranked = fuse(plan, dense={"found": 0.5}, keyword={}, created_at={}, now=NOW, k=5, config=cfg,
                  speakers={"found": "Caroline", "unfound": "Melanie"}, dated={"unfound"})
    assert [i for i, _ in ranked] == ["found"]


def test_keyword_scores_scaled_by_their_max_keep_a_weak_match_weak_not_zero() -> None:
    keyword = {"a": 8.0, "b": 4.0, "c": 2.0}
    cfg = replace(DEFAULT_CONFIG, keyword_weight=1.0, name_keyword_weight=None)
    minmax = dict(fuse(NO_TIME, dense={}, keyword=keyword, created_at={}, now=NOW, k=10,
                       config=replace(cfg, keyword_scale="minmax")))
    by_max = dict(fuse(NO_TIME, dense={}, keyword=keyword, created_at={}, now=NOW, k=10,
                       config=replace(cfg, keyword_scale="max")))
    assert minmax == pytest.approx({"a": 1.0, "b": 1 / 3, "c": 0.0})
    assert by_max == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.25})


def test_dense_scores_scaled_by_their_max_keep_their_ratios() -> None:
    ranked = dict(fuse(NO_TIME, dense={"a": 0.8, "b": 0.4}, keyword={}, created_at={}, now=NOW, k=10,
                       config=replace(DEFAULT_CONFIG, dense_scale="max")))
    assert ranked == pytest.approx({"a": 1.0, "b": 0.5})


def test_one_keyword_match_or_only_zero_scores_are_scaled_without_dividing_by_zero() -> None:
    cfg = replace(DEFAULT_CONFIG, keyword_weight=1.0, name_keyword_weight=None, keyword_scale="max")
    assert dict(fuse(NO_TIME, dense={}, keyword={"a": 3.0}, created_at={}, now=NOW, k=10, config=cfg)) == {"a": 1.0}
    zeros = dict(fuse(NO_TIME, dense={}, keyword={"a": 0.0, "b": 0.0}, created_at={}, now=NOW, k=10, config=cfg))
    assert zeros == {"a": 1.0, "b": 1.0}  # no spread, no best: each counts whole, as with min-max


def test_an_unknown_score_scaling_is_refused() -> None:
    with pytest.raises(ValueError, match="scaling"):
        fuse(NO_TIME, dense={"a": 1.0}, keyword={}, created_at={}, now=NOW, k=5,
             config=replace(DEFAULT_CONFIG, keyword_scale="log"))


def test_bm25_weighs_speaker_keyword_weight_when_the_question_names_a_speaker_of_the_candidates() -> None:
    plan = plan_query("What did Caroline paint?", NOW)
    dense, keyword = {"a": 0.9, "b": 0.1}, {"a": 1.0, "b": 5.0}
    cfg = replace(DEFAULT_CONFIG, speaker_bonus=0.0, name_keyword_weight=0.5, speaker_keyword_weight=3.0)
    spoken = fuse(plan, dense=dense, keyword=keyword, created_at={}, now=NOW, k=2, config=cfg,
                  speakers={"a": "Caroline", "b": "Melanie"})
    assert dict(spoken) == pytest.approx({"a": 1.0, "b": 3.0})  # BM25 at 3, dense at 1 (min-max)
    unspoken = fuse(plan, dense=dense, keyword=keyword, created_at={}, now=NOW, k=2, config=cfg,
                    speakers={"a": "Melanie", "b": "Melanie"})  # she said none of them
    assert dict(unspoken) == pytest.approx({"a": 1.0, "b": 0.5})
    without = fuse(plan, dense=dense, keyword=keyword, created_at={}, now=NOW, k=2, config=cfg)  # no speakers kept
    assert dict(without) == pytest.approx({"a": 1.0, "b": 0.5})
