"""Predict with a trained folder of any task (the folder says which): a classifier or TF-IDF baseline labels texts
given here or one per line of a file; a language model continues them; a summarizer (or the Lead-3 baseline)
summarizes documents; a news recommender ranks the candidates of every impression of a MIND folder (`--data`) into
the leaderboard's prediction file (`impression_id [rank1,rank2,...]`, 1-based ranks in candidate order)."""

from __future__ import annotations

import argparse
import json

HELP = "predict with a trained folder: labels, continuations, summaries or rankings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument("texts", nargs="*", help="texts (documents, prompts) to predict for")
    parser.add_argument("--file", help="a file with one text per line")
    parser.add_argument("--data", help="news: a MIND folder or behaviors.tsv (labels not needed) to rank")
    parser.add_argument("--max-new-tokens", type=int, default=40, help="lm: tokens generated per prompt")
    parser.add_argument("--output", help="write here instead of printing (news: default MODEL_DIR/prediction.txt)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from fastformer.cli.inputs import texts_from, write_lines
    from fastformer.data import DataError
    from fastformer.tasks.registry import NotARunFolder, task_of_folder

    try:
        task, architecture = task_of_folder(args.model_dir)
    except NotARunFolder as error:
        raise SystemExit(f"fastformer predict: {error}") from None
    if task == "news":
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
    if task == "summarize":
        documents = texts_from(args.texts, args.file, "predict", what="documents")
        summaries = summarize_documents(args.model_dir, documents, architecture)
        rows = [dict(document=d[:80], summary=s) for d, s in zip(documents, summaries, strict=True)]
    elif task == "lm":
        from fastformer.tasks.language_modeling import generate_texts

        prompts = texts_from(args.texts, args.file, "predict", what="prompts")
        continuations = generate_texts(args.model_dir, prompts, max_new_tokens=args.max_new_tokens)
        rows = [dict(prompt=p[:80], continuation=c) for p, c in zip(prompts, continuations, strict=True)]
    else:
        texts = texts_from(args.texts, args.file, "predict")
        if architecture == "tfidf":
            from fastformer.tasks.tfidf_baseline import predict_tfidf

            try:
                rows = predict_tfidf(args.model_dir, texts)
            except ValueError as error:
                raise SystemExit(f"fastformer predict: {error}") from None
        else:
            from fastformer.tasks.classification import predict_texts

            rows = predict_texts(args.model_dir, texts)
    write_lines([json.dumps(r) for r in rows], args.output)
    return 0


def summarize_documents(model_dir: str, documents: list[str], architecture: str | None) -> list[str]:
    """Summaries from a summarizer folder, or the documents' first three sentences from a Lead-3 folder."""
    from fastformer.data.summarization import split_sentences
    from fastformer.tasks.summarization import generation_settings, load_model, summarize

    if architecture == "lead3":
        return ["\n".join(split_sentences(d)[:3]) for d in documents]
    model, tokenizer = load_model(model_dir)
    return summarize(model, tokenizer, documents, generation_settings(model_dir))
