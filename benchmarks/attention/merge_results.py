"""Join a new benchmark run with the baseline cells of an earlier one, measured on the same machine.

    python benchmarks/attention/merge_results.py NEW.json OLD.json OUT_STEM [--from-old VARIANT ...]

Re-running every third-party baseline takes most of an hour on 2 cores; when only our layer changed, the new run
measures the Fastformer variants and projections-only (the targets' denominator, which must share their run) and
takes the baselines' cells from OLD. OUT_STEM.{json,csv,png} get both, and a header that names both commits; the
targets are evaluated on the joined cells.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fastformer.benchmark.plot import plot
from fastformer.benchmark.runner import Cell, write_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new")
    parser.add_argument("old")
    parser.add_argument("out_stem")
    parser.add_argument("--from-old", nargs="+", help="variants to take from OLD (default: all that NEW lacks)")
    args = parser.parse_args()
    new, old = (json.loads(Path(p).read_text()) for p in (args.new, args.old))
    measured = {c["variant"] for c in new["cells"]}
    wanted = set(args.from_old) if args.from_old else {c["variant"] for c in old["cells"]}
    taken = [c for c in old["cells"] if c["variant"] in wanted and c["variant"] not in measured]
    cells = [Cell(**c) for c in new["cells"] + taken]
    header = dict(new["machine"])
    header["git_commit"] = (
        f"{new['machine']['git_commit']} ({', '.join(sorted(measured))}); baselines "
        f"({', '.join(sorted({c['variant'] for c in taken}))}) from {old['machine']['git_commit']}"
    )
    settings = dict(new["settings"], joined_with=args.old)
    stem = Path(args.out_stem)
    write_results(cells, header, settings, stem)
    run = new["settings"]
    shape = f"batch x N = {run['tokens']} tokens" if run["sweep"] == "paper" else f"batch {run['batch_size']}"
    title = f"hidden {run['hidden_size']}, {run['heads']} heads, {shape}"
    plot(cells, header, title, stem.with_suffix(".png"))
    print(f"{len(new['cells'])} new + {len(taken)} earlier cells -> {stem}.json/.csv/.png")


if __name__ == "__main__":
    main()
