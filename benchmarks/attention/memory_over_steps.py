"""A training process's memory over steps, with and without handing freed memory back after each step.

    python benchmarks/attention/memory_over_steps.py                 # 100 steps, batch 8, each variant in a fresh
    process
    python benchmarks/attention/memory_over_steps.py --steps 300 --batch-size 32

The model is the causal classifier the pretrained comparison fine-tunes (pretrained/fastformer-imdb-clm's shape,
random weights), trained with AdamW on random tokens; each batch has its own padded length in [200, 512] and its own
real lengths, as dynamic padding gives. Variants: "default" (glibc as it is), "trimmed" (what the run skeleton does:
`fastformer.engine.skeleton.release_freed_memory()` after each step) and "fixed length" (default allocator,
every batch 512 tokens: the control that shows the growth comes from changing sizes). Results: resident memory
every 10 steps and the seconds taken, in benchmarks/attention/results/memory_over_steps.json with a machine header.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("default", "trimmed", "fixed length")


def measure(variant: str, steps: int, batch: int) -> dict:
    """One variant in this process: RSS (MB) every 10 steps, seconds."""
    import random

    import torch

    from fastformer.engine.skeleton import release_freed_memory
    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification

    saved = json.loads((ROOT / "pretrained" / "fastformer-imdb-clm" / "config.json").read_text())
    fields = FastformerConfig().to_dict()
    keep = {k: v for k, v in saved.items() if k in fields and k not in ("architectures", "transformers_version")}
    keep.pop("model_type", None)
    model = FastformerForSequenceClassification(FastformerConfig(**keep, num_labels=2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    torch.manual_seed(0)
    draw = random.Random(0)
    page = os.sysconf("SC_PAGE_SIZE")
    rss, start = [], time.perf_counter()
    for step in range(1, steps + 1):
        n = 512 if variant == "fixed length" else draw.randint(200, 512)
        ids = torch.randint(5, model.config.vocab_size, (batch, n))
        mask = torch.ones_like(ids)
        for row in range(batch):
            mask[row, draw.randint(n // 2, n) :] = 0
        model(input_ids=ids, attention_mask=mask, labels=torch.randint(0, 2, (batch,))).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if variant == "trimmed":
            release_freed_memory()
        if step % 10 == 0:
            with open("/proc/self/statm") as statm:
                rss.append(dict(step=step, rss_mb=round(int(statm.read().split()[1]) * page / 2**20)))
    return dict(variant=variant, steps=steps, batch_size=batch, seconds=round(time.perf_counter() - start, 1), rss=rss)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # a child process measures one
    parser.add_argument(
        "--output", default=str(ROOT / "benchmarks" / "attention" / "results" / "memory_over_steps.json")
    )
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(measure(args.variant, args.steps, args.batch_size)))
        return 0
    import torch

    rows = []
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--variant", variant, "--steps", str(args.steps)]
        done = subprocess.run([*command, "--batch-size", str(args.batch_size)], capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{variant}: {done.stderr[-2000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        first, last = rows[-1]["rss"][0]["rss_mb"], rows[-1]["rss"][-1]["rss_mb"]
        print(f"{variant}: {first} -> {last} MB, {rows[-1]['seconds']} s", flush=True)
    machine = dict(
        date=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        cpu=platform.processor() or platform.machine(),
        cores=len(os.sched_getaffinity(0)),
        threads=torch.get_num_threads(),
        torch=torch.__version__,
        python=platform.python_version(),
        libc=" ".join(platform.libc_ver()),
    )
    Path(args.output).write_text(json.dumps(dict(machine=machine, runs=rows), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
