"""A log-scale plot of benchmark results, laid out like the paper's Figure 2 (training and inference time)."""

from __future__ import annotations

from pathlib import Path

from fastformer.benchmark.runner import Cell


def plot(cells: list[Cell], header: dict, title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m in ("train", "inference") if any(c.mode == m and c.status == "ok" for c in cells)]
    fig, axes = plt.subplots(1, len(modes), figsize=(6.5 * len(modes), 4.8), squeeze=False)
    for ax, mode in zip(axes[0], modes, strict=True):
        for variant in dict.fromkeys(c.variant for c in cells):
            ok = [c for c in cells if c.variant == variant and c.mode == mode and c.status == "ok"]
            if not ok:
                continue
            style = "-o" if variant.startswith("fastformer") else "--s" if variant == "projections-only" else "-."
            ax.plot([c.n for c in ok], [1e3 * c.median_s for c in ok], style, label=variant, markersize=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length N")
        ax.set_ylabel("ms per step (median)")
        ax.set_title(f"{mode}: {title}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(
        f"{header.get('gpu') or header['cpu']} | {header['threads']} CPU threads | torch {header['torch']} | "
        f"{header['dtype']}",
        fontsize=8,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
