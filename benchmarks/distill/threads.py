"""Two cores, two ways to spend them on fine-tuning runs: one run on both cores, or two one-thread runs side by side.

    python benchmarks/distill/threads.py [--length 512] [--batch-tokens 8192]
    python benchmarks/distill/threads.py --table benchmarks/distill/results/threads_cpu_torch2_13_0.json   (RESULTS)

For the teacher (all-MiniLM-L6-v2, softmax form) and the shipped student's form (Fastformer, local mixing 3), the
fine-tuning step of `speed.py` (forward + backward + AdamW of a classifier, bf16 autocast, real IMDB text) is timed
in three settings, each in processes of their own: one process on one thread, one on two threads, and two one-thread
processes started together. Printed: each process's training tokens/s and the machine's total, so a campaign of
runs longer than a session can choose between finishing one run sooner (both cores) and finishing more work (side by
side). Run it alone on the machine. Writes benchmarks/distill/results/threads_cpu_torch<version>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

SPEED = str(Path(__file__).with_name("speed.py"))
FORMS = ("softmax", "fastformer-lm3")  # the teacher; the shipped student's form
SETTINGS = (("one run, 1 thread", 1, 1), ("one run, 2 threads", 2, 1), ("two runs side by side, 1 thread each", 1, 2))


def run_together(form: str, length: int, batch_tokens: int, repeats: int, threads: int, processes: int) -> list[dict]:
    """`processes` children of speed.py measuring (form, length) at once, `threads` threads each: their rows."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    child = [sys.executable, SPEED, "--one", form, str(length), "--batch-tokens", str(batch_tokens),
             "--repeats", str(repeats)]  # fmt: skip
    running = [subprocess.Popen(child, env=env, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    rows = []
    for process in running:
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"threads.py: speed.py --one {form} {length} failed (exit {process.returncode})")
        rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


def table(result: dict) -> str:
    """docs/RESULTS.md's table: per setting and model, each run's training tokens/s and the machine's total."""
    lines = ["| setting | model | training tokens/s a run | the machine's total | a run's time against one thread |",
             "|---|---|---:|---:|---:|"]  # fmt: skip
    single = {r["model"]: r["runs"][0] for r in result["rows"] if r["threads"] == 1 and r["processes"] == 1}
    for row in result["rows"]:
        runs = [r["train_tokens_per_s"] for r in row["runs"]]
        each = " / ".join(f"{t:,.0f}" for t in runs)
        speed = min(runs) / single[row["model"]]["train_tokens_per_s"]
        name = "teacher" if row["model"] == "softmax" else "student (local mixing 3)"
        lines.append(f"| {row['setting']} | {name} | {each} | {sum(runs):,.0f} | {1 / speed:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--batch-tokens", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/distill/results")
    parser.add_argument("--table", metavar="RESULT_JSON", help="print the table of a results file and exit")
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return 0
    rows = []
    for form in FORMS:
        for setting, threads, processes in SETTINGS:
            runs = run_together(form, args.length, args.batch_tokens, args.repeats, threads, processes)
            rows.append(dict(model=form, setting=setting, threads=threads, processes=processes, runs=runs))
            print(json.dumps(rows[-1]), file=sys.stderr)
    from fastformer.benchmark.runner import machine_header

    result = dict(machine=machine_header("bfloat16 autocast", "cpu"), length=args.length, rows=rows)
    name = f"threads_cpu_torch{torch.__version__.split('+')[0].replace('.', '_')}.json"
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / name).write_text(json.dumps(result, indent=1))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
