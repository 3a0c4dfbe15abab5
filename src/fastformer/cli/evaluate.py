"""Evaluate a trained folder of any task on labelled data. The folder says what it is (its run_complete.json, or for
folders of earlier versions its config.json): a classifier or TF-IDF baseline scores a labelled file (accuracy,
macro-F1, confusion matrix, predictions); a language model a file of documents (perplexity); a news recommender a MIND
folder (AUC, MRR, nDCG@5, nDCG@10 as MIND's official scorer, and the leaderboard's prediction file); a summarizer or
the Lead-3 baseline a file of document / summary pairs (ROUGE-1/2/L/Lsum with bootstrap confidence intervals).

The results go to a new folder beside the run, MODEL_DIR/evaluations/<data name>[-N]/ (metrics.json and the
predictions), or to --output: never over the run's own files, never onto the data."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HELP = "evaluate a trained folder (any task) on labelled data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument(
        "--data",
        required=True,
        help="labelled file (same formats as training); lm: documents; news: a MIND folder or behaviors.tsv",
    )
    parser.add_argument("--text-field", help="default: the run's own (run_config.json)")
    parser.add_argument("--label-field", help="default: the run's own (run_config.json)")
    parser.add_argument("--source-field", help="summarize: document column / key")
    parser.add_argument("--target-field", help="summarize: summary column / key")
    parser.add_argument("--max-examples", type=int, help="only the first N examples / pairs / documents")
    parser.add_argument("--num-beams", type=int, help="summarize: beam size (default: the run's)")
    parser.add_argument("--format")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", help="JSON Lines filter")
    parser.add_argument("--binary-threshold", type=float, help="default: the run's own (run_config.json)")
    parser.add_argument("--max-length", type=int, help="default: the model's max_position_embeddings")
    parser.add_argument("--output", help="metrics JSON path (default: MODEL_DIR/evaluations/<data name>/metrics.json)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output (and its companion)")


# the file each task's evaluation writes beside its metrics.json
COMPANIONS = {"news": "prediction.txt", "summarize": "summaries.jsonl", "classification": "predictions.jsonl"}


def output_path(args: argparse.Namespace, task: str = "classification") -> Path:
    """Where metrics.json goes: --output, else a new evaluations/<data name>[-N] folder. --output and the file written
    beside it are checked as every output is (`fastformer.cli.outputs.check_output`): never the data, never inside
    the run folder or the data folder, never an existing file unless --overwrite."""
    from fastformer.cli.outputs import OutputRefused, check_output

    if args.output:
        out = Path(args.output)
        targets = [out] + ([out.with_name(COMPANIONS[task])] if task in COMPANIONS else [])
        try:
            for target in targets:
                flag = "--output" if target == out else "--output's companion file"
                check_output(
                    target,
                    flag=flag,
                    inputs=(args.data,),
                    folders=(args.model_dir, args.data),
                    overwrite=args.overwrite,
                )
        except OutputRefused as error:
            raise SystemExit(f"fastformer evaluate: {error}") from None
        return out
    stem = Path(args.data).name.split(".")[0] or "data"
    base = Path(args.model_dir) / "evaluations"
    folder, n = base / stem, 1
    while folder.exists():
        n += 1
        folder = base / f"{stem}-{n}"
    folder.mkdir(parents=True)
    return folder / "metrics.json"


def _where(args) -> dict | None:
    return dict(item.split("=", 1) for item in args.where) or None


def run_news(args, out: Path) -> dict:
    from fastformer.tasks.news_recommendation import rank_split

    metrics, report = rank_split(args.model_dir, args.data, output=out.with_name("prediction.txt"))
    if report.summary():
        print(f"{args.data}:\n{report.summary()}")
    return dict(**metrics, data=report.as_dict())


def run_summarize(args, out: Path, architecture: str | None) -> dict:
    from fastformer.data.summarization import lead, read_pairs
    from fastformer.tasks.common import write_jsonl
    from fastformer.tasks.summarization import evaluate_pairs, generation_settings, load_model, summarize

    pairs = read_pairs(args.data, args.source_field, args.target_field, format=args.format, where=_where(args))
    pairs = pairs[: args.max_examples] if args.max_examples else pairs
    cfg = generation_settings(args.model_dir)
    start = time.perf_counter()
    if architecture == "lead3":
        summaries = [lead(p, 3) for p in pairs]
    else:
        model, tokenizer = load_model(args.model_dir)
        gen = {"num_beams": args.num_beams} if args.num_beams else {}
        summaries = summarize(model, tokenizer, [p.source for p in pairs], cfg, **gen)
    metrics, rows = evaluate_pairs(pairs, summaries, cfg, time.perf_counter() - start)
    write_jsonl(out.with_name("summaries.jsonl"), rows)
    return metrics


def run_lm(args, out: Path) -> dict:
    from itertools import islice

    from fastformer.data.text_corpus import read_texts
    from fastformer.tasks.language_modeling import TokenBlocks, load_generator, perplexity

    documents = read_texts(args.data, text_field=args.text_field, format=args.format, where=_where(args))
    documents = list(islice(documents, args.max_examples))  # the first N: read no further
    model, tokenizer = load_generator(args.model_dir)
    block = args.max_length or getattr(model.config, "max_position_embeddings", None) or model.config.n_positions
    start = time.perf_counter()
    metrics = perplexity(model, TokenBlocks(documents, tokenizer, block, tokenizer.sep_token_id))
    return dict(**metrics, documents=len(documents), block_size=block, seconds=round(time.perf_counter() - start, 2))


def run_settings(model_dir) -> dict:
    """The settings a run was trained with (run_config.json), or {} for a folder without them."""
    path = Path(model_dir) / "run_config.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        return {}


def run_classification(args, out: Path, architecture: str | None) -> dict:
    from fastformer.data import read_examples
    from fastformer.tasks.classification import BASELINES, baseline_module, evaluate_split, load_model, relabel_binary
    from fastformer.tasks.common import write_jsonl

    run = run_settings(args.model_dir)  # the run's own columns and label mapping, unless given
    text_field = args.text_field if args.text_field is not None else run.get("text_field")
    label_field = args.label_field if args.label_field is not None else run.get("label_field")
    threshold = args.binary_threshold if args.binary_threshold is not None else run.get("binary_threshold")
    examples = read_examples(
        args.data, text_field=text_field, label_field=label_field, format=args.format, where=_where(args)
    )
    examples = relabel_binary(examples[: args.max_examples] if args.max_examples else examples, threshold)
    if architecture in BASELINES:
        metrics, rows = baseline_module(architecture).evaluate(args.model_dir, examples)
    else:
        model, tokenizer, labels = load_model(args.model_dir)
        max_length = args.max_length or model.config.max_position_embeddings
        metrics, rows = evaluate_split(model, tokenizer, examples, labels, max_length)
    write_jsonl(out.with_name("predictions.jsonl"), rows)
    return metrics


SHOWN = {
    "classification": ("examples", "accuracy", "macro_f1"),
    "lm": ("documents", "loss", "perplexity"),
    "news": ("impressions", "auc", "mrr", "ndcg@5", "ndcg@10", "single_class", "unlabelled"),
}


def run(args: argparse.Namespace) -> int:
    from fastformer.data import DataError
    from fastformer.tasks.registry import NotARunFolder, task_for_verb

    if args.max_examples is not None and args.max_examples < 1:  # 0 used to mean "no limit", silently
        raise SystemExit(f"fastformer evaluate: --max-examples: must be >= 1, got {args.max_examples}")
    try:
        task, architecture = task_for_verb(args.model_dir, "evaluate")
    except NotARunFolder as error:
        raise SystemExit(f"fastformer evaluate: {error}") from None
    out = output_path(args, task)
    try:
        if task == "news":
            metrics = run_news(args, out)
        elif task == "summarize":
            metrics = run_summarize(args, out, architecture)
        elif task == "lm":
            metrics = run_lm(args, out)
        else:
            metrics = run_classification(args, out, architecture)
    except (DataError, ValueError, OSError) as error:
        if not args.output and not any(out.parent.iterdir()):
            out.parent.rmdir()  # the evaluations/<data> folder made for this evaluation: nothing to keep
        raise SystemExit(f"fastformer evaluate: {error}") from None
    out.write_text(json.dumps(metrics, indent=2))
    if task == "summarize":
        shown = {name: f"{s['f1']:.2f} [{s['low']:.2f}, {s['high']:.2f}]" for name, s in metrics["rouge"].items()}
        shown = dict(examples=metrics["examples"], **shown)
    else:
        shown = {k: metrics[k] for k in SHOWN[task] if k in metrics}
    print(json.dumps(shown), f"-> {out}")
    return 0
