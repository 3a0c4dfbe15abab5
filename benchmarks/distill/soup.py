"""A uniform model soup (Wortsman et al. 2022, "Model soups"): the weights of several runs fine-tuned from one start,
averaged into one model of the same size and cost, written as a folder `fastformer evaluate` scores.

    python benchmarks/distill/soup.py runs/distill/soup-ht1024 \
        runs/distill/imdb2-gpu-student-lm3-task-distilled-ht1024-seed{1,2,3}
    fastformer evaluate runs/distill/soup-ht1024 --data ../shared/data/imdb/imdb_ratings.jsonl.gz --where split=test

With `--last-checkpoints K` and one run, the soup is that run's last K checkpoints averaged (tail averaging, as
in Izmailov et al. 2018's SWA without its cyclic schedule): the product of a single run, at no training cost.

    python benchmarks/distill/soup.py runs/distill/tail-seed1 \
        runs/distill/imdb2-gpu-student-lm3-task-distilled-ht1024-seed1 --last-checkpoints 2

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


def refusal(folders: list[Path], same_settings: bool = True) -> str | None:
    """Why these folders cannot be averaged, or None (`same_settings`: compare their run_config.json too)."""
    for folder in folders:
        if not (folder / WEIGHTS).is_file():
            return f"{folder}: no {WEIGHTS} (a finished run folder)"
    configs = [json.loads((folder / "config.json").read_text()) for folder in folders]
    if any(config != configs[0] for config in configs[1:]):
        return "the folders' config.json differ: models of other shapes or heads have nothing to average"
    vocabularies = [(folder / "tokenizer.json").read_bytes() for folder in folders]
    if any(vocabulary != vocabularies[0] for vocabulary in vocabularies[1:]):
        return "the folders' tokenizer.json differ: a token's embedding row means another token in each"
    if not same_settings:
        return None
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


def last_checkpoints(run: Path, count: int) -> list[Path] | str:
    """The run's last `count` complete checkpoints (its checkpoints/checkpoint-N, by step), or why there are none."""
    steps = []
    for checkpoint in (run / "checkpoints").glob("checkpoint-*"):
        if checkpoint.name.removeprefix("checkpoint-").isdigit() and (checkpoint / "trainer_state.json").is_file():
            steps.append((int(checkpoint.name.removeprefix("checkpoint-")), checkpoint))
    if len(steps) < count:
        return f"{run / 'checkpoints'}: {len(steps)} complete checkpoint(s), fewer than --last-checkpoints {count}"
    return [checkpoint for _, checkpoint in sorted(steps)[-count:]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="the soup's folder (must not exist)")
    parser.add_argument("folders", type=Path, nargs="+", help="finished run folders of one recipe, two or more")
    parser.add_argument(
        "--last-checkpoints", type=int, metavar="K", help="average one run's last K checkpoints instead (K >= 2)"
    )
    args = parser.parse_args(argv)
    run = None
    if args.last_checkpoints is not None:
        if len(args.folders) != 1 or args.last_checkpoints < 2:
            sys.exit("soup.py: --last-checkpoints K takes one run folder and K >= 2")
        run = args.folders[0]
        if not (run / "run_complete.json").is_file():
            sys.exit(f"soup.py: {run}: not a finished run folder (no run_complete.json)")
        found = last_checkpoints(run, args.last_checkpoints)
        if isinstance(found, str):
            sys.exit(f"soup.py: {found}")
        args.folders = found
    if len(args.folders) < 2:
        sys.exit("soup.py: give two or more run folders")
    if args.output.exists():
        sys.exit(f"soup.py: {args.output} exists")
    # (a run's checkpoints carry no run_config.json: one run's settings are one recipe by construction)
    why = refusal(args.folders, same_settings=run is None)
    if why:
        sys.exit(f"soup.py: {why}")
    staging = args.output.with_name(args.output.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_file(soup(args.folders), str(staging / WEIGHTS), metadata={"format": "pt"})
    source = run or args.folders[0]
    for name in COPIED:
        if (source / name).is_file():
            shutil.copy2(source / name, staging / name)
    key = "tail_average_of" if run else "uniform_soup_of"
    (staging / "soup.json").write_text(json.dumps({key: [str(f) for f in args.folders]}, indent=1))
    staging.rename(args.output)
    what = f"{run}'s last {len(args.folders)} checkpoints'" if run else f"{len(args.folders)} runs'"
    print(f"soup.py: {args.output}: the mean of {what} weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
