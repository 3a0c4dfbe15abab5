"""bfloat16 autocast against float32 on this CPU: the measurement behind `--bf16`'s fallback (precision.py).

Where the CPU has bfloat16 dot products (AVX512_BF16 or AMX), bf16 autocast makes a fine-tuning step faster; where
oneDNN emulates them (AVX-512 without BF16) or torch has no oneDNN bf16 path (AVX2 only: a scalar loop on one thread),
slower. Measured here: the fine-tuning step and inference of `speed.py` (a classifier on all-MiniLM-L6-v2 converted both
ways, real IMDB text) at one length, in float32 and under bf16 autocast, for the shipped student's form (local mixing
3) and the teacher; and one Linear 384 -> 1,536 over 4,096 tokens, forward + backward, the product every layer makes.
The header says what `fastformer` decides here (`bf16_autocast_chosen`, precision.py), whether torch sends bf16
products to oneDNN (`onednn_bf16`) and any oneDNN cap: `ONEDNN_MAX_CPU_ISA=AVX512_CORE` measures, on a CPU with
AVX512_BF16, the arithmetic of one without (a Skylake, Cascade Lake or Ice Lake Xeon).

    OMP_NUM_THREADS=2 python benchmarks/distill/cpu_bf16.py [--length 512] [--rows 8] [--repeats 2]

Writes benchmarks/distill/results/cpu_bf16_<cpu threads, processor, instructions>_torch<version>.json. Run it alone
on the machine: on an AVX2 CPU the bf16 settings take minutes (a step at ~60 tokens/s).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import IMDB_UNSUP, one_setting, result_name  # noqa: E402


def linear_seconds(bf16: bool, repeats: int) -> float:
    """One Linear 384 -> 1,536 over 4,096 tokens, forward + backward: the fastest of `repeats` after a warm-up."""
    layer = torch.nn.Linear(384, 1536)
    x = torch.randn(4096, 384, requires_grad=True)
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            y = layer(x)
        y.float().sum().backward()
        times.append(time.perf_counter() - start)
    return min(times[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--rows", type=int, default=8, help="rows of --length tokens a step")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--forms", nargs="+", default=["fastformer-lm3", "softmax"])
    parser.add_argument("--texts", default=IMDB_UNSUP)
    parser.add_argument("--out", default="benchmarks/distill/results")
    args = parser.parse_args(argv)
    from fastformer.benchmark.runner import machine_header
    from fastformer.precision import cpu_multiplies_bf16, onednn_bf16

    header = machine_header("float32 and bfloat16 autocast", "cpu")
    header["bf16_autocast_chosen"] = cpu_multiplies_bf16()  # (files before 2026-12-08: `bf16_kernels`, oneDNN's check)
    header["onednn_bf16"] = onednn_bf16()
    rows = []
    for form in args.forms:
        for bf16 in (False, True):
            row = one_setting(form, args.length, args.rows * args.length, args.repeats, texts=args.texts, bf16=bf16)
            for shared in ("peak_rss_mib", "rss_before_steps_mib"):  # one process for all: not this setting's own
                row.pop(shared)
            rows.append(dict(row, arithmetic="bf16 autocast" if bf16 else "float32"))
            print(json.dumps(rows[-1]), file=sys.stderr)
    linear = {name: round(linear_seconds(bf16, args.repeats) * 1000, 1) for name, bf16 in (("float32", False),
              ("bf16 autocast", True))}  # fmt: skip
    ratios = {}
    for form in args.forms:
        f32, bf16 = (
            next(r for r in rows if r["model"] == form and r["arithmetic"] == a) for a in ("float32", "bf16 autocast")
        )
        ratios[form] = {key: round(bf16[key] / f32[key], 3) for key in ("train_tokens_per_s", "inference_tokens_per_s")}
    result = dict(machine=header, length=args.length, rows=rows, linear_ms=linear, bf16_over_float32=ratios)
    name = result_name("cpu_bf16", header, "cpu")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / name).write_text(json.dumps(result, indent=1))
    print(f"bf16 autocast chosen: {header['bf16_autocast_chosen']}; one Linear forward + backward "
          f"{linear['float32']} ms float32, {linear['bf16 autocast']} ms bf16 autocast")  # fmt: skip
    for form, ratio in ratios.items():
        print(f"{form}: bf16 autocast over float32, train {ratio['train_tokens_per_s']}x, "
              f"inference {ratio['inference_tokens_per_s']}x")  # fmt: skip
    print(f"wrote {Path(args.out) / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
