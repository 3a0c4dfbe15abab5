"""Convert MINDRec JSON (real MIND titles and clicks as Yes/No records) into a MIND folder (news.tsv, behaviors.tsv).

Every user (a distinct clicked history) becomes one impression listing the user's target news with their click
labels; news ids are hashes of the titles. See `fastformer.data.mind.convert_mindrec`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "convert MINDRec JSON to MIND's news.tsv / behaviors.tsv"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("json_file", help="a MINDRec JSON list (.json or .json.gz)")
    parser.add_argument("output_dir", help="folder to write news.tsv and behaviors.tsv into")
    parser.add_argument("--overwrite", action="store_true", help="replace news.tsv / behaviors.tsv already there")


def run(args: argparse.Namespace) -> int:
    from fastformer.cli.outputs import OutputRefused, check_output
    from fastformer.data import DataError
    from fastformer.data.mind import convert_mindrec

    source = Path(args.json_file)
    if not source.is_file():  # (the reader's FileNotFoundError read "[Errno 2] No such file or directory: ...")
        raise SystemExit(
            f"fastformer convert-mindrec: {source}: {'is a folder' if source.is_dir() else 'no such file'}"
        )
    folder = Path(args.output_dir)
    try:
        if folder.is_dir():  # a new folder is made by the conversion; an existing one keeps what is not ours to replace
            for name in ("news.tsv", "behaviors.tsv"):
                check_output(folder / name, flag="output_dir", inputs=(args.json_file,), overwrite=args.overwrite)
    except OutputRefused as error:
        raise SystemExit(f"fastformer convert-mindrec: {error}") from None
    try:
        counts = convert_mindrec(args.json_file, args.output_dir)
    except (DataError, FileNotFoundError) as error:
        raise SystemExit(f"fastformer convert-mindrec: {error}") from None
    print(json.dumps(dict(output_dir=args.output_dir, **counts)))
    return 0
