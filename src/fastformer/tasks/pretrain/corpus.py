"""The unlabelled texts a pretraining (or distillation) run reads: files in the formats of data/text_corpus.py, held
out, limited, and decontaminated of every text of the --exclude files (read with the same readers and --where
filters as the data they come from), with what was dropped counted per file. Reads files only (no torch)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from fastformer.engine.splits import hold_out, limit_splits
from fastformer.tasks.pretrain.config import PretrainingConfig


def normalise_text(text: str) -> str:
    """What decontamination compares: lower case, whitespace runs as one space, no outer whitespace."""
    return re.sub(r"\s+", " ", text).strip().lower()


def read_corpus(paths: str | list[str], cfg: PretrainingConfig, where: dict[str, str] | None) -> list[str]:
    """The texts of every file (comma-separated paths or a list), in order (`file_texts`)."""
    files = [p.strip() for p in paths.split(",")] if isinstance(paths, str) else list(paths)
    return [text for path in files if path for text in file_texts(path, cfg, where)]


def file_texts(
    path: str, cfg: PretrainingConfig, where: dict[str, str] | None, labelled_folders: bool = False
) -> list[str]:
    """One file's texts, read as the data it is: a fastText file (`__label__K<TAB>text`, SST's format) or SST's
    labelled trees by the labelled reader, so that the label prefix is not part of every text (it was: a pretraining
    corpus learnt "__label__4", and an exclude file in that format matched nothing); anything else by the corpus
    reader, with `--text-field`, `--format` and the filters (a folder: one text a file). labelled_folders
    (--exclude): a folder of label sub-folders (aclImdb/test: pos/, neg/) is read as the labelled dataset it is."""

    from fastformer.data.files import visible_entries
    from fastformer.data.text_classification import DataError, detect_format, read_examples
    from fastformer.data.text_corpus import read_texts

    folder = Path(path)
    if labelled_folders and folder.is_dir() and any(p.is_dir() for p in visible_entries(folder)):
        return [example.text for example in read_examples(folder, format="folder", where=where)]  # (where: refused)
    try:
        labelled = detect_format(folder) if cfg.format is None else None
    except DataError:  # no telling from the name or the first line: the corpus reader's rules apply
        labelled = None
    if labelled in ("fasttext", "trees"):  # (where: refused)
        return [example.text for example in read_examples(path, format=labelled, where=where)]
    return list(read_texts(path, cfg.text_field, cfg.format, where))


def decontaminate(texts: list[str], excluded: set[str]) -> tuple[list[str], int, int]:
    """(kept texts, texts dropped as in `excluded`, repeats dropped): every text whose normalised form is in
    `excluded`, and every later repeat of a text kept, are dropped."""
    kept, seen, dropped, repeats = [], set(), 0, 0
    for text in texts:
        key = normalise_text(text)
        if key in excluded:
            dropped += 1
        elif key in seen:
            repeats += 1
        else:
            seen.add(key)
            kept.append(text)
    return kept, dropped, repeats


def load_texts(cfg: PretrainingConfig, report: dict[str, Any], task: str = "pretraining") -> dict[str, list[str]]:
    """train / validation texts, decontaminated against cfg.exclude; what was dropped goes into `report`, in all and
    per exclude file (`task`: who says so on standard error)."""
    excluded: set[str] = set()
    per_file: dict[str, set[str]] = {}
    for path in cfg.exclude:
        per_file[path] = {normalise_text(t) for t in file_texts(path, cfg, cfg.exclude_where, labelled_folders=True)}
        excluded |= per_file[path]
    train = read_corpus(cfg.train, cfg, cfg.train_where)
    read = len(train)
    dropped_by_file = {path: sum(normalise_text(t) in texts for t in train) for path, texts in per_file.items()}
    train, dropped, repeats = decontaminate(train, excluded)
    if not train:
        raise ValueError(
            f"--exclude: every one of the {read} training texts occurs in the --exclude files; nothing is left to "
            "train on (an evaluation file given as --train?)"
        )
    validation_dropped = 0
    if cfg.validation:
        validation, validation_dropped, _ = decontaminate(
            read_corpus(cfg.validation, cfg, cfg.validation_where), excluded
        )
    else:
        validation, train = hold_out(train, cfg.validation_fraction, cfg.seed)
    texts = limit_splits(dict(train=train, validation=validation), cfg.max_train_texts, cfg.max_eval_texts)
    train, validation = texts["train"], texts["validation"]
    report["texts_read"] = read
    report["decontamination"] = dict(
        exclude_files=list(cfg.exclude),
        exclude_where=cfg.exclude_where,
        excluded_texts=len(excluded),
        train_texts_dropped_by_file=dropped_by_file,
        train_texts_dropped=dropped,
        validation_texts_dropped=validation_dropped,
        repeated_texts_dropped=repeats,
    )
    report["split"] = dict(train=len(train), validation=len(validation))
    if cfg.exclude:
        print(
            f"{task}: {read} texts read, {dropped} dropped as in --exclude files, {repeats} repeats dropped",
            file=sys.stderr,
        )
    return dict(train=train, validation=validation)
