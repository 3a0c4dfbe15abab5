"""Markdown table of the summarization runs: `python benchmarks/summarize_summarization.py runs/summarization`.

Test ROUGE-1 / 2 / L / Lsum F1 with their 95% bootstrap intervals, training time and tokens/s (document + summary
tokens), one row per run folder (its metrics.json and run_config.json).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def cell(score: dict) -> str:
    return f"{score['f1']:.2f} [{score['low']:.2f}, {score['high']:.2f}]"


def table(root: Path) -> str:
    lines = [
        "| run | architecture | input tokens | test docs | ROUGE-1 | ROUGE-2 | ROUGE-L | ROUGE-Lsum "
        "| training s | tokens/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for path in sorted(root.glob("*/metrics.json")):
        metrics = json.loads(path.read_text())
        cfg = json.loads((path.parent / "run_config.json").read_text())
        test = metrics["test"]
        train = metrics.get("train") or {}
        source = "all" if metrics["architecture"] == "lead3" else f"{cfg['max_source_length']:,}"
        lines.append(
            f"| {path.parent.name} | {metrics['architecture']} | {source} | {test['examples']} | "
            + " | ".join(cell(test["rouge"][k]) for k in ("rouge1", "rouge2", "rougeL", "rougeLsum"))
            + f" | {train.get('train_runtime') or 0:,.0f} | {train.get('tokens_per_s') or 0:,.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
