"""Do the weights `fastformer explain` shows single out what a classifier's prediction rests on? Over the first N texts
of a labelled file: the mean fall of the predicted class's probability when the k words of largest weight are cut
(for the pooling weights and the last layer's alpha and beta, mean of heads), against k random words.

Usage: python benchmarks/explain/explain_faithfulness.py MODEL_DIR DATA [--n 200] [--k 5] [--trials 10] [--output
FILE.json]
       [--label-field F] [--where KEY=VALUE]
e.g.   python benchmarks/explain/explain_faithfulness.py runs/classification-full/yelp5-fastformer512-glove-seed1 \
           ../shared/data/yelp5/yelp_test.csv.gz --output benchmarks/explain/results/yelp5-glove-seed1.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("data")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--label-field", help="as `fastformer train --label-field` (e.g. rating for IMDB)")
    parser.add_argument("--where", action="append", default=[], help="KEY=VALUE: keep JSON Lines records with it")
    parser.add_argument("--output")
    args = parser.parse_args()

    from fastformer.data.text_classification import read_examples
    from fastformer.interpret import explain
    from fastformer.tasks.classification.classifier import Classifier

    classifier = Classifier(args.model_dir)  # texts read as the run read them (length, truncation, bf16)
    model, tokenizer = classifier.model, classifier.tokenizer
    reading = dict(max_length=classifier.max_length, truncation=classifier.truncation, bf16=classifier.bf16)
    where = dict(item.split("=", 1) for item in args.where) or None
    examples = read_examples(args.data, label_field=args.label_field, where=where)[: args.n]
    falls: dict[str, list[float]] = {}
    random_falls, started = [], time.perf_counter()
    for i, example in enumerate(examples):
        explained = explain(
            model, tokenizer, example.text, faithfulness_k=args.k, trials=args.trials, seed=i, **reading
        )
        check = explained.faithfulness
        if check is None:
            continue
        for entry in check["top_weighted"]:
            falls.setdefault(entry["view"], []).append(entry["drop"])
        random_falls.append(check["random"]["mean_drop"])
    rows = {view: dict(mean_fall=round(float(np.mean(v)), 4), texts=len(v)) for view, v in falls.items()}
    rows[f"{args.k} random words"] = dict(mean_fall=round(float(np.mean(random_falls)), 4), texts=len(random_falls))
    result = dict(
        machine=dict(
            platform=platform.platform(),
            processor=platform.processor(),
            torch=torch.__version__,
            threads=torch.get_num_threads(),
        ),
        model_dir=args.model_dir,
        data=args.data,
        where=where,
        texts=len(examples),
        k=args.k,
        trials=args.trials,
        seconds=round(time.perf_counter() - started, 1),
        mean_fall_of_the_predicted_class_probability=rows,
    )
    print(json.dumps(result, indent=2))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
