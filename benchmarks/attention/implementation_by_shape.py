"""Which attention path is fastest at which shape: the measured table behind `implementation="auto"`.

    OMP_NUM_THREADS=1 python benchmarks/attention/implementation_by_shape.py [--threads 1] [--repeats 5] [--out DIR]

Times FastformerAttention (the `paper` and `official` presets' attention, hidden 256, 16 heads) through each path the
preset allows ("fused_block", "fused", "eager"), forward + backward (train) and forward under no_grad (inference), at
the batch x length shapes the tasks train at (classification 64-1,024 tokens, pretraining 512) and the long ones of
the efficiency sweep. The fastest of `--repeats` steps after a warm-up (other work only adds time). Writes
DIR/implementation_by_shape_<machine>.json with a machine header, and prints, per shape, the fastest path and how
much slower the one "auto" picks is. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json

import torch

SHAPES = [(32, 64), (32, 256), (32, 512), (8, 1024), (4, 4096), (1, 16384)]  # (batch, N)


def main() -> None:
    from fastformer.benchmark.runner import write_cpu_result
    from fastformer.layers import FastformerAttention
    from fastformer.layers.attention import attention_implementation
    from fastformer.presets import PRESETS, attention_kwargs
    from fastformer.profiling import time_call

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/attention/results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for preset in ("paper", "official"):
        switches = attention_kwargs(PRESETS[preset])
        auto = attention_implementation(
            "auto",
            interaction=switches["interaction"],
            query_value_sharing=switches["query_value_sharing"],
            transform=switches["transform"],
            causal=False,
        )
        for batch, n in SHAPES:
            x = torch.randn(batch, n, 256)
            mask = torch.ones(batch, n, dtype=torch.bool)
            mask[0, n // 2 :] = False  # one padded row, as real batches have
            for mode in ("train", "inference"):
                times = {}
                for path in ("fused_block", "fused", "eager"):
                    try:
                        torch.manual_seed(0)
                        layer = FastformerAttention(256, 16, **{**switches, "implementation": path})
                    except ValueError:  # a path this preset's configuration does not allow
                        continue
                    if mode == "train":
                        inputs = x.clone().requires_grad_(True)

                        def step(layer=layer, inputs=inputs, mask=mask):
                            layer(inputs, mask).sum().backward()
                    else:

                        def step(layer=layer, x=x, mask=mask):
                            with torch.no_grad():
                                layer(x, mask)

                    times[path] = round(1e3 * time_call(step, args.repeats)["min"], 2)
                best = min(times, key=times.get)
                rows.append(
                    dict(
                        preset=preset,
                        batch=batch,
                        n=n,
                        mode=mode,
                        ms=times,
                        fastest=best,
                        auto=auto,
                        auto_over_fastest=round(times[auto] / times[best], 3),
                    )
                )
                print(json.dumps(rows[-1]), flush=True)
    path = write_cpu_result(args.out, "implementation_by_shape", args.threads, repeats=args.repeats, rows=rows)
    worst = max(rows, key=lambda r: r["auto_over_fastest"])
    print(
        f"auto is the fastest path in {sum(r['fastest'] == r['auto'] for r in rows)} of {len(rows)} cells; worst: "
        f"{worst['auto_over_fastest']}x at {worst['preset']} {worst['batch']}x{worst['n']} {worst['mode']}"
    )
    print(f"written: {path}")


if __name__ == "__main__":
    main()
