"""Recount the repetition metrics of a finished summarization run from its summaries, into its committed result file.

`python benchmarks/summarization/recount_repetition.py RUN_DIR RESULT_JSON`: reads RUN_DIR/summaries_test.jsonl
(what the run wrote:
one {"summary", "reference"} row per test document) and replaces RESULT_JSON's test "repetition" and
"reference_repetition" by `fastformer.metrics.repetition.repetition` of them, as a run made now would write them.
For counts added after a run was made (the adjacent-repeat rate); ROUGE and everything else are left as they are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastformer.metrics.repetition import repetition


def main(run_dir: str, result_json: str) -> None:
    rows = [json.loads(line) for line in (Path(run_dir) / "summaries_test.jsonl").read_text().splitlines() if line]
    path = Path(result_json)
    metrics = json.loads(path.read_text())
    if len(rows) != metrics["test"]["examples"]:
        raise SystemExit(f"{run_dir}: {len(rows)} summaries but {result_json} scored {metrics['test']['examples']}")
    metrics["test"]["repetition"] = repetition([r["summary"] for r in rows])
    metrics["test"]["reference_repetition"] = repetition([r["reference"] for r in rows])
    path.write_text(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:3])
