"""Predict labels with a trained classification folder, for texts given here or one per line of a file."""

from __future__ import annotations

import argparse
import json

HELP = "predict labels for texts or a file of texts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument("texts", nargs="*", help="texts to classify")
    parser.add_argument("--file", help="a file with one text per line")
    parser.add_argument("--output", help="write JSON Lines here instead of printing")


def run(args: argparse.Namespace) -> int:
    from fastformer.cli.inputs import texts_from, write_lines
    from fastformer.tasks.classification import predict_texts

    texts = texts_from(args.texts, args.file, "predict")
    rows = predict_texts(args.model_dir, texts)
    write_lines([json.dumps(r) for r in rows], args.output)
    return 0
