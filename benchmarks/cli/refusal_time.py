"""How long a refused command takes, from a fresh process to its one line (issue 46: bad arguments and data are
refused before torch and transformers load, under 2 s on a quiet machine). Each case runs `fastformer` in a new
interpreter REPEATS times; the table gives the median wall time, the exit code, the line it printed and whether
torch / transformers were loaded when it exited.

    python benchmarks/cli/refusal_time.py [--repeats 5] [--output benchmarks/cli/results/refusal_time.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMDB = "../shared/data/imdb/imdb_ratings.jsonl.gz"
# the command, run with its exit: which heavy modules had loaded
RUN = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('LOADED', [m for m in ('torch', 'transformers') if m in sys.modules], "
    "file=sys.stderr))\n"
    "from fastformer.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def cases(folder: Path) -> dict[str, list[str]]:
    """name -> argv of a command that must be refused."""
    (folder / "empty_label.csv").write_text('text,label\n"a fine film",pos\n"dull",\n')
    rows = "".join(
        f'"review number {i}: {"a fine film" if i % 2 else "a dull one"}",{"pos" if i % 2 else "neg"}\n'
        for i in range(40)
    )
    (folder / "unknown_header.csv").write_text("txt,lable\n" + rows)
    out = str(folder / "run")
    return {
        "empty label in a CSV row": ["train", "--train", str(folder / "empty_label.csv"), "--output-dir", out],
        "header of unknown names": ["train", "--train", str(folder / "unknown_header.csv"), "--output-dir", out],
        "training file missing": ["train", "--train", str(folder / "missing.csv"), "--output-dir", out],
        "unknown flag": ["train", "--epochz", "3"],
        "model field out of range": ["train", "--model", "num_hidden_layers=0", "--output-dir", out],
        "label field not in the file": ["train", "--train", IMDB, "--label-field", "stars", "--output-dir", out],
        "evaluate a missing folder": ["evaluate", str(folder / "nothing"), "--data", IMDB],
        "summarize split of one pair": ["train", "summarize", "--split", "1", "0", "0", "--output-dir", out],
    }


def run_case(argv: list[str]) -> tuple[float, int, str, str]:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", RUN, *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    loaded = next((line[len("LOADED ") :] for line in lines if line.startswith("LOADED ")), "?")
    said = next((line for line in lines if not line.startswith("LOADED ")), "")
    return seconds, result.returncode, said[:160], loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default="benchmarks/cli/results/refusal_time.json")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in cases(Path(tmp)).items():
            runs = [run_case(command) for _ in range(args.repeats)]
            seconds = statistics.median(r[0] for r in runs)
            _, code, said, loaded = runs[-1]
            rows.append(dict(case=name, seconds=round(seconds, 3), exit=code, line=said, loaded=loaded))
            print(f"{seconds:6.2f} s  exit {code}  loaded {loaded:<26} {name}: {said}")
    header = dict(
        date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        machine=platform.machine(),
        processor=platform.processor(),
        python=platform.python_version(),
        repeats=args.repeats,
        load_average=[round(x, 2) for x in os.getloadavg()],  # other work on the machine while it ran
        command="python benchmarks/cli/refusal_time.py",
    )
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(dict(machine=header, cases=rows), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
