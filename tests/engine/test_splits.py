"""The splits every task shares (engine/splits.py): example caps and hold-outs."""

import pytest

from fastformer.engine.splits import hold_out, limit_splits
from fastformer.tasks.classification.config import ClassificationConfig
from fastformer.tasks.classification.data import load_splits
from tests.helpers import SHARED

IMDB = SHARED / "data" / "imdb" / "imdb_ratings.jsonl.gz"


def test_limit_splits_first_and_seeded_random():
    splits = {"train": list(range(100)), "test": list(range(50))}
    assert limit_splits(splits, 10, 5, None) == {"train": list(range(10)), "test": list(range(5))}
    sampled = limit_splits(splits, 10, 5, subset_seed=0)
    assert sampled == limit_splits(splits, 10, 5, subset_seed=0)  # reproducible
    assert sampled["train"] == sorted(set(sampled["train"])) and len(sampled["train"]) == 10  # file order, no repeats
    assert sampled["train"] != list(range(10))
    assert limit_splits(splits, None, 500, subset_seed=0) == splits  # no limit / limit above the size: all of it


def test_hold_out_partitions():
    held, rest = hold_out(list(range(20)), 0.1, seed=3)
    assert len(held) == 2 and sorted(held + rest) == list(range(20))


def test_max_examples_on_a_label_sorted_file_keeps_every_label():
    # IMDB's jsonl lists the positive reviews (rating >= 7) first: its first 300 test reviews are all positive.
    values = dict(
        train=str(IMDB),
        test=str(IMDB),
        train_where={"split": "train"},
        test_where={"split": "test"},
        label_field="rating",
        binary_threshold=7,
        max_train_examples=300,
        max_eval_examples=300,
    )
    first = load_splits(ClassificationConfig.from_dict({**values, "subset": "first"}))
    assert {e.label for e in first["test"]} == {"pos"}
    sampled = load_splits(ClassificationConfig.from_dict(values))  # the default: a seeded random sample
    assert {e.label for e in sampled["test"]} == {"pos", "neg"}


def test_the_random_subset_does_not_depend_on_the_training_seed():
    def test_texts(seed):
        cfg = ClassificationConfig.from_dict(dict(seed=seed, max_train_examples=100, max_eval_examples=50))
        return [e.text for e in load_splits(cfg)["test"]]  # the built-in task: 300 generated test documents

    assert test_texts(1) == test_texts(2)
    assert len(test_texts(1)) == 50


def test_whole_run_loss_after_a_resume_equals_the_uninterrupted_mean():
    from fastformer.engine.skeleton import whole_run_loss

    losses = [3.0, 2.0, 1.5, 1.2, 1.0, 0.9, 0.8, 0.7]  # per step
    log = [{"step": s, "loss": sum(losses[s - 3 : s]) / 3} for s in (3, 6)]  # logged every 3 steps
    mean = sum(losses) / len(losses)
    # uninterrupted: the Trainer's own mean over all 8 steps
    assert whole_run_loss(log, mean, 0, 8) == pytest.approx(mean)
    # resumed from a checkpoint at step 4 (its log ends there: a log at every save), logging every 3 steps from there
    resumed = [log[0], {"step": 4, "loss": losses[3]}, {"step": 7, "loss": sum(losses[4:7]) / 3}]
    assert whole_run_loss(resumed, sum(losses[4:]) / 4, 4, 8) == pytest.approx(mean)
