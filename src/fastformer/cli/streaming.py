"""Prediction at any scale: inputs read lazily (command-line texts, then the records of a file), predicted a chunk at a
time, each record written as soon as its chunk is done. Memory stays bounded whatever the input size, and the output has
one JSON record per input in input order, naming it (`"argument": i`, `"line": n`, or a Parquet file's `"row": n`) with
the text's first 80 characters; a blank input line gets a record marked `"blank": true` instead of a prediction, so
outputs can be matched to inputs line by line."""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

CHUNK = 256  # inputs predicted together


def inputs(
    given: list[str],
    file: str | None,
    text_field: str | None = None,
    where: dict[str, str] | None = None,
    default_field: str = "text",
) -> Iterator[tuple[str, int, str]]:
    """(kind, number, text): the texts given as arguments ("argument", 1-based), then the records of `file` ("line",
    the line each starts at; "row" of a Parquet file, 1-based): one text a line (blank lines included), or a JSON
    Lines / CSV / TSV / Parquet file's `text_field` (default `default_field`; `text_corpus.numbered_texts`); a folder's
    files, one text each ("file", its name)."""
    from fastformer.data.files import DataError, format_suffix, refuse_filter
    from fastformer.data.text_corpus import named_documents, numbered_texts

    for number, text in enumerate(given, start=1):
        yield "argument", number, text
    if file and Path(file).is_dir():  # a folder of text files (aclImdb/test/pos): each file one text, by its name
        refuse_filter(Path(file), where, "a folder of text files")  # (worded as the corpus readers word it)
        if text_field is not None:
            raise DataError(
                Path(file), None, None, "--text-field reads a file's records; a folder's texts are its files"
            )
        for name, text in named_documents(Path(file)):
            yield "file", name, text
    elif file:
        kind = "row" if format_suffix(Path(file)) == ".parquet" else "line"
        for number, text in numbered_texts(Path(file), text_field, where, default_field):
            yield kind, number, text


def stream(
    records: Iterable[tuple[str, int, str]],
    predict: Callable[[list[str]], list[dict]],
    output: str | None,
    progress: bool = True,
    chunk: int = CHUNK,
) -> int:
    """Write predict(texts of a chunk)'s records, one per input, to `output` (or standard output) as they come.
    Returns the number of inputs."""
    from tqdm.auto import tqdm

    from fastformer.cli.outputs import atomic_output

    bar = tqdm(unit=" inputs", file=sys.stderr, disable=not progress or None, dynamic_ncols=True)
    count = not_finite = 0
    with atomic_output(output) if output else contextlib.nullcontext(sys.stdout) as out, contextlib.closing(bar):
        iterator = iter(records)
        while batch := list(islice(iterator, chunk)):
            texts = [text for _, _, text in batch if text.strip()]
            results = iter(predict(texts) if texts else [])
            for kind, number, text in batch:
                record = {kind: number}
                record.update({"blank": True} if not text.strip() else {"text": text[:80], **next(results)})
                record, bad = finite_json(record)
                not_finite += bad
                out.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
            out.flush()
            bar.update(len(batch))
            count += len(batch)
    if not_finite:
        print(
            f"warning: {not_finite} predicted numbers were NaN or infinite (written as null): the model's weights or "
            "inputs are not finite",
            file=sys.stderr,
        )
    return count


def finite_json(value):
    """(value with every NaN / infinite float replaced by None, how many were): JSON has no NaN, and a bare `NaN`
    in the output would break every JSON reader of it."""
    if isinstance(value, float):
        return (value, 0) if math.isfinite(value) else (None, 1)
    if isinstance(value, dict):
        pairs = [(key, finite_json(item)) for key, item in value.items()]
        return {key: item for key, (item, _) in pairs}, sum(bad for _, (_, bad) in pairs)
    if isinstance(value, (list, tuple)):
        items = [finite_json(item) for item in value]
        return [item for item, _ in items], sum(bad for _, bad in items)
    return value, 0
