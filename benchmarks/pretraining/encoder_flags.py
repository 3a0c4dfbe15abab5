"""Print the `--model FIELD=VALUE` flags that build, from scratch, the encoder a saved folder holds: its encoder
fields (fastformer.engine.init_from.ENCODER_FIELDS) plus dropout and LayerNorm epsilon, as the fine-tune from that
folder keeps them. The vocabulary comes with `--tokenizer FOLDER`, the attention type with `--architecture`.

    python benchmarks/pretraining/encoder_flags.py pretrained/fastformer-imdb-clm/config.json

Used by the pretraining probes and the full-protocol script for their from-scratch rows, so "the same model from
scratch" is the pretrained model's own configuration, defaults of the task that trained it included.
"""

from __future__ import annotations

import json
import sys


def encoder_flags(config_path: str) -> str:
    from fastformer.engine.init_from import ENCODER_FIELDS

    config = json.load(open(config_path))
    fields = (*ENCODER_FIELDS, "hidden_dropout_prob", "layer_norm_eps")
    kept = {k: config[k] for k in fields if k in config and k not in ("vocab_size", "pad_token_id", "attention_type")}
    return " ".join(f"--model {k}={json.dumps(v)}" for k, v in kept.items())


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if len(sys.argv) == 2 else 2)
    print(encoder_flags(sys.argv[1]))


if __name__ == "__main__":
    main()
