"""Convert a pretrained BERT-family encoder (a Hugging Face or sentence-transformers folder, or its .zip) into a
`fastformer` folder with the teacher's tokenizer: `--attention fastformer` (the default) swaps every layer's softmax
attention for Fastformer's on BERT's own projections; `--attention softmax` keeps the network exactly (the control,
and a distillation's teacher). The result fine-tunes with `fastformer train ... --init-from OUT` and loads with
`AutoModel.from_pretrained(OUT)` after `import fastformer`. See `fastformer.convert_bert`.
"""

from __future__ import annotations

import argparse

HELP = "convert a pretrained BERT (Hugging Face / sentence-transformers folder or .zip) to a fastformer folder"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="a BERT folder (config.json, model.safetensors, tokenizer) or a .zip of one")
    parser.add_argument("output_dir", help="the folder to write (must not exist, or be empty, unless --overwrite)")
    parser.add_argument(
        "--attention",
        choices=("fastformer", "softmax"),
        default="fastformer",
        help="fastformer: Fastformer attention on BERT's projections; softmax: BERT itself, exactly (default: "
        "fastformer)",
    )
    parser.add_argument(
        "--max-positions",
        type=int,
        default=None,
        metavar="N",
        help="positions of the converted model (default: the source's); rows past the source's tile its later half",
    )
    parser.add_argument(
        "--local-mixing",
        type=int,
        default=0,
        metavar="K",
        help="fastformer form: add identity-initialised K-token convolutions on q, k, v (local mixing; default 0: off)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def run(args: argparse.Namespace) -> int:
    from fastformer.convert_bert import ConversionError, convert_bert_folder

    try:
        model, report = convert_bert_folder(
            args.source, args.output_dir, args.attention, args.max_positions, args.overwrite, args.local_mixing
        )
    except ConversionError as error:
        raise SystemExit(f"fastformer convert-bert: {error}") from None
    c = model.config
    print(
        f"wrote {args.output_dir}: {report['attention']} attention, hidden {c.hidden_size}, {c.num_attention_heads} "
        f"heads, {c.num_hidden_layers} layers, vocab {c.vocab_size}, {c.max_position_embeddings} positions "
        f"(source {report['teacher_positions']}), pooler = {report['pooling']} pooling"
        + (f", local mixing over {c.local_mixing} tokens" if c.local_mixing else "")
        + (f"; dropped {len(report['dropped_tensors'])} head tensors" if report["dropped_tensors"] else "")
    )
    return 0
