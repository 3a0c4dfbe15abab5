"""How far a news recommender's test AUC can move with the test impressions alone: a bootstrap over impressions.

`python benchmarks/news/auc_uncertainty.py TEST_DIR RUN_DIR [RUN_DIR ...] [--resamples 2000] [--seed 0] [--json OUT]`

Reads MIND's labels from TEST_DIR (news.tsv + behaviors.tsv) and each run folder's `prediction_test.txt` (the
leaderboard's rankings `fastformer train news` writes), and prints, over the impressions with both a click and a
non-click (those MIND's AUC averages) that every run ranked: each run's AUC with its bootstrap standard error and
95 % interval, and each later run's difference to the first, paired (the same resampled impressions for both), with
its standard error and 95 % interval. Seeds of one recipe share the test file, so averaging seeds does not shrink
this part of the uncertainty: a gap smaller than the paired interval is not measured by this test split, whatever
the seed count.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from fastformer.data.files import DataError
from fastformer.data.mind import load_mind
from fastformer.metrics.ranking import impression_metrics, read_rankings


def per_impression_auc(test_dir: str | Path, run_dirs: list[str | Path]) -> np.ndarray:
    """(runs, impressions) AUCs over the impressions of TEST_DIR with both classes that every run
    ranked (all of them, unless a run was scored on a part: `--max-eval-impressions`)."""
    impressions = [i for i in load_mind(test_dir).impressions if i.labels and 0 < sum(i.labels) < len(i.labels)]
    rankings = []
    for run in run_dirs:
        path = Path(run) / "prediction_test.txt"
        if not path.is_file():
            raise SystemExit(f"auc_uncertainty: {path}: no such file (a run of `fastformer train news` writes it)")
        rankings.append(read_rankings(path))
    common = [i for i in impressions if all(i.impression_id in ranks for ranks in rankings)]
    if not common:
        raise SystemExit(f"auc_uncertainty: the runs share no ranked impression of {test_dir} with both classes")
    return np.asarray([[impression_metrics(i.labels, r[i.impression_id])["auc"] for i in common] for r in rankings])


def bootstrap(aucs: np.ndarray, resamples: int, seed: int) -> dict:
    """Each run's mean AUC, standard error and 95 % interval, and each later run's paired difference to the first,
    over `resamples` resamplings of the impressions (with replacement); in AUC points (x 100)."""
    runs, n = aucs.shape
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    means = 100 * aucs[:, picks].mean(axis=2)  # (runs, resamples)

    def summary(point: float, draws: np.ndarray) -> dict:
        low, high = np.percentile(draws, [2.5, 97.5])
        return dict(value=round(point, 2), se=round(float(draws.std()), 2), ci95=[round(low, 2), round(high, 2)])

    return dict(
        impressions=n,
        resamples=resamples,
        runs=[summary(100 * float(aucs[r].mean()), means[r]) for r in range(runs)],
        against_first=[summary(100 * float((aucs[r] - aucs[0]).mean()), means[r] - means[0]) for r in range(1, runs)],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test_dir", help="the MIND test folder the runs were scored on (news.tsv, behaviors.tsv)")
    parser.add_argument("runs", nargs="+", help="run folders of `fastformer train news` (prediction_test.txt)")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    try:
        aucs = per_impression_auc(args.test_dir, args.runs)
    except (DataError, FileNotFoundError) as error:  # a malformed or missing MIND file, a damaged prediction file
        raise SystemExit(f"auc_uncertainty: {error}") from None
    result = bootstrap(aucs, args.resamples, args.seed)
    print(f"{result['impressions']} impressions with a click and a non-click, {args.resamples} resamples")
    print("| run | test AUC | bootstrap SE | 95 % interval | paired difference to the first (SE; 95 %) |")
    print("|---|---:|---:|---|---|")
    for index, (run, row) in enumerate(zip(args.runs, result["runs"], strict=True)):
        low, high = row["ci95"]
        paired = "-"
        if index:
            diff = result["against_first"][index - 1]
            paired = f"{diff['value']:+.2f} ({diff['se']:.2f}; {diff['ci95'][0]:+.2f} .. {diff['ci95'][1]:+.2f})"
        print(f"| {Path(run).name} | {row['value']:.2f} | {row['se']:.2f} | {low:.2f} .. {high:.2f} | {paired} |")
    if args.json:
        result = dict(test_dir=args.test_dir, run_dirs=args.runs, **result)
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
