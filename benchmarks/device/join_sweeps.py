"""Join the cells of several runs of one sweep on one machine (a lease of a lent GPU is split into calls that each
measure part of it) into one result: for each (variant, mode, batch, N) a measured cell wins over one that is not
(over budget, skipped), and among measured cells the later file's.

    python benchmarks/device/join_sweeps.py OUT_STEM "TITLE" RUN.json|RUN.cells.jsonl ... [--note TEXT]

OUT_STEM.{json,csv,png}; the header is the last file's that has one, with `joined_from` naming every file and
`note` what the joiner wants said (for example the commit the working tree was at).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fastformer.benchmark.plot import plot
from fastformer.benchmark.runner import Cell, write_results


def read_cells(path: Path) -> tuple[list[dict], dict | None]:
    if path.name.endswith(".cells.jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()], None
    payload = json.loads(path.read_text())
    return payload["cells"], payload["machine"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_stem", type=Path)
    parser.add_argument("title")
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--note", default="")
    args = parser.parse_args(argv)
    chosen: dict[tuple, dict] = {}
    header: dict | None = None
    for path in args.runs:
        cells, machine = read_cells(path)
        header = machine or header
        for cell in cells:
            key = (cell["variant"], cell["mode"], cell["batch"], cell["n"])
            if key not in chosen or cell["status"] == "ok" or chosen[key]["status"] != "ok":
                chosen[key] = cell
    if header is None:
        raise SystemExit("join_sweeps.py: no run with a machine header (a .json result) among the inputs")
    header = dict(header, joined_from=[str(p) for p in args.runs], note=args.note)
    cells = [Cell(**c) for c in chosen.values()]
    write_results(cells, header, dict(joined=True), args.out_stem)
    plot(cells, header, args.title, args.out_stem.with_suffix(".png"))
    print(f"{len(cells)} cells -> {args.out_stem}.{{json,csv,png}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
