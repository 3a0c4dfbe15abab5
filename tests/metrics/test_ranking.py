"""MIND's official metrics: hand-computed impressions, ties, skipped impressions, the prediction file."""

import math

import numpy as np
import pytest
from sklearn.metrics import ndcg_score, roc_auc_score

from fastformer.data import DataError
from fastformer.metrics.ranking import (
    impression_metrics,
    mind_metrics,
    rank_scores,
    read_rankings,
    roc_auc,
    write_rankings,
)


def test_hand_computed_impression():
    # ranking (best first): c0 (0), c1 (1), c2 (0), c3 (1)
    m = impression_metrics([0, 1, 0, 1], [1, 2, 3, 4])
    assert m["auc"] == pytest.approx(1 / 4)  # of the 4 (click, non-click) pairs only (c1, c2) is ordered right
    assert m["mrr"] == pytest.approx((1 / 2 + 1 / 4) / 2)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert m["ndcg@5"] == pytest.approx(dcg / ideal) and m["ndcg@10"] == pytest.approx(dcg / ideal)


def test_cutoff_at_5_and_perfect_ranking():
    labels = [0, 0, 0, 0, 0, 1]  # the click ranked 6th: outside the top 5
    m = impression_metrics(labels, [1, 2, 3, 4, 5, 6])
    assert m["ndcg@5"] == 0.0 and m["ndcg@10"] == pytest.approx(1 / math.log2(7))
    assert m["mrr"] == pytest.approx(1 / 6) and m["auc"] == 0.0
    perfect = impression_metrics(labels, [2, 3, 4, 5, 6, 1])
    assert perfect == {"auc": 1.0, "mrr": 1.0, "ndcg@5": 1.0, "ndcg@10": 1.0}


def test_random_impressions_match_sklearn():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 30))
        labels = rng.integers(0, 2, n)
        labels[0], labels[1] = 0, 1
        ranks = rank_scores(rng.normal(size=n))
        m = impression_metrics(labels, ranks)
        scores = 1 / np.asarray(ranks)
        assert m["auc"] == pytest.approx(roc_auc_score(labels, scores))
        # binary labels: 2^y - 1 == y, so sklearn's linear-gain nDCG is the same number
        assert m["ndcg@5"] == pytest.approx(ndcg_score([labels], [scores], k=5))
        assert m["ndcg@10"] == pytest.approx(ndcg_score([labels], [scores], k=10))
        order = np.argsort(ranks)
        first = [i for i, y in enumerate(labels[order]) if y]
        assert m["mrr"] == pytest.approx(sum(1 / (i + 1) for i in first) / len(first))


def test_auc_equals_sklearn_with_tied_scores_and_refuses_what_sklearn_refuses():
    """`roc_auc` replaces sklearn's roc_auc_score per impression (a thousand times faster): equal, ties included (a
    rankings file may give two candidates one rank)."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(2, 60))
        labels = rng.integers(0, 2, n)
        labels[0], labels[1] = 0, 1
        scores = rng.integers(0, int(rng.integers(1, 8)), n).astype(float)  # few distinct values: many ties
        assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    with pytest.raises(ValueError, match="a click and a non-click"):
        roc_auc(np.array([1, 1]), np.array([0.2, 0.3]))
    with pytest.raises(ValueError, match="0 or 1"):
        roc_auc(np.array([0, 2]), np.array([0.2, 0.3]))


def test_ties_rank_in_candidate_order():
    assert rank_scores([0.1, 0.5, 0.5, 0.2]) == [4, 1, 2, 3]
    assert rank_scores([0.0, 0.0, 0.0]) == [1, 2, 3]
    assert rank_scores([float("-inf"), 1.0, float("nan"), float("-inf")]) == [2, 1, 3, 4]


def test_seeded_tie_break_draws_the_order_of_tied_candidates_only():
    scores = [0.1, 0.5, 0.5, 0.2, 0.5, float("nan")]
    seen = set()
    for seed in range(40):
        ranks = rank_scores(scores, np.random.default_rng(seed))
        assert ranks == rank_scores(scores, np.random.default_rng(seed))  # reproducible per seed
        assert (ranks[3], ranks[0], ranks[5]) == (4, 5, 6)  # untied candidates keep their ranks
        assert sorted(ranks[i] for i in (1, 2, 4)) == [1, 2, 3]
        seen.add(tuple(ranks[i] for i in (1, 2, 4)))
    assert len(seen) == 6  # all 3! orders of the tied candidates are drawn
    # one generator over many impressions: later impressions draw new orders
    rng = np.random.default_rng(0)
    assert len({tuple(rank_scores([0.0] * 4, rng)) for _ in range(50)}) > 1


def test_means_skip_unlabelled_and_single_class_impressions():
    labels = [[1, 0], [0, 1], [1, 1], [0, 0, 0], None]
    ranks = [[1, 2], [1, 2], [1, 2], [1, 2, 3], [1, 2]]
    m = mind_metrics(labels, ranks)
    assert (m["impressions"], m["single_class"], m["unlabelled"]) == (2, 2, 1)
    assert m["auc"] == pytest.approx(0.5) and m["mrr"] == pytest.approx((1 + 0.5) / 2)


def test_rankings_file_round_trip_and_errors(tmp_path):
    path = tmp_path / "prediction.txt"
    write_rankings(path, ["7", "9"], [[2, 1, 3], [1]])
    assert path.read_text() == "7 [2,1,3]\n9 [1]\n"  # the leaderboard format: no spaces inside the list
    assert read_rankings(path) == {"7": [2, 1, 3], "9": [1]}
    path.write_text("7 [2,1,3]\n8 2,1\n")
    with pytest.raises(DataError, match=r"prediction.txt:2"):
        read_rankings(path)


def test_bad_ranks_raise():
    with pytest.raises(ValueError, match="1-based"):
        impression_metrics([0, 1], [0, 1])
    with pytest.raises(ValueError, match="2 labels but 3 ranks"):
        impression_metrics([0, 1], [1, 2, 3])
