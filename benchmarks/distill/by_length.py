"""Where reading more could win: test accuracy of finished classification runs by how long each review is, in the
teacher's WordPiece tokens (issue 44: "the teacher reads at most 512 tokens; the student, positions extended, reads
the whole review at linear cost: say where reading more wins").

Each run folder's predictions_test.jsonl names every test row's file and line (`source`); the text is read back from
there (JSON Lines, plain or gzip, field `text`) and counted with the tokenizer (special tokens aside). Buckets: read
whole at 512 tokens (<= 510), read whole only at 1,024 (511-1,022), cut even at 1,024. A bag of words (NBSVM) reads
every review whole whatever its length: beside the Transformers it shows what the tail of a long review is worth.
`--head-tail NAME` reads the reviews that run cut again with head+tail truncation at its own length (its first 128
tokens and its last ones, Sun et al. 2019; bf16 autocast as the run was trained) and adds that row.

    python benchmarks/distill/by_length.py NAME=RUN_DIR [NAME=RUN_DIR ...] [--head-tail NAME] [--tokenizer DIR]
        [--json OUT]
    python benchmarks/distill/by_length.py NAME=RUN_DIR --add-to benchmarks/distill/results/by-length-seed1.json
        (these runs' rows added to a committed table, whose other runs' folders may be gone)
    python benchmarks/distill/by_length.py --table benchmarks/distill/results/by-length-seed1.json  (committed)
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

BUCKETS = ((0, 510, "<= 510 (whole at 512)"), (511, 1022, "511-1,022 (whole at 1,024)"), (1023, None, "> 1,022"))


def bucket_of(length: int) -> str:
    return next(name for low, high, name in BUCKETS if length >= low and (high is None or length <= high))


def read_predictions(folder: Path) -> list[dict]:
    """A finished run's test predictions, or those of a `fastformer evaluate` folder of the test split (a model soup's,
    say: FOLDER/evaluations/imdb_ratings)."""
    path = folder / "predictions_test.jsonl"
    if not path.is_file() and (folder / "predictions.jsonl").is_file() and (folder / "metrics.json").is_file():
        path = folder / "predictions.jsonl"
    if not path.is_file():
        raise SystemExit(
            f"by_length.py: {path}: no such file (a finished classification run writes it, `fastformer evaluate` "
            "predictions.jsonl)"
        )
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def texts_of(sources: set[str], field: str = "text") -> dict[str, str]:
    """{"file:line": its record's text} for every source named (each file read once)."""
    from fastformer.data.files import open_text

    wanted: dict[str, set[int]] = defaultdict(set)
    for source in sources:
        path, line = source.rsplit(":", 1)
        wanted[path].add(int(line))
    texts = {}
    for path, lines in wanted.items():
        for number, line in enumerate(open_text(Path(path)), start=1):
            if number in lines:
                texts[f"{path}:{number}"] = json.loads(line)[field]
    return texts


def read_cut_again(folder: Path, rows: list[dict], texts: dict[str, str], truncation: str) -> list[dict]:
    """The run's test predictions, each review it cut (longer than its --max-length) read again with `truncation`."""
    from fastformer.data.tokenizer import special_tokens_around
    from fastformer.engine.folder import run_settings
    from fastformer.tasks.classification.classifier import Classifier

    settings = run_settings(folder)
    classifier = Classifier(folder, settings["max_length"])
    classifier.truncation = truncation
    room = settings["max_length"] - sum(map(len, special_tokens_around(classifier.tokenizer)))
    sources = [r["source"] for r in rows]
    counted = classifier.tokenizer([texts[s] for s in sources], add_special_tokens=False, verbose=False)["input_ids"]
    cut = [s for s, ids in zip(sources, counted, strict=True) if len(ids) > room]
    # (the classifier scores under its run's bf16 autocast itself, where this CPU multiplies bfloat16)
    again = {s: record["label"] for s, record in zip(cut, classifier([texts[s] for s in cut]), strict=True)}
    return [{**r, "predicted": again.get(r["source"], r["predicted"])} for r in rows]


def accuracy_by_length(runs: dict[str, list[dict]], lengths: dict[str, int]) -> dict[str, dict[str, dict]]:
    """{run: {bucket: {"reviews": n, "accuracy": %}}} (and "all")."""
    table = {}
    for name, rows in runs.items():
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for row in rows:
            for bucket in (bucket_of(lengths[row["source"]]), "all"):
                counts[bucket][0] += 1
                counts[bucket][1] += row["predicted"] == row["label"]
        table[name] = {b: dict(reviews=n, accuracy=round(100 * right / n, 2)) for b, (n, right) in counts.items()}
    return table


def markdown(table: dict[str, dict[str, dict]]) -> str:
    columns = [name for _, _, name in BUCKETS] + ["all"]
    first = next(iter(table.values()))
    lines = [
        "| run | " + " | ".join(f"{c} ({first.get(c, {}).get('reviews', 0):,} reviews)" for c in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for name, buckets in table.items():
        cells = (f"{buckets[c]['accuracy']:.2f}" if c in buckets else "-" for c in columns)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="NAME=RUN_DIR: a finished classification run folder")
    parser.add_argument("--head-tail", action="append", default=[], metavar="NAME", help="a run to read again")
    parser.add_argument("--tokenizer", default="pretrained/fastformer-minilm-l6-distilled")
    parser.add_argument("--json", help="write the table as JSON here too")
    parser.add_argument("--table", help="print the table of a JSON file --json wrote, and nothing else")
    parser.add_argument("--add-to", metavar="JSON", help="add these runs' rows to a table --json wrote (rewritten)")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown(json.loads(Path(args.table).read_text())["runs"]))
        return 0
    if not args.runs:
        parser.error("give NAME=RUN_DIR runs, or --table FILE")
    from transformers import AutoTokenizer

    runs, folders = {}, {}
    for spec in args.runs:
        name, _, folder = spec.partition("=")
        folders[name] = Path(folder or name)
        runs[name] = read_predictions(folders[name])
    first = next(iter(runs.values()))
    if any({r["source"] for r in rows} != {r["source"] for r in first} for rows in runs.values()):
        raise SystemExit("by_length.py: the runs did not predict the same test rows")
    texts = texts_of({r["source"] for r in first})
    for name in args.head_tail:
        if name not in runs:
            raise SystemExit(f"by_length.py: --head-tail {name}: not one of the runs ({', '.join(runs)})")
        runs[f"{name}, head+tail"] = read_cut_again(folders[name], runs[name], texts, "head+tail")
    if args.add_to:  # the committed rows first: the same tokenizer's lengths, the same test rows
        committed = json.loads(Path(args.add_to).read_text())
        args.json, args.tokenizer = args.add_to, committed["tokenizer"]
        reviews = next(iter(committed["runs"].values()))["all"]["reviews"]
        if len(first) != reviews:
            raise SystemExit(
                f"by_length.py: --add-to {args.add_to}: its runs predicted {reviews:,} test rows, these {len(first):,}"
            )
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    sources = list(texts)
    encoded = tokenizer([texts[s] for s in sources], add_special_tokens=False, verbose=False)["input_ids"]
    lengths = {s: len(ids) for s, ids in zip(sources, encoded, strict=True)}
    table = accuracy_by_length(runs, lengths)
    if args.add_to:
        table = {**committed["runs"], **table}
    print(markdown(table))
    if args.json:
        Path(args.json).write_text(json.dumps(dict(tokenizer=args.tokenizer, runs=table), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
