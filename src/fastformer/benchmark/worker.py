"""Child process of the benchmark runner: measures one variant, appending each cell to a JSON Lines file."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from fastformer.benchmark.runner import measure_variant


def main(spec_json: str, cells_path: str) -> None:
    from fastformer.benchmark.runner import print_cell

    spec = json.loads(spec_json)
    spec["shapes"] = [tuple(s) for s in spec["shapes"]]
    with Path(cells_path).open("a") as out:
        for cell in measure_variant(**spec, progress=print_cell):
            out.write(json.dumps(asdict(cell)) + "\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
