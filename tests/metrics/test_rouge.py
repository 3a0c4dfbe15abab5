"""ROUGE through rouge-score: hand-checked values, stemming, Lsum sentence lines, seeded bootstrap intervals."""

import numpy as np
import pytest

from fastformer.metrics.rouge import rouge


def test_identical_and_disjoint():
    same = rouge(["the cat sat on the mat."], ["the cat sat on the mat."], bootstrap_samples=10)
    assert all(same[k]["f1"] == 100.0 for k in same)
    none = rouge(["dogs bark loudly"], ["the cat sat"], bootstrap_samples=10)
    assert none["rouge1"]["f1"] == 0.0


def test_hand_computed_rouge1_and_stemming():
    # prediction tokens: the cats sat (3); reference: the cat sat on the mat (6); stemming makes cats = cat
    r = rouge(["The cats sat"], ["the cat sat on the mat"], bootstrap_samples=10)
    precision, recall = 3 / 3, 3 / 6
    assert r["rouge1"]["f1"] == pytest.approx(100 * 2 * precision * recall / (precision + recall), abs=1e-3)
    assert r["rouge2"]["f1"] == pytest.approx(100 * 2 * (2 / 2) * (2 / 5) / (1 + 2 / 5), abs=1e-3)


def test_lsum_reads_sentence_lines():
    reference = "the cat sat.\nthe dog ran."
    lines = rouge(["the dog ran.\nthe cat sat."], [reference], bootstrap_samples=10)
    assert lines["rougeLsum"]["f1"] == 100.0 and lines["rougeL"]["f1"] < 100.0  # order matters to L, not to Lsum
    split = rouge(["the dog ran. the cat sat."], [reference], bootstrap_samples=10)  # split into sentences first
    assert split["rougeLsum"]["f1"] == 100.0


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    preds = [" ".join(rng.choice(words, 5)) for _ in range(40)]
    refs = [" ".join(rng.choice(words, 5)) for _ in range(40)]
    state = np.random.get_state()[1].copy()
    a = rouge(preds, refs, bootstrap_samples=200, seed=1)
    assert np.array_equal(np.random.get_state()[1], state)  # numpy's global generator is left as it was
    assert a == rouge(preds, refs, bootstrap_samples=200, seed=1)
    for scores in a.values():
        assert scores["low"] <= scores["f1"] <= scores["high"] and scores["high"] - scores["low"] > 0
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        rouge(["a", "b"], ["a"])


def test_repetition_counts_what_degenerate_output_lacks():
    from fastformer.metrics.repetition import repetition

    degenerate = repetition(["the the the of of the the the"])
    assert degenerate["distinct_1"] == round(2 / 8, 4) and degenerate["words"] == 8
    # trigrams: the-the-the, the-the-of, the-of-of, of-of-the, of-the-the, the-the-the: one of 6 repeats
    assert degenerate["repeated_3gram_rate"] == round(1 / 6, 4)
    # words equal to the one before: the 2nd and 3rd "the", the 2nd "of", the last two "the": 5 of 8
    assert degenerate["adjacent_repeat_rate"] == round(5 / 8, 4)
    # what trigram blocking lets through: no trigram twice, but a word stuttered
    stutter = repetition(["a important important important role"])
    assert stutter["repeated_3gram_rate"] == 0.0 and stutter["adjacent_repeat_rate"] == round(2 / 5, 4)
    fluent = repetition(["Patients improved after two weeks.", "No side effects were seen"])
    assert fluent == dict(distinct_1=1.0, distinct_2=1.0, repeated_3gram_rate=0.0, adjacent_repeat_rate=0.0, words=5.0)
    assert repetition(["one"])["distinct_2"] == 1.0 and repetition([])["words"] == 0.0
