"""The explanation as a static picture (matplotlib), for papers and reports: the first words of the text shaded by
one view of the weights, and below it every head of the chosen layer as a heat map over the same words."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fastformer.interpret.explanation import Explanation, View

FIGURE_WIDTH, FONT_SIZE = 11.0, 10  # inches, points
# a monospace character is ~0.6 of the font size wide: the text panel counts its x axis in characters
PANEL_CHARACTERS = FIGURE_WIDTH * 72 / (0.6 * FONT_SIZE)
LINE_CHARACTERS = int(PANEL_CHARACTERS * 0.85)  # characters per line (the axis does not span the whole figure)


def _lines(words: list[str]) -> list[list[int]]:
    """Word indices laid out in lines of at most LINE_CHARACTERS characters (a word longer than a line gets one)."""
    lines, current, used = [], [], 0
    for i, word in enumerate(words):
        width = len(word) + 1
        if current and used + width > LINE_CHARACTERS:
            lines.append(current)
            current, used = [], 0
        current.append(i)
        used += width
    if current:
        lines.append(current)
    return lines


def explanation_figure(explanation: Explanation, view: View, path: Path, max_words: int = 120) -> Path:
    """Write the picture to `path` (PNG, or any format matplotlib knows by the suffix) and return the path."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no screen needed
    import matplotlib.pyplot as plt
    from matplotlib import colormaps

    weights = explanation.weights(view)
    shown = min(max_words, explanation.read_words)
    words = [explanation.words[i].text for i in explanation.read_indices[:shown]]
    top = float(weights[:shown].max()) if shown else 1.0
    lines = _lines(words)
    layer = len(explanation.layers) - 1 if view.layer is None else view.layer
    kind = "alpha" if view.kind == "pooling" else view.kind
    heads = explanation.layers[layer][kind][:, :shown] if explanation.layers else np.zeros((0, shown))
    text_height = 0.32 * max(len(lines), 1) + 0.6
    heads_height = 0.22 * max(len(heads), 1) + 0.9
    figure, (text_axis, heads_axis) = plt.subplots(
        2, 1, figsize=(FIGURE_WIDTH, text_height + heads_height), height_ratios=[text_height, heads_height]
    )
    blues = colormaps["Blues"]
    text_axis.set_xlim(0, LINE_CHARACTERS * 1.02)
    text_axis.set_ylim(len(lines) + 0.2, -0.8)
    text_axis.axis("off")
    for row, line in enumerate(lines):
        x = 0.0
        for i in line:
            share = float(weights[i]) / top if top > 0 else 0.0
            text_axis.text(
                x,
                row,
                words[i],
                family="monospace",
                fontsize=FONT_SIZE,
                va="center",
                color="white" if share > 0.6 else "black",
                bbox=dict(facecolor=blues(0.05 + 0.9 * share), edgecolor="none", pad=1.5),
            )
            x += len(words[i]) + 1
    more = explanation.read_words - shown
    caption = f"{view.label()} (darkest = {top:.3f})" + (
        f"; first {shown} words, {more} more not shown" if more else ""
    )
    prediction = explanation.prediction
    said = prediction.get("label") or (prediction.get("next_tokens") or [{}])[0].get("token") or "summary"
    text_axis.set_title(f"predicted: {said}    weights: {caption}", fontsize=10, loc="left")
    if len(heads):
        image = heads_axis.imshow(heads, aspect="auto", cmap="Blues", interpolation="nearest", vmin=0)
        heads_axis.set_yticks(range(len(heads)), [f"head {h + 1}" for h in range(len(heads))], fontsize=7)
        heads_axis.set_xticks(range(shown), words, rotation=90, fontsize=6)
        heads_axis.set_title(f"{kind}, layer {layer + 1}: each head over the same words", fontsize=10, loc="left")
        figure.colorbar(image, ax=heads_axis, fraction=0.02, pad=0.01)
    else:
        heads_axis.axis("off")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=150)
    plt.close(figure)
    return path
