"""Non-neural rankers on a MIND split, scored with MIND's official metrics, beside the neural recommenders.

`python benchmarks/news_baselines.py TRAIN_DIR TEST_DIR [RESULTS_DIR]`
- random: seeded uniform scores (the floor);
- popularity: how often the candidate was clicked in TRAIN_DIR;
- category overlap: the share of the user's clicked news in the candidate's category.
Prints a Markdown table (AUC, MRR, nDCG@5, nDCG@10 over the scorable impressions); with RESULTS_DIR, also writes
each ranker's metrics as RESULTS_DIR/news-<ranker>-seed0.json ({"architecture", "test"}), beside the trained runs'
files, so that `benchmarks/summarize_runs.py` tables them and checks the goal "above the popularity ranker".
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from pathlib import Path

from fastformer.data.mind import load_mind
from fastformer.metrics.ranking import mind_metrics, rank_scores

FILE_NAMES = {"random": "random", "popularity (training clicks)": "popularity",
              "category overlap with the history": "category"}  # fmt: skip


def main(train_dir: str, test_dir: str, results_dir: str | None = None) -> None:
    train, test = load_mind(train_dir), load_mind(test_dir)
    clicks = Counter(
        c for imp in train.impressions for c, y in zip(imp.candidates, imp.labels or (), strict=False) if y
    )
    rng = random.Random(0)

    def category_overlap(imp, candidate):
        history = [h for h in imp.history if h in test.news]
        same = sum(test.news[h].category == test.news[candidate].category for h in history)
        return same / max(1, len(history))

    rankers = {
        "random": lambda imp, c: rng.random(),
        "popularity (training clicks)": lambda imp, c: clicks[c],
        "category overlap with the history": category_overlap,
    }
    labels = [imp.labels for imp in test.impressions]
    print("| ranker | AUC | MRR | nDCG@5 | nDCG@10 | impressions |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, score in rankers.items():
        ranks = [rank_scores([score(imp, c) for c in imp.candidates]) for imp in test.impressions]
        m = mind_metrics(labels, ranks)
        values = " | ".join(f"{m[k]:.4f}" for k in ("auc", "mrr", "ndcg@5", "ndcg@10"))
        print(f"| {name} | {values} | {m['impressions']} |")
        if results_dir:
            path = Path(results_dir) / f"news-{FILE_NAMES[name]}-seed0.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(dict(architecture=name, train=train_dir, test=m), indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:4])
