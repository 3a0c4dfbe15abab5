"""Predict labels with a trained classification folder, for texts given here or one per line of a file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "predict labels for texts or a file of texts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument("texts", nargs="*", help="texts to classify")
    parser.add_argument("--file", help="a file with one text per line")
    parser.add_argument("--output", help="write JSON Lines here instead of printing")


def run(args: argparse.Namespace) -> int:
    from fastformer.tasks.classification import predict_texts

    texts = list(args.texts)
    if args.file:
        path = Path(args.file)
        if not path.is_file():
            raise SystemExit(f"fastformer predict: {path}: no such file")
        texts += [line.rstrip("\n") for line in path.open(encoding="utf-8") if line.strip()]
    if not texts:
        raise SystemExit("fastformer predict: give texts or --file")
    rows = predict_texts(args.model_dir, texts)
    lines = [json.dumps(r) for r in rows]
    if args.output:
        Path(args.output).write_text("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))
    return 0
