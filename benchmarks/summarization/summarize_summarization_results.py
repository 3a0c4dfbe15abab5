"""Markdown table of committed summarization results: `python
benchmarks/summarization/summarize_summarization_results.py DIR`.

Reads `DIR/<name>.json` (metrics.json files copied there by benchmarks/run_sweep.sh, e.g. from
benchmarks/summarization/summarization_vectors.sh) and prints per run: test ROUGE-1 / 2 / Lsum F1 with 95 %
bootstrap intervals,
the repetition counts of the summaries (distinct-1, distinct-2, repeated-trigram rate, adjacent-repeat rate, mean
words; the references' on the last row, for scale), the inputs (tokenization, coverage by the word vectors) and the
training time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def cell(score: dict) -> str:
    return f"{score['f1']:.2f} [{score['low']:.2f}, {score['high']:.2f}]"


def repetition_cells(counts: dict) -> str:
    adjacent = counts.get("adjacent_repeat_rate")  # files written before the count existed: recount_repetition.py
    return (
        f"{counts['distinct_1']:.3f} | {counts['distinct_2']:.3f} | {counts['repeated_3gram_rate']:.3f} | "
        f"{'-' if adjacent is None else f'{adjacent:.3f}'} | {counts['words']:.0f}"
    )


def inputs_cell(metrics: dict) -> str:
    if metrics.get("architecture") == "lead3":
        return "the document's first 3 sentences"
    inputs = metrics.get("inputs") or {}
    embeddings = inputs.get("embeddings")
    said = f"{inputs.get('tokenization', '?')}, vocabulary {inputs.get('vocabulary', 0):,}"
    if embeddings:
        said += f", {embeddings['word_vectors']} ({100 * embeddings['vocabulary_coverage']:.0f} % of it)"
    return said


def table(folder: Path) -> str:
    lines = [
        "| run | inputs | test docs | ROUGE-1 | ROUGE-2 | ROUGE-Lsum | distinct-1 | distinct-2 | repeated 3-grams "
        "| adjacent repeats | words | training s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    reference = None
    for path in sorted(folder.glob("*.json")):
        metrics = json.loads(path.read_text())
        test = metrics["test"]
        scores = test["rouge"]
        train = metrics.get("train") or {}
        lines.append(
            f"| {path.stem} | {inputs_cell(metrics)} | {test['examples']} | "
            + " | ".join(cell(scores[k]) for k in ("rouge1", "rouge2", "rougeLsum"))
            + f" | {repetition_cells(test['repetition'])} | {train.get('train_runtime') or 0:,.0f} |"
        )
        reference = reference or test.get("reference_repetition")
    if reference:
        lines.append(f"| (the reference abstracts) | | | | | | {repetition_cells(reference)} | |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
