"""Convert a checkpoint of the authors' notebook (.pt or .safetensors state_dict) into a save_pretrained directory.

The result loads with `AutoModelForSequenceClassification.from_pretrained(OUTPUT)` after `import fastformer.models`.
"""

from __future__ import annotations

import argparse

HELP = "convert an authors'-notebook checkpoint to a Hugging Face directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="the notebook's state_dict: .pt / .bin / .pth or .safetensors")
    parser.add_argument("output_dir", help="directory to write config.json and model.safetensors into")


def run(args: argparse.Namespace) -> int:
    from fastformer.convert import convert_official_file

    try:
        model = convert_official_file(args.checkpoint, args.output_dir)
    except (FileNotFoundError, KeyError) as error:
        raise SystemExit(f"fastformer convert-official: {error}") from None
    c = model.config
    print(
        f"wrote {args.output_dir}: official preset, hidden {c.hidden_size}, {c.num_attention_heads} heads, "
        f"{c.num_hidden_layers} layers, vocab {c.vocab_size}, {c.num_labels} labels"
    )
    return 0
