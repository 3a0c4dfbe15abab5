"""Non-neural rankers on a MIND split, scored with MIND's official metrics, beside the neural recommenders.

`python benchmarks/news/news_baselines.py TRAIN_DIR TEST_DIR [RESULTS_DIR]`
- random: every candidate tied (the floor);
- popularity: how often the candidate was clicked in TRAIN_DIR;
- category overlap: the share of the user's clicked news in the candidate's category.
Rankers without learning tie often (most candidates have 0 or 1 training clicks), so each ranking is drawn
TIE_BREAKS times with tied candidates in a random order, and the metrics are the mean (their std beside them): ties
broken in candidate order would score whatever the file's order says (MINDRec lists the click first: AUC 1.0).
Prints a Markdown table (AUC, MRR, nDCG@5, nDCG@10 over the scorable impressions); with RESULTS_DIR, also writes
each ranker's metrics as RESULTS_DIR/news-<ranker>-seed0.json ({"architecture", "test"}), beside the trained runs'
files, so that `benchmarks/summarize_runs.py` tables them and checks the goal "above the popularity ranker".
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from fastformer.data.mind import load_mind
from fastformer.metrics.ranking import mind_metrics, rank_scores

FILE_NAMES = {
    "random": "random",
    "popularity (training clicks)": "popularity",
    "category overlap with the history": "category",
}


TIE_BREAKS = 20  # rankings per ranker, ties broken by a different seeded draw each time


def main(train_dir: str, test_dir: str, results_dir: str | None = None) -> None:
    train, test = load_mind(train_dir), load_mind(test_dir)
    clicks = Counter(
        c for imp in train.impressions for c, y in zip(imp.candidates, imp.labels or (), strict=False) if y
    )

    def category_overlap(imp, candidate):
        history = [h for h in imp.history if h in test.news]
        same = sum(test.news[h].category == test.news[candidate].category for h in history)
        return same / max(1, len(history))

    rankers = {
        "random": lambda imp, c: 0.0,  # every candidate tied: the tie-breaking draw is the ranking
        "popularity (training clicks)": lambda imp, c: clicks[c],
        "category overlap with the history": category_overlap,
    }
    labels = [imp.labels for imp in test.impressions]
    keys = ("auc", "mrr", "ndcg@5", "ndcg@10")
    print(f"Mean +- std over {TIE_BREAKS} random orders of tied candidates:\n")
    print("| ranker | AUC | MRR | nDCG@5 | nDCG@10 | impressions |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, score in rankers.items():
        scores = [[score(imp, c) for c in imp.candidates] for imp in test.impressions]
        draws = []
        for draw in range(TIE_BREAKS):
            rng = np.random.default_rng(draw)  # ties in a random order, not candidate order (which may carry labels)
            draws.append(mind_metrics(labels, [rank_scores(s, rng) for s in scores]))
        m = {k: statistics.mean(d[k] for d in draws) for k in keys}
        m.update(
            impressions=draws[0]["impressions"],
            single_class=draws[0]["single_class"],
            tie_breaks=TIE_BREAKS,
            tie_break_std={k: statistics.stdev(d[k] for d in draws) for k in keys},
        )
        values = " | ".join(f"{m[k]:.4f} +- {m['tie_break_std'][k]:.4f}" for k in keys)
        print(f"| {name} | {values} | {m['impressions']} |")
        if results_dir:
            path = Path(results_dir) / f"news-{FILE_NAMES[name]}-seed0.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(dict(architecture=name, train=train_dir, test=m), indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:4])
