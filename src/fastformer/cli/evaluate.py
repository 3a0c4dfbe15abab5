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


def output_path(args: argparse.Namespace, companion: str | None = None) -> Path:
    """Where metrics.json goes: --output, else a new evaluations/<data name>[-N] folder. --output and the file the
    task writes beside it (`companion`) are checked as every output is (`fastformer.cli.outputs.check_output`): never
    the data, never inside the run folder or the data folder, never an existing file unless --overwrite."""
    from fastformer.cli.outputs import OutputRefused, check_output

    if args.output:
        out = Path(args.output)
        targets = [out] + ([out.with_name(companion)] if companion else [])
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


def request_fields(args: argparse.Namespace) -> dict:
    """The optional EvaluationRequest fields from the flags (None where not given), in the request's order."""
    from fastformer.tasks.verbs import EvaluationRequest

    fixed = ("model_dir", "architecture", "data", "output")
    names = [name for name in EvaluationRequest.__dataclass_fields__ if name not in fixed]
    where = dict(item.split("=", 1) for item in args.where) or None
    return {name: where if name == "where" else getattr(args, name) for name in names}


def run(args: argparse.Namespace) -> int:
    from fastformer.data import DataError
    from fastformer.tasks.registry import TASKS, NotARunFolder, task_for_verb
    from fastformer.tasks.verbs import EvaluationRequest

    if args.max_examples is not None and args.max_examples < 1:  # 0 used to mean "no limit", silently
        raise SystemExit(f"fastformer evaluate: --max-examples: must be >= 1, got {args.max_examples}")
    try:
        task, architecture = task_for_verb(args.model_dir, "evaluate")
    except NotARunFolder as error:
        raise SystemExit(f"fastformer evaluate: {error}") from None
    module = TASKS[task].load()
    fields = request_fields(args)
    ignored = [name for name, value in fields.items() if value is not None and name not in module.EVALUATION_FIELDS]
    if ignored:  # a flag this task does not read would be ignored silently
        flags = ", ".join("--" + name.replace("_", "-") for name in ignored)
        reads = ", ".join("--" + n.replace("_", "-") for n in module.EVALUATION_FIELDS) or "none of them"
        raise SystemExit(f"fastformer evaluate: {flags}: not read when evaluating a {task} run (it reads {reads})")
    out = output_path(args, getattr(module, "EVALUATION_FILE", None))
    request = EvaluationRequest(args.model_dir, architecture, args.data, output=out, **fields)
    try:
        metrics = module.evaluate_folder(request)
    except (DataError, ValueError, OSError) as error:
        if not args.output and not any(out.parent.iterdir()):
            out.parent.rmdir()  # the evaluations/<data> folder made for this evaluation: nothing to keep
        raise SystemExit(f"fastformer evaluate: {error}") from None
    out.write_text(json.dumps(metrics, indent=2))
    print(json.dumps(module.headline(metrics)), f"-> {out}")
    return 0
