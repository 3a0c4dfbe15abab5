"""Markdown tables for the causal language-modelling results.

`python benchmarks/lm/summarize_lm.py runs/lm-imdb [benchmarks/lm/results/lm_generation_cpu.json]`: perplexity
(mean +- std
over the seeds found), training tokens/s and time per architecture from each run's metrics.json; then, if given, the
decoding-cost table of `python -m fastformer.benchmark.generation`.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def mean_std(values: list[float], digits: int = 1) -> str:
    if len(values) == 1:
        return f"{values[0]:,.{digits}f}"
    return f"{statistics.mean(values):,.{digits}f} +- {statistics.stdev(values):,.{digits}f}"


def training_table(run_root: Path) -> str:
    runs: dict[str, list[dict]] = {}
    for path in sorted(run_root.glob("*-seed*/metrics.json")):
        metrics = json.loads(path.read_text())
        runs.setdefault(metrics["architecture"], []).append(metrics)
    header = "| model | parameters | seeds | validation perplexity | validation loss | training tokens/s | training s |"
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|"]
    for arch, rows in runs.items():
        # a run resumed from its last step trained no step and records no tokens/s: the rate is the other runs'
        speeds = [r["train"]["tokens_per_s"] for r in rows if r["train"].get("tokens_per_s")]
        lines.append(
            f"| {arch} | {rows[0]['parameters']:,} | {len(rows)} "
            f"| {mean_std([r['validation']['perplexity'] for r in rows])} "
            f"| {mean_std([r['validation']['loss'] for r in rows], 3)} "
            f"| {mean_std(speeds, 0) if speeds else ''} "
            f"| {mean_std([r['train']['train_runtime'] for r in rows], 0)} |"
        )
    return "\n".join(lines)


def generation_table(path: Path) -> str:
    payload = json.loads(path.read_text())
    rows = payload["rows"]
    lines = [
        f"machine: {json.dumps(payload['machine'])}",
        f"parameters: {json.dumps(payload['parameters'])}",
        "",
        "| context | model | prefill s | decode ms/token (p20-p80) | cache | peak MiB of one decode step |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        cache = r["cache_bytes"]
        size = f"{cache / 2**20:,.1f} MiB" if cache >= 2**20 else f"{cache / 2**10:,.1f} KiB"
        lines.append(
            f"| {r['context']:,} | {r['architecture']} | {r['prefill_s']:,.1f} "
            f"| {r['decode_ms_median']:,.1f} ({r['decode_ms_p20']:,.1f}-{r['decode_ms_p80']:,.1f}) "
            f"| {size} | {r['step_peak_bytes'] / 2**20:,.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(training_table(Path(sys.argv[1])))
    if len(sys.argv) > 2:
        print()
        print(generation_table(Path(sys.argv[2])))
