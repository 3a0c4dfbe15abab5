"""Predict with a trained folder: a classifier labels texts given here or one per line of a file; a news recommender
ranks the candidates of every impression of a MIND folder (`--data`) into the leaderboard's prediction file
(`impression_id [rank1,rank2,...]`, 1-based ranks in candidate order); a summarizer summarizes documents given here
or one per line of a file."""

from __future__ import annotations

import argparse
import json

HELP = "predict labels for texts or a file of texts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument("texts", nargs="*", help="texts to classify")
    parser.add_argument("--file", help="a file with one text per line")
    parser.add_argument("--data", help="news: a MIND folder or behaviors.tsv (labels not needed) to rank")
    parser.add_argument("--output", help="write here instead of printing (news: default MODEL_DIR/prediction.txt)")


def run(args: argparse.Namespace) -> int:
    from fastformer.cli.inputs import model_kind, texts_from, write_lines
    from fastformer.tasks.classification import predict_texts

    kind = model_kind(args.model_dir)
    if kind == "summarize":
        from fastformer.tasks.summarization import generation_settings, load_model, summarize

        documents = texts_from(args.texts, args.file, "predict", what="documents")
        model, tokenizer = load_model(args.model_dir)
        summaries = summarize(model, tokenizer, documents, generation_settings(args.model_dir))
        write_lines(
            [json.dumps(dict(document=d[:80], summary=s)) for d, s in zip(documents, summaries, strict=True)],
            args.output,
        )
        return 0
    if kind == "news":
        from pathlib import Path

        from fastformer.data import DataError
        from fastformer.tasks.news_recommendation import rank_split

        if not args.data:
            raise SystemExit("fastformer predict: a news recommender ranks a MIND folder: give --data")
        output = args.output or str(Path(args.model_dir) / "prediction.txt")
        try:
            _, report = rank_split(args.model_dir, args.data, output=output)
        except (DataError, ValueError, OSError) as error:
            raise SystemExit(f"fastformer predict: {error}") from None
        print(f"{report.impressions} impressions ranked -> {output}")
        if report.summary():
            print(report.summary())
        return 0
    if args.data:
        raise SystemExit("fastformer predict: --data is for news recommenders; give texts or --file")
    texts = texts_from(args.texts, args.file, "predict")
    rows = predict_texts(args.model_dir, texts)
    write_lines([json.dumps(r) for r in rows], args.output)
    return 0
