"""The validation records a finished classification run held out of its training data, written as a JSON Lines file
`fastformer evaluate` reads: so another model (a soup of the run's checkpoints, say) is chosen on the very reviews the
run chose its best epoch on, never on the test split.

    python benchmarks/distill/held_out.py runs/distill/imdb2-gpu-student-lm3-task-distilled-ht1024-seed1 \
        /tmp/seed1-validation.jsonl
    fastformer evaluate runs/distill/tail-seed1 --data /tmp/seed1-validation.jsonl

The run's predictions_validation.jsonl names each record's source as FILE:LINE; the records are copied from those
lines byte for byte (only JSON Lines sources: the IMDB-2 protocol's). The run's own validation accuracy is what
`fastformer evaluate` gives on the file for the run's folder (tested).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from fastformer.data.files import open_text


def held_out_sources(run: Path) -> list[tuple[str, int]]:
    """(file, line) of each validation record of the run, in the run's order."""
    predictions = run / "predictions_validation.jsonl"
    if not predictions.is_file():
        sys.exit(f"held_out.py: {run}: no predictions_validation.jsonl (a finished classification run folder)")
    sources = []
    for number, line in enumerate(predictions.read_text().splitlines(), start=1):
        source = json.loads(line).get("source", "")
        path, _, row = source.rpartition(":")
        if not path or not row.isdigit():
            sys.exit(f"held_out.py: {predictions}:{number}: field 'source': {source!r} is not FILE:LINE")
        sources.append((path, int(row)))
    return sources


def records(sources: list[tuple[str, int]]) -> list[str]:
    """The lines the sources name, in their order (each file read once)."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for path, row in sources:
        wanted[path].add(row)
    lines: dict[tuple[str, int], str] = {}
    for path, rows in wanted.items():
        if not path.endswith((".jsonl", ".jsonl.gz")):
            sys.exit(f"held_out.py: {path}: only JSON Lines sources are copied (a record is one line)")
        with open_text(Path(path)) as f:
            for number, line in enumerate(f, start=1):
                if number in rows:
                    lines[(path, number)] = line.rstrip("\r\n")
    missing = [f"{p}:{r}" for p, r in sources if (p, r) not in lines]
    if missing:
        sys.exit(f"held_out.py: {missing[0]}: no such line ({len(missing)} missing): the data changed since the run")
    return [lines[source] for source in sources]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a finished classification run folder")
    parser.add_argument("output", type=Path, help="the JSON Lines file to write (must not exist)")
    args = parser.parse_args(argv)
    if args.output.exists():
        sys.exit(f"held_out.py: {args.output} exists")
    rows = records(held_out_sources(args.run))
    partial = args.output.with_name(args.output.name + ".partial")
    partial.write_text("".join(row + "\n" for row in rows))
    partial.rename(args.output)
    print(f"held_out.py: {args.output}: {len(rows)} validation records of {args.run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
