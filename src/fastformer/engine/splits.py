"""A run's splits: a validation split held out of the training data, and example caps (--max-*-examples, --subset)."""

from __future__ import annotations


def hold_out(items: list, fraction: float, seed: int) -> tuple[list, list]:
    """(held out, rest): a seeded random `fraction` of `items` (at least one), for a validation split."""
    order = _permutation(len(items), seed)
    cut = max(1, int(round(fraction * len(items))))
    return [items[i] for i in order[:cut]], [items[i] for i in order[cut:]]


def limit_splits(
    splits: dict[str, list], max_train: int | None, max_eval: int | None, subset_seed: int | None = None
) -> dict[str, list]:
    """At most `max_train` training items and `max_eval` of every other split (None: all).

    `subset_seed=None` keeps the first items in file order; an integer draws a seeded random subset instead (kept in
    file order), because real files are often sorted by label (IMDB lists its positive reviews first), and their first
    N items would then hold one class only.
    """
    limited = {}
    for name, items in splits.items():
        limit = max_train if name == "train" else max_eval
        if not limit or limit >= len(items):
            limited[name] = items
        elif subset_seed is None:
            limited[name] = items[:limit]
        else:
            limited[name] = [items[i] for i in sorted(_permutation(len(items), subset_seed)[:limit])]
    return limited


def _permutation(n: int, seed: int) -> list[int]:
    import torch

    return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
