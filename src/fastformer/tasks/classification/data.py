"""Classification's data: the splits a run reads (files in the formats of data/text_classification.py, MIND topics,
the built-in generated task), held out and limited as the run's settings say. Reads files only (no torch)."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from fastformer.data.text_classification import Example, read_examples
from fastformer.engine.splits import hold_out, limit_splits
from fastformer.tasks.classification.config import ClassificationConfig

SUBSET_SEED = 0  # the --max-*-examples sample: fixed, so that every seed and architecture sees the same examples

SUBSETS = {"random": SUBSET_SEED, "first": None}  # --subset -> limit_splits' subset_seed (None: file order)


def relabel_binary(examples: list[Example], threshold: float | None) -> list[Example]:
    """Numeric labels >= threshold -> "pos", else "neg"; unchanged when threshold is None."""
    if threshold is None:
        return examples
    relabelled = []
    for e in examples:
        try:
            value = float(e.label)
        except ValueError:
            raise ValueError(
                f"{e.source}: label {e.label!r} is not a number; --binary-threshold {threshold:g} "
                "splits numeric labels (ratings) into pos / neg"
            ) from None
        relabelled.append(Example(e.text, "pos" if value >= threshold else "neg", e.source))
    return relabelled


def one_sided(examples: list[Example], threshold: float) -> str | None:
    """What is wrong when `threshold` puts two or more distinct numeric labels all on one side ("the labels run from
    1 to 5, all under 7, so every example would be 'neg'": SST-5's scale scored with IMDB's threshold), else None. One
    distinct label (a file of 10-star reviews alone) or a label that is not a number is not this function's case."""
    try:
        values = {float(e.label) for e in examples if e.label is not None}
    except ValueError:
        return None  # relabel_binary names the row
    if len(values) < 2 or (min(values) < threshold <= max(values)):
        return None
    side, name = ("under", "neg") if max(values) < threshold else ("at or over", "pos")
    return (
        f"the labels run from {min(values):g} to {max(values):g}, all {side} {threshold:g}, so every example would be "
        f"{name!r}"
    )


def load_mind_topics(cfg: ClassificationConfig, report: dict[str, Any]) -> dict[str, list[Example]]:
    """MIND topic classification: news texts labelled with their category (`fastformer.data.mind_topics`).

    `cfg.train` may name several files joined by commas (news.tsv, MIND folders, MINDRec JSON). The validation and
    test splits missing as files are cut from the training texts by `title_disjoint_split` (fixed seed SUBSET_SEED,
    so every training seed sees the same split); texts of a given validation / test file are removed from training.
    """
    from fastformer.data.mind_topics import normalise_title, read_topics, title_disjoint_split

    read = dict(text_fields=cfg.text_field or "title", label_field=cfg.label_field or "category")
    splits, found = {}, {}
    splits["train"], found["train"] = read_topics(cfg.train.split(","), **read)
    for name in ("validation", "test"):
        path = getattr(cfg, name)
        if path:
            splits[name], found[name] = read_topics(path.split(","), **read)
    held = {normalise_title(e.text) for name in ("validation", "test") if name in splits for e in splits[name]}
    if held:
        before = len(splits["train"])
        splits["train"] = [e for e in splits["train"] if normalise_title(e.text) not in held]
        report["train_texts_removed_as_in_evaluation_files"] = before - len(splits["train"])
    missing = [name for name in ("validation", "test") if name not in splits]
    if missing:
        fractions = dict(validation=cfg.validation_fraction, test=cfg.test_fraction)
        cut, _ = title_disjoint_split(
            splits["train"], *(fractions[n] if n in missing else 0.0 for n in ("validation", "test")), seed=SUBSET_SEED
        )
        splits["train"] = cut["train"]
        splits.update({name: cut[name] for name in missing})
        empty = [name for name in missing if not splits[name]]
        if empty:
            largest = ", ".join(f"{c} {n}" for c, n in Counter(e.label for e in splits["train"]).most_common(3))
            raise ValueError(
                f"MIND topics: no {' or '.join(empty)} texts could be cut from the training texts (a category gives "
                f"some from 3 texts; the largest here: {largest}); give --{' / --'.join(empty)} files or more texts"
            )
    report["read"] = {name: r.as_dict() for name, r in found.items()}
    report["split"] = {name: len(items) for name, items in splits.items()}
    report["split_categories"] = {name: dict(Counter(e.label for e in items)) for name, items in splits.items()}
    rare = [c for c, n in found["train"].categories.items() if n < 3]
    if rare:
        report["categories_in_training_only"] = rare
    print(f"MIND topics: {found['train'].summary()}", file=sys.stderr)
    return splits


def load_splits(cfg: ClassificationConfig, report: dict[str, Any] | None = None) -> dict[str, list[Example]]:
    """train / validation / test examples as the config says (the generated task when no train file is given).
    `report`, when given, receives what the readers found (MIND topics: counts per category, texts dropped)."""
    report = {} if report is None else report
    if cfg.format == "mind-topics":
        splits = load_mind_topics(cfg, report)
        return limit_splits(splits, cfg.max_train_examples, cfg.max_eval_examples, SUBSETS[cfg.subset])
    if cfg.train is None:
        from fastformer.data import synthetic

        splits = dict(
            train=synthetic.generate(2000, seed=1),
            validation=synthetic.generate(300, seed=2),
            test=synthetic.generate(300, seed=3),
        )
    else:
        read = dict(
            text_field=cfg.text_field, label_field=cfg.label_field, format=cfg.format, has_header=cfg.has_header
        )
        splits = {"train": read_examples(cfg.train, where=cfg.train_where, **read)}
        if cfg.validation:
            splits["validation"] = read_examples(cfg.validation, where=cfg.validation_where, **read)
        else:  # a seeded hold-out of the training file
            splits["validation"], splits["train"] = hold_out(splits["train"], cfg.validation_fraction, cfg.seed)
        if cfg.test:
            splits["test"] = read_examples(cfg.test, where=cfg.test_where, **read)
    if cfg.binary_threshold is not None and (why := one_sided(splits["train"], cfg.binary_threshold)):
        raise ValueError(
            f"--binary-threshold {cfg.binary_threshold:g}: {why}; give one inside the training labels' range"
        )
    splits = {name: relabel_binary(examples, cfg.binary_threshold) for name, examples in splits.items()}
    return limit_splits(splits, cfg.max_train_examples, cfg.max_eval_examples, SUBSETS[cfg.subset])
