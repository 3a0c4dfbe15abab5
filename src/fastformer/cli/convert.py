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
    from fastformer.cli.outputs import OutputRefused, check_output_folder, staged_folder
    from fastformer.convert import from_official, load_checkpoint

    try:  # never over a run or any folder that holds something; written whole or not at all
        target = check_output_folder(args.output_dir, flag="OUTPUT", folders=(args.checkpoint,))
        model = from_official(load_checkpoint(args.checkpoint))
        with staged_folder(target) as staging:
            model.save_pretrained(staging)
    except (FileNotFoundError, KeyError, ValueError, OSError, OutputRefused) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error  # (no KeyError quotes)
        raise SystemExit(f"fastformer convert-official: {message}") from None
    c = model.config
    print(
        f"wrote {args.output_dir}: official preset, hidden {c.hidden_size}, {c.num_attention_heads} heads, "
        f"{c.num_hidden_layers} layers, vocab {c.vocab_size}, {c.num_labels} labels"
    )
    return 0
