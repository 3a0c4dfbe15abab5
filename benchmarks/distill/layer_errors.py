"""How close each student is to the teacher on the distillation run's own held-out pieces (the same texts, pieces and
per-dimension scales as `fastformer train distill` with these flags): per layer, from the teacher's input
(layerwise) and through the student's own stack (end-to-end), and the mean-pooled embedding's cosine. Rows: each
STUDENT folder, plus "no attention" (the first student with every attention output zeroed: the reference a
Fastformer layer must beat).

    python benchmarks/distill/layer_errors.py runs/minilm-fastformer runs/distill/minilm-layerwise [...]
        [--teacher runs/minilm-softmax] [--train runs/distill-corpus.jsonl.gz] [--max-eval-texts 200]
    python benchmarks/distill/layer_errors.py pretrained/fastformer-minilm-l6-distilled \
        runs/distill/student-news-titles --train runs/news-titles-train.jsonl --exclude runs/news-titles-test.jsonl \
        --exclude-where none --validation-fraction 0.05 --block-size 64 --min-block-tokens 1 --max-eval-texts 0 \
        --no-reference --out benchmarks/distill/results/layer-errors-news-titles.json   (news_titles.sh's split)

Writes benchmarks/distill/results/layer-errors.json (one row per student).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

IMDB = "../shared/data/imdb/imdb_ratings.jsonl.gz"


def key_value(text: str) -> dict[str, str] | None:
    """--exclude-where: "KEY=VALUE" -> {KEY: VALUE}; "none" -> None."""
    if text == "none":
        return None
    key, sep, value = text.partition("=")
    if not (key and sep):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE or none, got {text!r}")
    return {key: value}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("students", nargs="+")
    parser.add_argument("--teacher", default="runs/minilm-softmax")
    parser.add_argument("--train", default="runs/distill-corpus.jsonl.gz")
    parser.add_argument("--max-eval-texts", type=int, default=200, help="0: all of them")
    parser.add_argument("--validation-fraction", type=float, default=0.01)
    parser.add_argument("--exclude", nargs="+", default=[IMDB], help="as the run's --exclude")
    parser.add_argument(
        "--exclude-where", default="split=test", type=key_value, help="KEY=VALUE filter of --exclude, or none"
    )
    parser.add_argument("--block-size", type=int, default=256)
    parser.add_argument("--min-block-tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/distill/results/layer-errors.json")
    parser.add_argument("--no-reference", action="store_true", help="leave out the 'no attention' row")
    args = parser.parse_args(argv)
    from fastformer.engine.init_from import pretrained_tokenizer
    from fastformer.engine.state_loss import teacher_scales
    from fastformer.tasks.distill.config import DistillationConfig
    from fastformer.tasks.distill.distillation import (
        SCALE_PIECES,
        PaddingCollator,
        WrappedPieces,
        held_out_scores,
        load_fastformer,
        load_teacher,
    )
    from fastformer.tasks.pretrain.corpus import load_texts

    cfg = DistillationConfig(
        train=args.train, teacher=args.teacher, init_from=args.students[0], exclude=args.exclude,
        exclude_where=args.exclude_where,
        max_eval_texts=args.max_eval_texts or None, validation_fraction=args.validation_fraction,
        block_size=args.block_size, min_block_tokens=args.min_block_tokens, seed=args.seed,
    )  # fmt: skip
    texts = load_texts(cfg, {}, "layer_errors")
    tokenizer = pretrained_tokenizer(args.students[0])
    pieces = WrappedPieces(texts["validation"], tokenizer, args.block_size, cfg.min_block_tokens)
    collate = PaddingCollator(tokenizer.pad_token_id)
    teacher = load_teacher(args.teacher)
    calibration = collate([pieces[i] for i in range(min(SCALE_PIECES, len(pieces)))])
    with torch.no_grad():
        scales = teacher_scales(teacher(**calibration, output_hidden_states=True).hidden_states,
                                calibration["attention_mask"].bool())  # fmt: skip
    rows = {}
    for folder in [*args.students, *([] if args.no_reference else ["no attention"])]:
        student = load_fastformer("student", Path(args.students[0] if folder == "no attention" else folder))
        if folder == "no attention":
            with torch.no_grad():
                for layer in student.encoder.layers:
                    layer.attention.transform.weight.zero_()
                    layer.attention.transform.bias.zero_()
                    layer.attention.query_residual = False
        rows[folder] = held_out_scores(student, teacher, pieces, collate, scales, 16, True)
        print(json.dumps({folder: rows[folder]}), file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(dict(teacher=args.teacher, texts=len(texts["validation"]), rows=rows), indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
