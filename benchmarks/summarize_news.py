"""Markdown table of the news-recommendation runs: `python benchmarks/summarize_news.py runs/news-mind`.

Test AUC, MRR, nDCG@5, nDCG@10 (mean +- std over the seeds found) per architecture, with parameters, training time
and training rows (one click + K unclicked candidates) per second, from each run's metrics.json.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

NAMES = {"fastformer": "Fastformer", "softmax": "NRMS-style (softmax self-attention)"}


def mean_std(values: list[float], digits: int = 2, scale: float = 100.0) -> str:
    values = [v * scale for v in values]
    if len(values) == 1:
        return f"{values[0]:,.{digits}f}"
    return f"{statistics.mean(values):,.{digits}f} +- {statistics.stdev(values):,.{digits}f}"


def table(run_root: Path) -> str:
    runs: dict[str, list[dict]] = {}
    for path in sorted(run_root.glob("*-seed*/metrics.json")):
        metrics = json.loads(path.read_text())
        runs.setdefault(metrics["architecture"], []).append(metrics)
    lines = [
        "| model | parameters | seeds | AUC | MRR | nDCG@5 | nDCG@10 | training s | rows/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arch, rows in runs.items():
        cells = [mean_std([r["test"][k] for r in rows]) for k in ("auc", "mrr", "ndcg@5", "ndcg@10")]
        lines.append(
            f"| {NAMES.get(arch, arch)} | {rows[0]['parameters']:,} | {len(rows)} | "
            + " | ".join(cells)
            + f" | {mean_std([r['train']['train_runtime'] for r in rows], 0, 1)}"
            + f" | {mean_std([r['train']['rows_per_s'] for r in rows], 1, 1)} |"
        )
    first = next(iter(runs.values()))[0]
    lines.append("")
    lines.append(
        f"test impressions scored: {first['test']['impressions']} (+ {first['test']['single_class']} with only clicks "
        f"or only non-clicks, which have no AUC); training rows: {first['train']['rows']} "
        f"({first['train']['clicks_without_negatives']} clicks had no unclicked candidate in their impression)"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
