"""Evaluate a trained folder on labelled data: for a classifier, a labelled file (accuracy, macro-F1, confusion
matrix, predictions); for a news recommender, a MIND folder (AUC, MRR, nDCG@5, nDCG@10 as MIND's official scorer,
and the leaderboard's prediction file); for a summarizer, a file of document / summary pairs (ROUGE-1/2/L/Lsum with
bootstrap confidence intervals, and the summaries)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "evaluate a trained model on a labelled file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument(
        "--data", required=True, help="labelled file (same formats as training); news: a MIND folder or behaviors.tsv"
    )
    parser.add_argument("--text-field")
    parser.add_argument("--source-field", help="summarize: document column / key")
    parser.add_argument("--target-field", help="summarize: summary column / key")
    parser.add_argument("--max-examples", type=int, help="summarize: only the first N pairs")
    parser.add_argument("--num-beams", type=int, help="summarize: beam size (default: the run's)")
    parser.add_argument("--label-field")
    parser.add_argument("--format")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", help="JSON Lines filter")
    parser.add_argument("--binary-threshold", type=float)
    parser.add_argument("--max-length", type=int, help="default: the model's max_position_embeddings")
    parser.add_argument("--output", help="metrics JSON path (default: MODEL_DIR/metrics_<data name>.json)")


def run_news(args: argparse.Namespace) -> int:
    from fastformer.data import DataError
    from fastformer.tasks.news_recommendation import rank_split

    stem = Path(args.data).name.split(".")[0]
    out = Path(args.output) if args.output else Path(args.model_dir) / f"metrics_{stem}.json"
    try:
        metrics, report = rank_split(args.model_dir, args.data, output=out.with_name(f"prediction_{stem}.txt"))
    except (DataError, ValueError, OSError) as error:
        raise SystemExit(f"fastformer evaluate: {error}") from None
    if report.summary():
        print(f"{args.data}:\n{report.summary()}")
    out.write_text(json.dumps(dict(**metrics, data=report.as_dict()), indent=2))
    keys = ("impressions", "auc", "mrr", "ndcg@5", "ndcg@10", "single_class", "unlabelled")
    print(json.dumps({k: metrics[k] for k in keys}), f"-> {out}")
    return 0


def run_summarize(args: argparse.Namespace) -> int:
    import time

    from fastformer.data import DataError
    from fastformer.data.summarization import read_pairs
    from fastformer.tasks.summarization import evaluate_pairs, generation_settings, load_model, summarize

    where = dict(item.split("=", 1) for item in args.where) or None
    try:
        pairs = read_pairs(args.data, args.source_field, args.target_field, format=args.format, where=where)
        pairs = pairs[: args.max_examples] if args.max_examples else pairs
        model, tokenizer = load_model(args.model_dir)
        cfg = generation_settings(args.model_dir)
        gen = {"num_beams": args.num_beams} if args.num_beams else {}
        start = time.perf_counter()
        summaries = summarize(model, tokenizer, [p.source for p in pairs], cfg, **gen)
        metrics, rows = evaluate_pairs(pairs, summaries, cfg, time.perf_counter() - start)
    except (DataError, ValueError, OSError) as error:
        raise SystemExit(f"fastformer evaluate: {error}") from None
    stem = Path(args.data).name.split(".")[0]
    out = Path(args.output) if args.output else Path(args.model_dir) / f"metrics_{stem}.json"
    out.write_text(json.dumps(metrics, indent=2))
    with out.with_name(f"summaries_{stem}.jsonl").open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    scores = {name: f"{s['f1']:.2f} [{s['low']:.2f}, {s['high']:.2f}]" for name, s in metrics["rouge"].items()}
    print(json.dumps(dict(examples=metrics["examples"], **scores)), f"-> {out}")
    return 0


def run(args: argparse.Namespace) -> int:
    from fastformer.cli.inputs import model_kind
    from fastformer.data import DataError, read_examples

    kind = model_kind(args.model_dir)
    if kind == "news":
        return run_news(args)
    if kind == "summarize":
        return run_summarize(args)
    from fastformer.tasks.classification import evaluate_split, load_model, relabel_binary

    where = dict(item.split("=", 1) for item in args.where) or None
    try:
        examples = relabel_binary(
            read_examples(
                args.data, text_field=args.text_field, label_field=args.label_field, format=args.format, where=where
            ),
            args.binary_threshold,
        )
        model, tokenizer, labels = load_model(args.model_dir)
        max_length = args.max_length or model.config.max_position_embeddings
        metrics, rows = evaluate_split(model, tokenizer, examples, labels, max_length)
    except (DataError, ValueError, OSError) as error:
        raise SystemExit(f"fastformer evaluate: {error}") from None
    stem = Path(args.data).name.split(".")[0]
    out = Path(args.output) if args.output else Path(args.model_dir) / f"metrics_{stem}.json"
    out.write_text(json.dumps(metrics, indent=2))
    with out.with_name(f"predictions_{stem}.jsonl").open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    print(json.dumps({k: metrics[k] for k in ("examples", "accuracy", "macro_f1")}), f"-> {out}")
    return 0
