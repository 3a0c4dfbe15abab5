"""The IMDB-2 tables of docs/RESULTS.md ("A Fastformer from a pretrained Transformer") from the committed metrics
files benchmarks/distill/results/probe-NAME-seedS.json (`--protocol probe`, the 4,000-review probe,
benchmarks/distill/probe.sh) or imdb2-NAME-seedS.json (`--protocol full`, all of IMDB-2 at 512 tokens,
benchmarks/distill/imdb2.sh): per start, test accuracy and macro-F1 (mean +- sample std
over seeds), its seeds, and the training time of one run (probe: training alone; full: the whole run over all its
resumed segments, its quarter-epoch validations included, as metrics.json's `run_seconds` counts it).

    python benchmarks/distill/summarize.py [--protocol probe|full] [benchmarks/distill/results]
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


# the bag-of-words baselines of the full protocol: the classification benchmark's runs on the same test split
FULL_BASELINES = Path("benchmarks/classification/results/classification-full")


def table(folder: Path, protocol: str = "probe") -> str:
    runs: dict[str, list[dict]] = {}
    prefix = "imdb2" if protocol == "full" else protocol
    for path in sorted(folder.glob(f"{prefix}-*-seed*.json")):
        name = re.fullmatch(rf"{prefix}-(.+)-seed(\d+)\.json", path.name)[1]
        runs.setdefault(name, []).append(json.loads(path.read_text()))
    if protocol == "full":
        for baseline in ("nbsvm", "tfidf"):
            runs[baseline] = [json.loads((FULL_BASELINES / f"imdb2-{baseline}-seed0.json").read_text())]
    seconds_field, seconds_header = (
        ("run_seconds", "run s (one run)") if protocol == "full" else ("seconds", "training s (one run)")
    )
    lines = [f"| start | test accuracy | test macro-F1 | seeds | {seconds_header} |", "|---|---:|---:|---:|---:|"]
    for name, metrics in runs.items():
        accuracy = [100 * m["test"]["accuracy"] for m in metrics]
        macro_f1 = [100 * m["test"]["macro_f1"] for m in metrics]
        train = metrics[0].get("train") or {}
        seconds = train.get(seconds_field, train.get("seconds"))  # (the baselines have no run_seconds)
        lines.append(
            f"| {name} | {mean_std(accuracy)} | {mean_std(macro_f1)} | {len(metrics)} | "
            f"{'-' if seconds is None else round(seconds)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="benchmarks/distill/results")
    parser.add_argument("--protocol", choices=("probe", "full"), default="probe")
    args = parser.parse_args(argv)
    print(table(Path(args.folder), args.protocol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
