"""Write the decontaminated pretraining corpus to one JSON Lines file ({"split": "train" | "validation", "text"}),
for a pretraining objective that another task trains: the causal language model (`fastformer train lm`), which has
no --exclude of its own.

    python benchmarks/pretraining/pretraining_corpus.py runs/imdb-pretrain-corpus.jsonl.gz     # IMDB, as `train
    pretrain` reads it

The texts are exactly those `fastformer train pretrain` trains and holds out with the same flags (the README's
command: IMDB's unlabelled reviews + the ratings file, every text of the test split excluded, seed 1's held-out 1 %):
the library's own reader, decontamination and hold-out (fastformer.tasks.pretrain.task.load_texts), so the counts it
prints are the ones in that run's metrics.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys

IMDB = "../shared/data/imdb"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="the .jsonl.gz file to write")
    parser.add_argument("--train", default=f"{IMDB}/imdb_unsup.jsonl.gz,{IMDB}/imdb_ratings.jsonl.gz")
    parser.add_argument("--exclude", default=f"{IMDB}/imdb_ratings.jsonl.gz")
    parser.add_argument("--exclude-where", default="split=test")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    from fastformer.tasks.pretrain.config import PretrainingConfig
    from fastformer.tasks.pretrain.corpus import load_texts

    key, value = args.exclude_where.split("=", 1)
    cfg = PretrainingConfig(train=args.train, exclude=[args.exclude], exclude_where={key: value}, seed=args.seed)
    report: dict = {}
    texts = load_texts(cfg, report)
    with gzip.open(args.output, "wt", encoding="utf-8") as f:
        for split in ("train", "validation"):
            for text in texts[split]:
                f.write(json.dumps(dict(split=split, text=text)) + "\n")
    print(json.dumps(dict(output=args.output, **report)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
