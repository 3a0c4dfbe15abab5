"""Markdown table of the summarization runs, every run scored on the same documents.

`python benchmarks/summarization/summarize_summarization.py runs/summarization [N]`: for each run folder, ROUGE-1 /
2 / L / Lsum F1
with 95% bootstrap intervals of its first N test summaries (summaries_test.jsonl; default: all), so that runs that
summarized different numbers of test documents compare on the same ones; plus training time and tokens/s (document
+ summary tokens) from metrics.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastformer.metrics.rouge import rouge


def cell(score: dict) -> str:
    return f"{score['f1']:.2f} [{score['low']:.2f}, {score['high']:.2f}]"


def table(root: Path, first: int | None = None) -> str:
    lines = [
        "| run | architecture | input tokens | test docs | ROUGE-1 | ROUGE-2 | ROUGE-L | ROUGE-Lsum "
        "| training s | tokens/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for path in sorted(root.glob("*/metrics.json")):
        metrics = json.loads(path.read_text())
        cfg = json.loads((path.parent / "run_config.json").read_text())
        rows = [json.loads(line) for line in (path.parent / "summaries_test.jsonl").read_text().splitlines()]
        rows = rows[:first] if first else rows
        scores = rouge([r["summary"] for r in rows], [r["reference"] for r in rows], seed=cfg["seed"])
        train = metrics.get("train") or {}
        source = "all" if metrics["architecture"] == "lead3" else f"{cfg['max_source_length']:,}"
        lines.append(
            f"| {path.parent.name} | {metrics['architecture']} | {source} | {len(rows)} | "
            + " | ".join(cell(scores[k]) for k in ("rouge1", "rouge2", "rougeL", "rougeLsum"))
            + f" | {train.get('train_runtime') or 0:,.0f} | {train.get('tokens_per_s') or 0:,.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None))
