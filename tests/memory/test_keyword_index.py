"""Specification of memory.semantic.keyword_index: incremental Okapi BM25 over rows, scored under a mask."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from memory.semantic.keyword_index import MAX_HIDDEN_TERMS, KeywordIndex, hidden_term, hidden_terms
from memory.semantic.ranking import tokenize


def index_of(*texts: str) -> KeywordIndex:
    index = KeywordIndex()
    for row, text in enumerate(texts):
        index.add(row, text)
    return index


def scores(index: KeywordIndex, query: str, mask: np.ndarray | None = None) -> dict[int, float]:
    rows, values = index.scores(query, np.ones(len(index), bool) if mask is None else mask)
    return dict(zip(rows.tolist(), values.tolist(), strict=True))


def test_a_document_with_the_query_term_outranks_one_without() -> None:
    found = scores(index_of("I joined a bouldering gym", "my cat hid under the bed"), "gym")
    assert found[0] > 0
    assert 1 not in found


def test_a_rare_term_weighs_more_than_a_common_one() -> None:
    index = index_of("gym gym session", "gym session about kafka", "gym again", "gym once more")
    found = scores(index, "gym kafka")
    assert max(found, key=found.__getitem__) == 1
    assert scores(index, "kafka")[1] > scores(index, "gym")[1]


def test_the_score_is_lucenes_bm25_with_k1_1_2_and_b_0_75() -> None:
    index = index_of("kafka kafka streams", "gym")  # lengths 3 and 1, average 2
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    tf, norm = 2.0, 1.2 * (1 - 0.75 + 0.75 * 3 / 2)
    assert scores(index, "kafka")[0] == pytest.approx(idf * tf * 2.2 / (tf + norm))


def test_matching_ignores_case_punctuation_and_plural() -> None:
    assert set(scores(index_of("Gyms are expensive in Berlin.", "nothing here"), "the GYM?")) == {0}


def test_empty_index_and_empty_query_give_no_scores() -> None:
    assert scores(index_of(), "gym") == {}
    assert scores(index_of("gym"), "") == {}
    assert scores(index_of("gym"), "   ?!  ") == {}


def test_hostile_unicode_neither_raises_nor_matches_everything() -> None:
    index = index_of("\u202e\u200b\u0000 tëst \U0001f600", "plain words")
    found = scores(index, "\u202e\ufeff te\u0301st \U0001f600 \ud7ff")
    assert 1 not in found
    assert all(math.isfinite(v) for v in found.values())


def test_scores_under_a_mask_equal_those_of_an_index_of_only_those_rows() -> None:
    texts = ["my gym in Berlin", "gym shoes", "the cat sleeps", "Berlin cat cafe", "gym cat gym", "rain"]
    keep = np.array([True, False, True, True, False, True])
    alone = index_of(*(t for t, k in zip(texts, keep, strict=True) if k))

    masked = scores(index_of(*texts), "gym cat Berlin", keep)

    rows = np.flatnonzero(keep).tolist()
    assert masked == pytest.approx({rows[r]: v for r, v in scores(alone, "gym cat Berlin").items()})


def test_rows_added_after_a_search_score_as_if_indexed_all_at_once() -> None:
    grown = index_of("kafka streams", "gym")
    scores(grown, "kafka")
    grown.add(2, "kafka on a laptop")
    grown.add(3, "more gym")

    assert scores(grown, "kafka gym") == pytest.approx(
        scores(index_of("kafka streams", "gym", "kafka on a laptop", "more gym"), "kafka gym"))


def test_masked_out_rows_never_score() -> None:
    index = index_of("deleted kafka note", "kept kafka note")
    assert set(scores(index, "kafka", np.array([False, True]))) == {1}


def test_rows_must_be_added_in_order() -> None:
    index = index_of("first")
    with pytest.raises(ValueError, match="expected row 1"):
        index.add(5, "skipped ahead")


def test_a_huge_document_is_indexed_and_scored_finitely() -> None:
    index = index_of(" ".join(f"word{n}" for n in range(20_000)) + " kafka", "kafka")
    found = scores(index, "kafka word7")
    assert set(found) == {0, 1}
    assert all(math.isfinite(v) and v > 0 for v in found.values())


def test_a_state_of_kept_rows_scores_as_an_index_built_from_those_rows_alone() -> None:
    texts = ["sailing to Oslo", "my cat likes tuna", "sailing boat repairs", "tuna salad for lunch"]
    keep = np.array([True, False, True, True])
    restored = KeywordIndex.from_state(index_of(*texts).state(keep))

    assert len(restored) == 3
    assert scores(restored, "sailing tuna") == pytest.approx(scores(index_of(texts[0], texts[2], texts[3]),
                                                                     "sailing tuna"))
    assert scores(restored, "cat") == {}


def test_a_state_of_a_restored_index_grown_since_scores_as_one_built_from_its_kept_rows() -> None:
    texts = ["sailing to Oslo", "my cat likes tuna", "sailing boat repairs", "tuna salad", "oslo tuna boat"]
    index = KeywordIndex.from_state(index_of(*texts[:3]).state(np.ones(3, bool)))  # terms held as views
    index.add(3, texts[3])
    index.add(4, texts[4])  # "tuna" and "boat" now join restored postings
    keep = np.array([False, True, True, False, True])

    restored = KeywordIndex.from_state(index.state(keep))
    rebuilt = index_of(texts[1], texts[2], texts[4])
    for query in ("sailing tuna", "boat", "oslo", "salad"):
        assert scores(restored, query) == pytest.approx(scores(rebuilt, query))


def test_a_state_whose_arrays_do_not_fit_together_is_refused() -> None:
    state = index_of("sailing to Oslo", "sailing home").state(np.ones(2, bool))
    state["docs"] = state["docs"] + 5  # postings pointing past the last row

    with pytest.raises(ValueError, match="do not fit"):
        KeywordIndex.from_state(state)


def test_the_size_estimate_counts_postings_and_survives_a_restore_and_later_adds() -> None:
    index = KeywordIndex()
    index.add(0, "salsa lessons salsa")
    index.add(1, "salsa in lyon")
    state = index.state(np.ones(2, bool))
    assert index.nbytes == 8 * 2 + 12 * len(state["docs"]) + 360 * len(state["terms"])  # rows, postings, terms

    restored = KeywordIndex.from_state(index.state(np.ones(2, bool)))
    assert restored.nbytes == index.nbytes
    restored.add(2, "lyon")
    index.add(2, "lyon")
    assert restored.nbytes == index.nbytes


@pytest.mark.parametrize("text", [
    "load q{i}: what do you say? answer to q{i}",       # one new word per row
    "my cat Miso hates the vacuum cleaner on sundays",  # the same words in every row
    "word{i} word{j} common text here again {i}x",      # two new words per row, some shared
])
def test_the_size_estimate_is_within_a_quarter_of_what_the_index_really_takes(text: str) -> None:
    tracemalloc.start()
    try:
        index = KeywordIndex()
        for i in range(5000):
            index.add(i, text.format(i=i, j=i % 300))
        taken = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert 0.75 < index.nbytes / taken < 1.25  # the items cache's bound (MEMORY_CACHE_MB) counts this


def test_a_hidden_term_is_one_token_that_the_tokenizer_leaves_as_it_is() -> None:
    for term in ("cinema", "rex", "dune", "2026", "θάλασσα", ""):
        assert tokenize(hidden_term(term)) == [hidden_term(term)]
    assert hidden_term("cinema") != hidden_term("cinemas") and "cinema" not in hidden_term("cinema")


def test_a_query_matches_a_text_indexed_by_its_hidden_terms_alone() -> None:
    index = index_of(f"yes, me! {hidden_terms('the Rex cinema tonight')}", "I went to the cinema")
    rows, _ = index.scores("Rex", np.ones(2, bool))
    assert rows.tolist() == [0]
    rows, _ = index.scores("cinemas", np.ones(2, bool))  # stemmed as ever, then hashed
    assert sorted(rows.tolist()) == [0, 1]


def test_hidden_terms_keep_repeats_in_order_and_stop_at_max_hidden_terms() -> None:
    many = " ".join(f"word{n} word{n}" for n in range(MAX_HIDDEN_TERMS))
    terms = hidden_terms(many).split()
    assert len(terms) == MAX_HIDDEN_TERMS and terms[0] == terms[1] == hidden_term("word0")
    assert hidden_terms("") == hidden_terms("the and of") == ""  # no terms: stop words only


def test_words_indexed_by_their_hidden_terms_score_as_if_indexed_as_they_are() -> None:
    others = ["I went to the cinema", "the cinema was full", "kitchen sink repaired", "cinema tickets"]
    plain = index_of("yes, me! the Rex cinema tonight, the cinema", *others)
    hidden = index_of(f"yes, me! {hidden_terms('the Rex cinema tonight, the cinema')}", *others)
    for query in ("cinema", "Rex cinema tonight", "sink", "me"):
        assert scores(hidden, query) == pytest.approx(scores(plain, query)), query
