"""Predict with a trained folder of any task (the folder says which): a classifier or TF-IDF baseline labels texts, a
language model continues them, a summarizer (or the Lead-3 baseline) summarizes documents; texts come from the command
line and / or `--file` (one a line, or a JSON Lines / CSV / TSV / Parquet file's `--text-field`, or a folder's text
files). The output streams: one JSON record per input, in order, naming it (`"argument": i`, `"line": n`, a Parquet
file's `"row": n`, a folder's `"file": name`), written as each chunk is done (blank lines get a record marked `"blank":
true`), so memory stays bounded whatever the file's size. A news recommender ranks the candidates of every impression of
a MIND folder (`--data`) into the leaderboard's prediction file (`impression_id [rank1,rank2,...]`, 1-based ranks)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "predict with a trained folder: labels, continuations, summaries or rankings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fastformer.cli.settings import add_verb_arguments

    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument("texts", nargs="*", help="texts (documents, prompts) to predict for")
    add_verb_arguments(parser, "predict")


def predict_folder(args: argparse.Namespace, runner, architecture: str | None, settings) -> int:
    """A task that predicts over a data folder (news ranks a MIND folder's impressions): its output file, by default
    the task's `prediction_file` inside the run folder."""
    from fastformer.cli.outputs import OutputRefused, check_output
    from fastformer.data import DataError

    default = Path(args.model_dir) / runner.prediction_file
    output = args.output or str(default)
    try:
        check_output(
            output,
            inputs=(args.data,),
            folders=(args.model_dir, args.data),
            allowed_inside=(default,),
            overwrite=args.overwrite or not args.output,
        )
    except OutputRefused as error:
        raise SystemExit(f"fastformer predict: {error}") from None
    try:
        print(runner.predict_folder(args.model_dir, architecture, settings, output))
    except (DataError, ValueError, OSError) as error:
        raise SystemExit(f"fastformer predict: {error}") from None
    return 0


def run(args: argparse.Namespace) -> int:
    from fastformer.cli.inputs import file_inputs
    from fastformer.cli.settings import open_run_folder, where_filter
    from fastformer.cli.streaming import stream
    from fastformer.data import DataError

    given, where = where_filter("predict", args)
    runner, task, architecture, settings, args = open_run_folder("predict", given, ("model_dir", "texts"), where=where)
    if not runner.reads_texts:
        if args.texts:
            raise SystemExit(f"fastformer predict: a {task} run predicts over a data folder (--data), not texts")
        if not args.data:
            raise SystemExit(f"fastformer predict: a {task} run predicts over a data folder: give --data")
        return predict_folder(args, runner, architecture, settings)
    if args.file and not Path(args.file).exists():  # (a folder: its files are the texts)
        from fastformer.cli.inputs import not_a_file

        raise SystemExit(f"fastformer predict: {not_a_file(args.file)}")
    if not args.texts and not args.file:
        raise SystemExit("fastformer predict: give texts or --file")
    if args.output:
        from fastformer.cli.outputs import OutputRefused, check_output

        try:
            check_output(
                args.output, inputs=(args.file,), folders=(args.model_dir, args.file), overwrite=args.overwrite
            )  # (a --file folder: its files are the texts, so nothing is written into it)
        except OutputRefused as error:
            raise SystemExit(f"fastformer predict: {error}") from None
    try:
        texts = file_inputs("predict", args, runner)
        predict = runner.predictor(args.model_dir, architecture, settings)
        stream(texts, predict, args.output, progress=args.progress)
    except (DataError, ValueError) as error:
        raise SystemExit(f"fastformer predict: {error}") from None
    except OSError as error:  # a full disk while writing --output: the partial file is gone (atomic_output)
        raise SystemExit(
            f"fastformer predict: {error.strerror or error} while writing {args.output or 'standard output'}; "
            "nothing written"
        ) from None
    return 0
