"""The IMDB-2 probe table of docs/RESULTS.md ("A Fastformer from a pretrained Transformer") from the committed
metrics files benchmarks/distill/results/probe-NAME-seedS.json: per start, test accuracy and macro-F1 (mean +- sample
std over seeds), its seeds, and the training time of one run.

    python benchmarks/distill/summarize.py [benchmarks/distill/results]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path


def mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} +- {statistics.stdev(values):.2f}"


def table(folder: Path) -> str:
    runs: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("probe-*-seed*.json")):
        name = re.fullmatch(r"probe-(.+)-seed(\d+)\.json", path.name)[1]
        runs.setdefault(name, []).append(json.loads(path.read_text()))
    lines = ["| start | test accuracy | test macro-F1 | seeds | training s (one run) |", "|---|---:|---:|---:|---:|"]
    for name, metrics in runs.items():
        accuracy = [100 * m["test"]["accuracy"] for m in metrics]
        macro_f1 = [100 * m["test"]["macro_f1"] for m in metrics]
        seconds = (metrics[0].get("train") or {}).get("seconds")
        lines.append(
            f"| {name} | {mean_std(accuracy)} | {mean_std(macro_f1)} | {len(metrics)} | "
            f"{'-' if seconds is None else round(seconds)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="benchmarks/distill/results")
    args = parser.parse_args(argv)
    print(table(Path(args.folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
