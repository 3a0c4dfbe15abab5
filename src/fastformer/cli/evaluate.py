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
import sys
from pathlib import Path

HELP = "evaluate a trained folder (any task) on labelled data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fastformer.cli.settings import add_verb_arguments

    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    add_verb_arguments(parser, "evaluate")


def output_path(model_dir: str, settings, companion: str | None = None) -> Path:
    """Where metrics.json goes: --output, else a new evaluations/<data name>[-N] folder. --output and the file the
    task writes beside it (`companion`) are checked as every output is (`fastformer.cli.outputs.check_output`): never
    the data, never inside the run folder or the data folder, never an existing file unless --overwrite."""
    from fastformer.cli.outputs import OutputRefused, check_output

    if settings.output:
        out = Path(settings.output)
        targets = [out] + ([out.with_name(companion)] if companion else [])
        try:
            for target in targets:
                flag = "--output" if target == out else "--output's companion file"
                check_output(
                    target,
                    flag=flag,
                    inputs=(settings.data,),
                    folders=(model_dir, settings.data),
                    overwrite=settings.overwrite,
                )
        except OutputRefused as error:
            raise SystemExit(f"fastformer evaluate: {error}") from None
        return out
    stem = Path(settings.data).name.split(".")[0] or "data"
    base = Path(model_dir) / "evaluations"
    folder, n = base / stem, 1
    while folder.exists():
        n += 1
        folder = base / f"{stem}-{n}"
    folder.mkdir(parents=True)
    if n > 1:  # said before the work, not found afterwards
        print(f"{base / stem} holds an earlier evaluation: this one goes to {folder}", file=sys.stderr)
    return folder / "metrics.json"


def run(args: argparse.Namespace) -> int:
    from fastformer.cli.settings import open_run_folder, where_filter
    from fastformer.data import DataError

    given, where = where_filter("evaluate", args)
    runner, _, architecture, settings, _ = open_run_folder("evaluate", given, ("model_dir",), where=where)
    out = output_path(args.model_dir, settings, runner.evaluation_file)
    try:
        metrics = runner.evaluate_folder(args.model_dir, architecture, settings, out)
    except (DataError, ValueError, OSError) as error:
        if not settings.output and not any(out.parent.iterdir()):
            out.parent.rmdir()  # the evaluations/<data> folder made for this evaluation: nothing to keep
        raise SystemExit(f"fastformer evaluate: {error}") from None
    out.write_text(json.dumps(metrics, indent=2))
    print(json.dumps(runner.headline(metrics)), f"-> {out}")
    return 0
