"""Markdown tables from committed run results: `python benchmarks/summarize_runs.py DIR_OR_FILE [DIR_OR_FILE ...]`.

Reads `DIR/<set>-<variant>-seed<N>.json` (metrics.json files copied there by benchmarks/run_sweep.sh; a file named so
is read alone, e.g. a baseline row beside another folder's runs) and prints,
per set, test accuracy and macro-F1 x100 (mean +- std over the seeds found), the best epoch by validation, training
seconds (of the runs trained in one process: a resumed run's metrics time only its last process) and real-token
training throughput; for MIND topic runs, the majority-class row computed from the split's
category counts. Then the goals of docs/RESULTS.md for every Fastformer-with-vectors row (`fastformer*-glove*`) that
has the rows it is compared with: vs TF-IDF + LR (+1 point; IMDB-2: at or above), vs the softmax Transformer with
the same inputs and training (`softmax*`, at or above), and vs random embeddings (`*random*`, +3 points); a
difference within the seed spread (the larger std) is a tie. For every pretrained fine-tune (`*pretrained*`, from
benchmarks/pretraining/pretraining_full.sh), the pretraining issue's goals: above the stronger bag-of-words model
of the set
(NBSVM or TF-IDF + LR, per metric) by 0.5 points on IMDB-2 and 1 point elsewhere, and +3 points over the same model
from scratch (`*scratch*`), and at or above the softmax Transformer pretrained and fine-tuned the same way
(`softmax-pretrained`; a tie counts); a 1,024-token variant (`1024-pretrained`) against the same baselines. For news
recommendation runs, the goal that every recommender ranks above the popularity ranker
(`news-popularity-seed0.json`, from benchmarks/news/news_baselines.py): a test AUC higher by more than the spread (the
recommender's seeds or the ranker's tie-breaking draws).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

NAME = re.compile(r"^(?P<set>[a-z0-9]+)-(?P<variant>.+)-seed(?P<seed>\d+)$")


def load(dirs: list[Path]) -> dict[str, dict[str, list[dict]]]:
    """{set: {variant: [metrics of each seed]}}"""
    runs: dict[str, dict[str, list[dict]]] = {}
    for folder in dirs:
        for path in [folder] if folder.is_file() else sorted(folder.glob("*.json")):
            match = NAME.match(path.stem)
            if match:
                metrics = json.loads(path.read_text())
                runs.setdefault(match["set"], {}).setdefault(match["variant"], []).append(metrics)
    return runs


def stat(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def cell(values: list[float]) -> str:
    mean, std = stat(values)
    return f"{100 * mean:.2f}" + (f" +- {100 * std:.2f}" if len(values) > 1 else "")


def best_epoch(metrics: dict) -> str:
    """The epoch whose checkpoint was kept (by validation), else its step ("step N"); "" for runs without epochs."""
    train = metrics.get("train") or {}
    if train.get("best_epoch") is not None:
        return f"{round(train['best_epoch'], 2):g}"  # (quarter-epoch checkpoints: 1.50888 -> 1.51)
    checkpoint = train.get("best_checkpoint") or ""
    return f"step {checkpoint.rsplit('-', 1)[-1]}" if checkpoint else ""


def majority(metrics: dict) -> tuple[float, float] | None:
    """Accuracy and macro-F1 of always predicting the most frequent training category."""
    counts = (metrics.get("data") or {}).get("split_categories")
    if not counts:
        return None
    top = max(counts["train"], key=lambda c: (counts["train"][c], c))
    test = counts["test"]
    share = test.get(top, 0) / sum(test.values())
    labels = set(counts["train"])
    f1_top = 2 * share / (1 + share) if share else 0.0
    return share, f1_top / len(labels)


def ranking_table(name: str, variants: dict[str, list[dict]]) -> list[str]:
    """News recommendation runs: test AUC / MRR / nDCG@5 / nDCG@10 x100."""
    keys = ("auc", "mrr", "ndcg@5", "ndcg@10")
    lines = [f"### {name}", "", "| model | seeds | " + " | ".join(keys) + " |", "|---|---:|" + "---:|" * len(keys)]
    for variant, runs in sorted(variants.items()):
        spread = runs[0]["test"].get("tie_break_std")
        if spread:  # a ranker without learning: the mean over its tie-breaking draws, and their std
            cells = " | ".join(f"{100 * runs[0]['test'][k]:.2f} +- {100 * spread[k]:.2f}" for k in keys)
            draws = runs[0]["test"]["tie_breaks"]
            lines.append(f"| {variant} (no learning; {draws} tie-breaking draws) | - | {cells} |")
        else:
            cells = " | ".join(cell([r["test"][k] for r in runs]) for k in keys)
            lines.append(f"| {variant} | {len(runs)} | {cells} |")
    return lines


def table(name: str, variants: dict[str, list[dict]]) -> list[str]:
    if "auc" in next(iter(variants.values()))[0].get("test", {}):
        return ranking_table(name, variants)
    lines = [
        f"### {name}",
        "",
        "| model | seeds | test accuracy | test macro-F1 | examples train / test | best epoch | train s | tokens/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for variant, runs in sorted(variants.items()):
        accuracy = [r["test"]["accuracy"] for r in runs]
        f1 = [r["test"]["macro_f1"] for r in runs]
        train = [r.get("train") or {} for r in runs]
        # a resumed run's `seconds` are its last process's; its `run_seconds` (written since checkpoints record their
        # time) cover every process: averaged over the runs whose whole time is known
        timed = [t.get("run_seconds") if t.get("resumed_from") else t.get("seconds") or 0 for t in train]
        whole = [s for s in timed if s is not None]
        resumed = len(train) - len(whole)
        seconds = f"{statistics.mean(whole):,.0f}" if whole else ""
        if resumed:
            seconds += f"{' ' if whole else ''}({resumed} resumed, not counted)"
        speeds = [t["tokens_per_s"] for t in train if t.get("tokens_per_s")]
        speed = f"{statistics.mean(speeds):,.0f}" if speeds else ""
        lines.append(
            f"| {variant} | {len(runs)} | {cell(accuracy)} | {cell(f1)} | {train[0].get('examples', '')} / "
            f"{runs[0]['test']['examples']} | {', '.join(best_epoch(r) for r in runs)} | {seconds} | {speed} |"
        )
    first = next(iter(variants.values()))[0]
    found = majority(first)
    if found:
        lines.append(f"| majority class | - | {100 * found[0]:.2f} | {100 * found[1]:.2f} | | | | |")
    return lines


def compare(variants: dict[str, list[dict]], ours: str, other: str, margin: float, label: str) -> str | None:
    """One goal line: `ours` at least `margin` points above `other` in accuracy and macro-F1."""
    if ours not in variants or other not in variants:
        return None
    parts, met = [], True
    for metric in ("accuracy", "macro_f1"):
        a, sa = stat([r["test"][metric] for r in variants[ours]])
        b, sb = stat([r["test"][metric] for r in variants[other]])
        diff = 100 * (a - b)
        spread = 100 * max(sa, sb)
        ok = diff >= margin or (margin <= 0 and abs(diff) <= spread)
        met &= ok
        tie = " (within the seed spread)" if abs(diff) <= spread and spread > 0 else ""
        parts.append(f"{metric} {diff:+.2f}{tie}")
    return f"- {label}: {'met' if met else 'NOT met'} ({', '.join(parts)})"


def above_strongest(
    variants: dict[str, list[dict]], ours: str, baselines: tuple[str, ...], margin: float, label: str
) -> str | None:
    """One goal line: `ours` at least `margin` points above the stronger of `baselines` (models without seeds,
    NBSVM and TF-IDF + LR), taken per metric; names the stronger one."""
    present = [b for b in baselines if b in variants]
    if ours not in variants or not present:
        return None
    parts, met = [], True
    for metric in ("accuracy", "macro_f1"):
        mean, std = stat([r["test"][metric] for r in variants[ours]])
        means = {b: stat([r["test"][metric] for r in variants[b]])[0] for b in present}
        best = max(means, key=means.get)
        diff = 100 * (mean - means[best])
        met &= diff >= margin
        tie = " (within the seed spread)" if abs(diff) <= 100 * std and std > 0 else ""
        parts.append(f"{metric} {diff:+.2f} vs {best}{tie}")
    seeds = len(variants[ours])
    return f"- {label}: {'met' if met else 'NOT met'} ({', '.join(parts)}; {seeds} seed{'s' * (seeds != 1)})"


def pretraining_goals(name: str, variants: dict[str, list[dict]]) -> list[str]:
    """The pretraining issue's goals for every `*pretrained*` variant of a set whose compared rows exist."""
    margin = 0.5 if name == "imdb2" else 1.0
    goals = []
    for ours in sorted(v for v in variants if "pretrained" in v):
        scratch = ours.replace("pretrained", "scratch")
        goals += [
            above_strongest(variants, ours, ("nbsvm", "tfidf"), margin, f"{ours} >= +{margin:g} over the bag of words"),
            compare(variants, ours, scratch, 3.0, f"{ours} >= +3 points over {scratch}"),
        ]
        if not ours.startswith("softmax-"):  # the control: the softmax Transformer pretrained the same way
            control = f"softmax-{ours}"
            goals.append(compare(variants, ours, control, 0.0, f"{ours} at or above {control} (a tie counts)"))
    return [g for g in goals if g]


def ranking_goals(variants: dict[str, list[dict]], ranker: str = "popularity") -> list[str]:
    """Each trained recommender's test AUC against a ranker without learning (the mean over its tie-breaking draws):
    met when higher by more than the larger spread (the recommender's seeds, the ranker's draws)."""
    if ranker not in variants:
        return []
    baseline = variants[ranker][0]["test"]
    lines = []
    for variant, runs in sorted(variants.items()):
        if variant in ("random", "popularity", "category"):
            continue
        mean, std = stat([r["test"]["auc"] for r in runs])
        diff = 100 * (mean - baseline["auc"])
        spread = 100 * max(std, (baseline.get("tie_break_std") or {}).get("auc", 0.0))
        verdict = "met" if diff > spread else "NOT met"
        tie = " (within the spread)" if abs(diff) <= spread else ""
        lines.append(f"- {variant} above the {ranker} ranker's AUC: {verdict} (auc {diff:+.2f}{tie})")
    return lines


def main(argv: list[str]) -> None:
    dirs = [Path(a) for a in argv] or [Path("benchmarks/classification/results/classification-full")]
    runs = load(dirs)
    for name, variants in sorted(runs.items()):
        print("\n".join(table(name, variants)), end="\n\n")
        if "accuracy" not in next(iter(variants.values()))[0].get("test", {}):
            goals = ranking_goals(variants)
            if goals:
                print("\n".join(goals), end="\n\n")
            continue
        goals = []
        for ours in sorted(v for v in variants if v.startswith("fastformer") and "-glove" in v):
            softmax = ours.replace("fastformer", "softmax", 1)
            random = ours.replace("glove", "random")
            goals += [
                compare(variants, ours, "tfidf", 1.0 if name != "imdb2" else 0.0, f"{ours} vs TF-IDF + LR"),
                compare(variants, ours, softmax, 0.0, f"{ours} at or above {softmax}"),
                compare(variants, ours, random, 3.0, f"{ours} >= +3 points over {random}"),
            ]
        goals = [g for g in goals if g] + pretraining_goals(name, variants)
        if goals:
            print("\n".join(goals), end="\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])
