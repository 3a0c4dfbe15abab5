"""The pretraining curve: fine-tuning probes (IMDB-2 test accuracy) against pretraining tokens, from committed files.

    python benchmarks/pretraining/summarize_pretraining.py [benchmarks/pretraining/results]

Reads probe-<tag>-<point>-seed<N>.json (benchmarks/pretraining/pretraining_probes.sh) and <run>-log.json (the
pretraining run's
log_history: held-out masked-LM loss and accuracy per evaluation, and the tokens it had seen), and prints a markdown
table per pretraining run: the from-scratch probe first, then each point of the run. A probe tag with no log of its
own (imdb-clm8k-lrd05: another fine-tuning recipe from imdb-clm8k's points) reads the log of the longest tag it extends;
where no log is found the tokens and loss cells stay empty rather than claiming zero. A continued run's points count
its steps and tokens on from its starting folder's ("1600 + 400").
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean, stdev


def pretraining_log(folder: Path, tag: str) -> dict:
    """The log of the pretraining run a probe tag starts from: its own, else that of the longest tag it extends."""
    parts = tag.split("-")
    for end in range(len(parts), 0, -1):
        path = folder / f"pretrain-{'-'.join(parts[:end])}-log.json"
        if path.is_file():
            return json.loads(path.read_text())
    return {}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0] if argv else "benchmarks/pretraining/results")
    probes: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(folder.glob("probe-*.json")):
        match = re.fullmatch(r"probe-(.+)-(scratch|step\d+)-seed(\d+)", path.stem)
        if match:
            probes[match[1]][match[2]].append(json.loads(path.read_text()))
    for tag, points in probes.items():
        log = pretraining_log(folder, tag)
        evals = {e["step"]: e for e in log.get("log_history", []) if "eval_loss" in e}
        print(f"#### {tag}\n")
        print(
            "| start | pretraining steps | tokens (M) | held-out loss (/ accuracy) | probe test accuracy | "
            "probe validation accuracy | seeds |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        order = sorted(points, key=lambda p: -1 if p == "scratch" else int(p[4:]))
        for point in order:
            runs = points[point]
            test = [100 * r["test"]["accuracy"] for r in runs]
            validation = [100 * r["validation"]["accuracy"] for r in runs]
            shown = f"{mean(test):.2f}" + (f" +- {stdev(test):.2f}" if len(test) > 1 else "")
            if point == "scratch":
                print(f"| from scratch | 0 | 0 |  | {shown} | {mean(validation):.2f} | {len(runs)} |")
                continue
            step = int(point[4:])
            # a continued run counts on from what its starting folder had seen (steps_before, tokens_before)
            # (None: a start whose tokens no file gives, so the cell stays empty rather than counting from zero)
            before = log.get("tokens_before", 0)
            known = log.get("tokens_per_step") and before is not None
            tokens = f"{(before + step * log['tokens_per_step']) / 1e6:.1f}" if known else ""
            steps = f"{log['steps_before'] or '?'} + {step}" if "steps_before" in log else f"{step}"
            entry = evals.get(step, {})
            mlm = f"{entry['eval_loss']:.3f}" if entry else ""
            if "eval_accuracy" in entry:  # a masked LM's; a causal LM's held-out loss is next-token cross-entropy
                mlm += f" / {entry['eval_accuracy']:.3f}"
            print(
                f"| {tag} step {step} | {steps} | {tokens} | {mlm} | {shown} | {mean(validation):.2f} | {len(runs)} |"
            )
        print()


if __name__ == "__main__":
    main()
