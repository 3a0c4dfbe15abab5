"""A uniform model soup (Wortsman et al. 2022, "Model soups"): the weights of several runs fine-tuned from one start,
averaged into one model of the same size and cost, written as a folder `fastformer evaluate` scores.

    python benchmarks/distill/soup.py runs/distill/soup-ht1024 \
        runs/distill/imdb2-gpu-student-lm3-task-distilled-ht1024-seed{1,2,3}
    fastformer evaluate runs/distill/soup-ht1024 --data ../shared/data/imdb/imdb_ratings.jsonl.gz --where split=test

Averaging helps where the runs stay in one basin of the loss (fine-tuned from the same pretrained start, as these
students are): the soup then scores like an ensemble of the runs at the cost of one model. Runs of different starts
or shapes have nothing to average and are refused. Each seed's validation reviews are training reviews of the other
seeds, so a soup of seeds is scored on the test split only, and as a uniform soup (no choice made on any split).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

WEIGHTS = "model.safetensors"
# besides the weights: what `fastformer evaluate` reads of a run folder (its task from config.json's architectures)
COPIED = ("config.json", "run_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
# (and nothing that makes another model; the tokenizer's source may differ where its vocabulary is the same)
SETTINGS_THAT_MAY_DIFFER = {"seed", "output_dir", "overwrite", "resume", "tokenizer"}


def refusal(folders: list[Path]) -> str | None:
    """Why these folders cannot be averaged, or None."""
    for folder in folders:
        if not (folder / WEIGHTS).is_file():
            return f"{folder}: no {WEIGHTS} (a finished run folder)"
    configs = [json.loads((folder / "config.json").read_text()) for folder in folders]
    if any(config != configs[0] for config in configs[1:]):
        return "the folders' config.json differ: models of other shapes or heads have nothing to average"
    vocabularies = [(folder / "tokenizer.json").read_bytes() for folder in folders]
    if any(vocabulary != vocabularies[0] for vocabulary in vocabularies[1:]):
        return "the folders' tokenizer.json differ: a token's embedding row means another token in each"
    settings = [json.loads((folder / "run_config.json").read_text()) for folder in folders]
    for folder, setting in zip(folders[1:], settings[1:], strict=True):
        differing = sorted(k for k in setting.keys() | settings[0].keys() if setting.get(k) != settings[0].get(k))
        differing = [k for k in differing if k not in SETTINGS_THAT_MAY_DIFFER]
        if differing:
            return f"{folder}: trained otherwise than {folders[0]} ({', '.join(differing)}): not one recipe's seeds"
    return None


def soup(folders: list[Path]) -> dict[str, torch.Tensor]:
    """The mean of the folders' tensors, summed in float64 and stored in each tensor's own dtype (integer buffers: the
    first's)."""
    first = load_file(str(folders[0] / WEIGHTS))
    total = {name: tensor.double() for name, tensor in first.items() if tensor.is_floating_point()}
    for folder in folders[1:]:
        for name, tensor in load_file(str(folder / WEIGHTS)).items():
            if name in total:
                total[name] += tensor.double()
    return {
        name: (total[name] / len(folders)).to(tensor.dtype) if name in total else tensor
        for name, tensor in first.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="the soup's folder (must not exist)")
    parser.add_argument("folders", type=Path, nargs="+", help="finished run folders of one recipe, two or more")
    args = parser.parse_args(argv)
    if len(args.folders) < 2:
        sys.exit("soup.py: give two or more run folders")
    if args.output.exists():
        sys.exit(f"soup.py: {args.output} exists")
    why = refusal(args.folders)
    if why:
        sys.exit(f"soup.py: {why}")
    staging = args.output.with_name(args.output.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_file(soup(args.folders), str(staging / WEIGHTS), metadata={"format": "pt"})
    for name in COPIED:
        if (args.folders[0] / name).is_file():
            shutil.copy2(args.folders[0] / name, staging / name)
    (staging / "soup.json").write_text(json.dumps(dict(uniform_soup_of=[str(f) for f in args.folders]), indent=1))
    staging.rename(args.output)
    print(f"soup.py: {args.output}: the mean of {len(args.folders)} runs' weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
