"""`fastformer predict` streams: one record per input line, in order, blank lines marked, memory bounded whatever
the number of lines (the peak of Python allocations measured, not time)."""

import json
import tracemalloc

import pytest

from fastformer.cli.main import main
from tests.helpers import TINY_CLASSIFIER

TINY = TINY_CLASSIFIER


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    out = tmp_path_factory.mktemp("stream") / "run"
    assert main(["train", "--output-dir", str(out), *TINY]) == 0
    return out


def _lines(path, n: int) -> list[str]:
    lines = ["" if i % 97 == 5 else f"w{i % 50} w{i % 7} mark{i % 4}x{i % 3} text number {i}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return lines


def _peak_of_predict(classifier, tmp_path, n: int) -> tuple[int, list[str]]:
    source, output = tmp_path / f"in{n}.txt", tmp_path / f"out{n}.jsonl"
    lines = _lines(source, n)
    tracemalloc.start()
    try:
        assert main(["predict", str(classifier), "--file", str(source), "--output", str(output), "--no-progress"]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, lines


@pytest.mark.slow
def test_eight_thousand_lines_in_bounded_memory_one_record_per_line_in_order(classifier, tmp_path):
    peak, lines = _peak_of_predict(classifier, tmp_path, 8_000)
    # measured ~0.9 MiB for 2,000 lines and for 20,000 alike; keeping every line's text and record (what predict did
    # before, ~20 KB a line with its tensors) would pass 100 MiB of Python objects here (8,000 lines: 31 chunks)
    assert peak < 4 * 2**20, peak
    records = [json.loads(line) for line in (tmp_path / "out8000.jsonl").read_text().splitlines()]
    assert [r["line"] for r in records] == list(range(1, 8_001))
    for record, text in zip(records, lines, strict=True):
        if text:
            assert record["text"] == text[:80] and set(record) == {"line", "text", "label", "probabilities"}
        else:
            assert record == {"line": record["line"], "blank": True}


def test_arguments_then_file_lines_and_output_written_as_it_goes(classifier, tmp_path, capsys):
    source = tmp_path / "few.txt"
    source.write_text("first line\n\nthird line\n")
    capsys.readouterr()
    assert main(["predict", str(classifier), "an argument", "--file", str(source), "--no-progress"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [next(iter(r.items()))[0:2] for r in records] == [("argument", 1), ("line", 1), ("line", 2), ("line", 3)]
    assert records[2] == {"line": 2, "blank": True}
