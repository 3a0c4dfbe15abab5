"""What a run writes beside its model: the training plot, JSON Lines files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


def plot_training(
    log_history: list[dict], path: Path, evaluations: dict[str, str], title: str = "", kept_step: int | None = None
) -> None:
    """training.png: the training loss and every validation loss on one axis, validation scores ({label: log key})
    on a second, the kept checkpoint marked, legends outside the curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    train = [(h["step"], h["loss"]) for h in log_history if "loss" in h]
    if train:
        ax.plot(*zip(*train, strict=True), color="C0", label="training loss")
    twin = None
    for number, (label, key) in enumerate(evaluations.items()):
        points = [(h["step"], h[key]) for h in log_history if key in h]
        if not points:
            continue
        on_loss_axis = "loss" in key
        if not on_loss_axis:
            twin = twin or ax.twinx()
        (ax if on_loss_axis else twin).plot(
            *zip(*points, strict=True), "os^v"[number % 4] + "-", color=f"C{number + 1}", label=label
        )
    if kept_step is not None:
        ax.axvline(kept_step, color="grey", linestyle=":", label=f"kept (step {kept_step})")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    handles, labels = ax.get_legend_handles_labels()
    if twin is not None:
        twin.set_ylabel("validation score")
        more = twin.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.12 if twin else 1.02, 1), fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    """One JSON object a line."""
    with Path(path).open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
