"""Efficiency benchmark: time and peak memory of one attention block, Fastformer against real baselines.

The paper's Figure 2 sweep (`--sweep paper`): N = 128 ... 65,536 with the batch scaled so every step holds the same
number of tokens (512 x 128 ... 1 x 65,536), training (forward + backward) and inference, hidden 256, 16 heads.
`--sweep fixed` keeps the batch fixed instead. `--fast` is a one-minute look. Results (JSON, CSV, PNG) carry a
machine header, in `--out` (default runs/bench); `--targets` also prints the project's speed and memory targets.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

HELP = "benchmark Fastformer against softmax attention and efficient-attention baselines"

FAST_VARIANTS = [
    "fastformer-official",
    "fastformer-paper",
    "projections-only",
    "softmax-sdpa",
    "lucidrains-fast-transformer",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fastformer.cli.settings import bounded

    parser.add_argument("--sweep", choices=["paper", "fixed", "both"], default="paper")
    parser.add_argument("--fast", action="store_true", help="a quick look: few variants and lengths, ~1 minute")
    parser.add_argument("--variants", nargs="+", help="registry names (fastformer.benchmark.registry); default: all")
    positive = bounded(1)
    parser.add_argument(
        "--lengths", type=positive, nargs="+", help="default: 128 ... 65536 (paper), 128 ... 16384 (fixed)"
    )
    parser.add_argument("--tokens", type=positive, default=65536, help="tokens per step in the paper sweep")
    parser.add_argument("--batch-size", type=positive, default=4, help="batch of the fixed sweep")
    parser.add_argument("--modes", nargs="+", choices=["train", "inference"], default=["train", "inference"])
    parser.add_argument("--hidden-size", type=positive, default=256)
    parser.add_argument("--heads", type=positive, default=16)
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--repeats", type=positive, default=5)
    parser.add_argument(
        "--budget-s",
        type=bounded(0, float, above=True),
        default=20.0,
        help="a step slower than this ends that variant's sweep",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    parser.add_argument("--out", default="runs/bench", help="folder for the JSON, CSV and PNG files")
    parser.add_argument(
        "--targets",
        action="store_true",
        help="also print the project's own speed and memory targets (issue acceptance checks) as MET / NOT MET",
    )


def _shapes(args, sweep: str) -> list[tuple[int, int]]:
    if sweep == "paper":
        lengths = args.lengths or [2**i for i in range(7, 17)]
        return [(max(1, args.tokens // n), n) for n in lengths]
    lengths = args.lengths or [2**i for i in range(7, 15)]
    return [(args.batch_size, n) for n in lengths]


def run(args: argparse.Namespace) -> int:
    import torch

    from fastformer.benchmark import machine_header, targets, write_results
    from fastformer.benchmark import run as run_cells
    from fastformer.benchmark.plot import plot
    from fastformer.benchmark.registry import VARIANTS
    from fastformer.benchmark.runner import print_cell
    from fastformer.cli.demo import check_shape_flags

    unknown = sorted(set(args.variants or ()) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"fastformer bench: --variants: unknown {unknown}; choose from {sorted(VARIANTS)}")
    check_shape_flags("bench", args)
    if not re.fullmatch(r"cpu|cuda(:\d+)?", args.device):
        raise SystemExit(f"fastformer bench: --device {args.device!r}: cpu, cuda or cuda:N")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"fastformer bench: --device {args.device}: this torch sees no CUDA device")
    if args.fast:
        args.variants = args.variants or FAST_VARIANTS
        args.lengths = args.lengths or [512, 2048, 8192]
        args.tokens, args.repeats, args.budget_s = min(args.tokens, 8192), min(args.repeats, 3), min(args.budget_s, 5)
        args.sweep = "paper" if args.sweep == "both" else args.sweep
    variants = args.variants or list(VARIANTS)
    header = machine_header(args.dtype, args.device)
    print("machine:", json.dumps(header))
    kind = "cuda" if args.device.startswith("cuda") else f"cpu{torch.get_num_threads()}t"
    torch_version = re.sub(r"[^0-9]+", "_", torch.__version__.split("+")[0])  # no dots: they read as suffixes
    sweeps = ["paper", "fixed"] if args.sweep == "both" else [args.sweep]
    for sweep in sweeps:
        shapes = _shapes(args, sweep)
        print(f"\n== sweep {sweep}: (batch, N) = {shapes}")
        stem = Path(args.out) / f"{sweep}_{kind}_{args.dtype}_torch{torch_version}{'_fast' if args.fast else ''}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        cells_path = stem.with_suffix(".cells.jsonl")  # grows cell by cell: a crash keeps what was measured
        cells_path.unlink(missing_ok=True)
        cells = run_cells(
            variants,
            shapes,
            modes=args.modes,
            hidden=args.hidden_size,
            heads=args.heads,
            dtype=args.dtype,
            device=args.device,
            repeats=args.repeats,
            budget_s=args.budget_s,
            with_memory=not args.no_memory,
            progress=print_cell,
            cells_path=cells_path,
        )
        settings = {k: v for k, v in vars(args).items() if k != "func"}
        settings["shapes"] = shapes
        json_path, csv_path = write_results(cells, header, settings, stem)
        title = f"batch x N = {args.tokens} tokens" if sweep == "paper" else f"batch {args.batch_size}"
        png = plot(cells, header, f"hidden {args.hidden_size}, {args.heads} heads, {title}", stem.with_suffix(".png"))
        print(f"wrote {json_path}, {csv_path}, {png}")
        if args.targets:
            for name, result in targets(cells).items():
                print(f"target {name}: {'MET' if result.get('met') else 'NOT MET'} {json.dumps(result)}")
    return 0
