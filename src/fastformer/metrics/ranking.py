"""MIND's official ranking metrics: per impression AUC, MRR, nDCG@5 and nDCG@10, averaged over impressions.

The official scorer (msnews.github.io, evaluate.py) reads a ranking per impression (`impression_id [r1,r2,...]`,
ranks 1-based in candidate order), turns it into scores 1/rank and computes

- AUC: sklearn's roc_auc_score(labels, 1/rank) (here `roc_auc`, equal to it and a thousand times faster);
- MRR: sum over clicked candidates of 1/(position in the ranking), divided by the number of clicks;
- nDCG@k: DCG of the top k (gain 2^y - 1, discount log2(position + 1)) over the DCG of the ideal ranking.

Here the scores of a model become ranks first (`rank_scores`), so the numbers are exactly those the official script
gives for the prediction file we write. Ties: equal scores are ranked in candidate order (the earlier candidate
gets the better rank), which makes every ranking, and so every metric, deterministic; or in an order drawn from a
seeded generator (`tie_break`), for rankers without learning that tie often (benchmarks/news/news_baselines.py).

Impressions without labels (the test set) are skipped, as the official script skips them. An impression without
both a click and a non-click has no AUC; MIND's own impressions always have both, but other
data may not: such impressions are left out of all four means and counted (`single_class`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

METRICS = ("auc", "mrr", "ndcg@5", "ndcg@10")


def rank_scores(scores: Sequence[float], tie_break: np.random.Generator | None = None) -> list[int]:
    """1-based ranks of candidates by descending score. NaN counts as -inf.

    Ties keep candidate order, or, given `tie_break`, take a random order drawn from it: what a ranker that ties
    often (counts, rules) needs when candidate order may carry the labels (a file that lists the clicks first)."""
    values = np.asarray(scores, dtype=np.float64)
    values = np.where(np.isnan(values), -np.inf, values)
    if tie_break is None:
        order = np.argsort(-values, kind="stable")  # positions of the candidates, best first
    else:  # lexsort sorts by the last key first: the score, then the random key among equal scores
        order = np.lexsort((tie_break.random(len(values)), -values))
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks.tolist()


def _dcg(labels: np.ndarray, scores: np.ndarray, k: int) -> float:
    order = np.argsort(scores)[::-1]
    gains = 2 ** np.take(labels, order[:k]) - 1
    discounts = np.log2(np.arange(len(gains)) + 2)
    return float(np.sum(gains / discounts))


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The area under the ROC curve of 0/1 `labels` by `scores`: sklearn's roc_auc_score (tested equal, ties counted
    half), as the Mann-Whitney statistic of the scores' average ranks. sklearn validates its inputs per call (27 ms
    an impression: 33 min of a MIND-small evaluation's 73k impressions); this is a few microseconds."""
    positive = labels == 1
    if not np.all(positive | (labels == 0)):
        raise ValueError("click labels must be 0 or 1")
    n_positive = int(positive.sum())
    n_negative = len(labels) - n_positive
    if n_positive == 0 or n_negative == 0:
        raise ValueError("AUC needs a click and a non-click")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based rank of each distinct score, ties averaged
    rank_sum = float(average_rank[inverse][positive].sum())
    return (rank_sum - n_positive * (n_positive + 1) / 2.0) / (n_positive * n_negative)


def impression_metrics(labels: Sequence[int], ranks: Sequence[int]) -> dict[str, float]:
    """The four metrics of one impression from its click labels and the ranks given to its candidates."""
    y = np.asarray(labels, dtype=np.float64)
    ranks = np.asarray(ranks, dtype=np.float64)
    if y.shape != ranks.shape:
        raise ValueError(f"{len(y)} labels but {len(ranks)} ranks")
    if np.any(ranks < 1):
        raise ValueError("ranks are 1-based")
    scores = 1.0 / ranks
    order = np.argsort(scores)[::-1]
    reciprocal = np.take(y, order) / (np.arange(len(y)) + 1)
    return {
        "auc": roc_auc(y, scores),
        "mrr": float(np.sum(reciprocal) / np.sum(y)),
        "ndcg@5": _dcg(y, scores, 5) / _dcg(y, y, 5),
        "ndcg@10": _dcg(y, scores, 10) / _dcg(y, y, 10),
    }


def mind_metrics(labels: Sequence[Sequence[int] | None], ranks: Sequence[Sequence[int]]) -> dict[str, float | int]:
    """Means over impressions of the four metrics, with how many impressions were scored and skipped."""
    totals = dict.fromkeys(METRICS, 0.0)
    scored = unlabelled = single_class = 0
    for y, r in zip(labels, ranks, strict=True):
        if y is None or len(y) == 0:
            unlabelled += 1
            continue
        if min(y) == max(y):
            single_class += 1
            continue
        for name, value in impression_metrics(y, r).items():
            totals[name] += value
        scored += 1
    means = {name: (total / scored if scored else float("nan")) for name, total in totals.items()}
    return dict(**means, impressions=scored, single_class=single_class, unlabelled=unlabelled)


def write_rankings(path: str | Path, impression_ids: Sequence[str], ranks: Sequence[Sequence[int]]) -> None:
    """The leaderboard's prediction file: one `impression_id [r1,r2,...]` line per impression, in input order."""
    with Path(path).open("w") as f:
        for impression_id, r in zip(impression_ids, ranks, strict=True):
            f.write(f"{impression_id} [{','.join(str(int(x)) for x in r)}]\n")


def read_rankings(path: str | Path) -> dict[str, list[int]]:
    """A prediction file back as {impression_id: ranks}; a malformed line raises with its line number."""
    from fastformer.data.files import DataError

    out = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        parts = line.split()
        try:
            out[parts[0]] = [int(x) for x in json.loads(parts[1])]
            if len(parts) != 2:
                raise ValueError
        except (IndexError, ValueError, TypeError):
            raise DataError(path, number, None, "expected 'impression_id [r1,r2,...]'") from None
    return out
