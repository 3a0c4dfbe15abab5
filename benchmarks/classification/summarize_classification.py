"""Markdown tables of the classification sweep: `python benchmarks/classification/summarize_classification.py
[runs/classification]`.

Reads `<set>-<variant>-seed<N>/metrics.json` as written by benchmarks/classification/classification_neural.sh and
prints test
accuracy and macro-F1 (x100, mean +- std over the seeds found), parameters, training seconds and training tokens/s
per row, then the two Yelp-5 ablations beside the paper's Amazon numbers (../shared/PAPER.md, Table 4 ablations).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

SETS = {"imdb8": "IMDB 8-class rating", "imdb2": "IMDB 2-class sentiment", "yelp5": "Yelp-5"}
MODELS = {
    "fastformer512": "Fastformer @512",
    "fastformer1024": "Fastformer @1024",
    "softmax512": "Transformer (softmax, SDPA) @512",
    "tfidf": "TF-IDF + LR (same examples)",
}
# (label, run variant, paper's Amazon accuracy / macro-F1)
INTERACTION = [
    ("product", "fastformer512", "66.13 / 43.23"),
    ("add", "add", "65.22 / 41.89"),
    ("concat", "concat", "64.47 / 40.87"),
]
SHARING = [
    ("no sharing", "nosharing", "65.87 / 42.76"),
    ("query-value", "qv", "65.92 / 42.98"),
    ("QV + head-wise", "qvhead", "65.63 / 42.43"),
    ("QV + layer-wise", "fastformer512", "66.13 / 43.23"),
]


def mean_std(values: list[float], digits: int = 2, scale: float = 100.0) -> str:
    values = [v * scale for v in values]
    if len(values) == 1:
        return f"{values[0]:,.{digits}f}"
    return f"{statistics.mean(values):,.{digits}f} +- {statistics.stdev(values):,.{digits}f}"


def load(root: Path) -> dict[tuple[str, str], list[dict]]:
    runs: dict[tuple[str, str], list[dict]] = {}
    for path in sorted(root.glob("*-seed*/metrics.json")):
        match = re.fullmatch(r"(\w+?)-(\w+)-seed(\d+)", path.parent.name)
        if match:
            runs.setdefault((match[1], match[2]), []).append(json.loads(path.read_text()))
    return runs


def cells(rows: list[dict]) -> str:
    train = [r["train"] for r in rows]
    # TF-IDF runs have no tokens/s (nor parameters), nor has a run resumed from its last step (it trained no step)
    tokens = [t["tokens_per_s"] for t in train if t.get("tokens_per_s")]
    parameters = f"{rows[0]['parameters']:,}" if "parameters" in rows[0] else ""
    seconds = mean_std([t.get("train_runtime", t["seconds"]) for t in train], 0, 1)
    accuracy = mean_std([r["test"]["accuracy"] for r in rows])
    macro_f1 = mean_std([r["test"]["macro_f1"] for r in rows])
    tokens_per_s = mean_std(tokens, 0, 1) if tokens else ""
    return f"{len(rows)} | {accuracy} | {macro_f1} | {parameters} | {seconds} | {tokens_per_s}"


def main_table(runs: dict, tfidf_root: Path) -> str:
    lines = [
        "| set | model | seeds | test accuracy | test macro-F1 | parameters | training s | tokens/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for set_name, set_label in SETS.items():
        for variant, label in MODELS.items():
            if (set_name, variant) in runs:
                lines.append(f"| {set_label} | {label} | {cells(runs[set_name, variant])} |")
        tfidf = tfidf_root / f"tfidf-{set_name}" / "metrics.json"
        if tfidf.exists():
            test = json.loads(tfidf.read_text())["test"]
            lines.append(
                f"| {set_label} | TF-IDF + LR (all examples) | 1 | {test['accuracy'] * 100:.2f} | "
                f"{test['macro_f1'] * 100:.2f} | | | |"
            )
    lines.append("")
    for set_name, set_label in SETS.items():
        first = next((rows[0] for (name, _), rows in runs.items() if name == set_name), None)
        if first:
            counts = {split: first[split]["examples"] for split in ("train", "validation", "test")}
            lines.append(f"- {set_label}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()) + " examples per run")
    return "\n".join(lines)


def ablation(runs: dict, rows: list[tuple[str, str, str]], title: str) -> str:
    header = (
        f"| {title} | seeds | test accuracy | test macro-F1 | parameters | training s | tokens/s | paper (Amazon) |"
    )
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|---|"]
    for label, variant, paper in rows:
        if ("yelp5", variant) in runs:
            lines.append(f"| {label} | {cells(runs['yelp5', variant])} | {paper} |")
    return "\n".join(lines)


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/classification")
    found = load(root)
    print(main_table(found, root.parent))
    print()
    print(ablation(found, INTERACTION, "interaction (Yelp-5)"))
    print()
    print(ablation(found, SHARING, "sharing (Yelp-5)"))
