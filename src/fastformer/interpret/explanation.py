"""Explanation: what a Fastformer read in one text, as weights per word, with the prediction and a faithfulness check.

The weights are Fastformer's own: per layer and head, alpha_i (token i's share of the global query) and beta_i (its
share of the global key), and for models that pool (the classifier) the pooling weight of each token in the vector
the head reads. They are shares of pooled vectors, not pairwise attention: a word with a high alpha is one the layer
put into its summary of the text, not one that "attends to" another word.
"""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from fastformer.interpret.words import Word

WEIGHT_KINDS = ("pooling", "alpha", "beta")
WHAT_THE_WEIGHTS_ARE = {
    "pooling": "the share of each word in the pooled vector the output layer reads (the model's last step)",
    "alpha": "the share of each word in the layer's global query (the first additive pooling)",
    "beta": "the share of each word, mixed with the global query, in the layer's global key (the second pooling)",
}


def framed(page: str, height: int = 640) -> str:
    """An HTML page inside an iframe (srcdoc), as a notebook cell can show it."""
    return (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width: 100%; height: {height}px; border: 0" '
        'sandbox="allow-scripts"></iframe>'
    )


@dataclass(frozen=True)
class View:
    """Which weights to show: kind in WEIGHT_KINDS, layer (0-based; pooling has none), head (None = mean of heads)."""

    kind: str
    layer: int | None = None
    head: int | None = None

    def label(self) -> str:
        if self.kind == "pooling":
            return "pooling"
        head = "mean of heads" if self.head is None else f"head {self.head + 1}"
        return f"{self.kind}, layer {self.layer + 1}, {head}"


@dataclass
class Explanation:
    """One text's explanation. `words` are all words of the text shown, in order; those with `read` set were read
    by the model (`read_indices`: the first ones, a head and a tail, or the last ones, as the model cuts the text).
    `layers[l][kind]` is (heads, read words) for kind "alpha" / "beta"; `pooling` is (read words,) or None, both
    in the order of `read_indices`; each row sums to 1 over the read words, minus the share
    `outside_words` left on tokens that are no word (special tokens). `prediction` says what the model predicted;
    `faithfulness` how much the prediction moved when the top-weighted words were cut, against random words."""

    text: str
    task: str
    words: list[Word]
    layers: list[dict[str, np.ndarray]]
    pooling: np.ndarray | None
    prediction: dict[str, Any]
    faithfulness: dict[str, Any] | None = None
    outside_words: dict[str, float] = field(default_factory=dict)
    tokens_read: int = 0
    tokens_total: int = 0
    words_not_shown: int = 0  # words of a long text cut out (`words.UNREAD_WORDS_SHOWN` past what was read)
    not_shown_after: int = -1  # the index in `words` of the word the cut words followed (-1: none, or the text's first)
    unknown_words: int = 0  # read words whose every token is the tokenizer's unknown token

    @property
    def read_words(self) -> int:
        return sum(w.read for w in self.words)

    @property
    def read_indices(self) -> list[int]:
        """The indices in `words` of the read words, in order: `weights(view)[r]` is the weight of
        `words[read_indices[r]]`."""
        return [i for i, w in enumerate(self.words) if w.read]

    @property
    def skips_middle(self) -> bool:
        """Whether the model read a head and a tail of the text and not its middle (head+tail truncation)."""
        read = self.read_indices
        return bool(read) and read[-1] - read[0] + 1 > len(read)

    @property
    def skips_start(self) -> bool:
        """Whether the model read the text's end and not its start (a language model's prefix of a long text)."""
        read = self.read_indices
        return bool(read) and read[0] > 0 and not self.skips_middle

    @property
    def num_heads(self) -> int:
        return self.layers[0]["alpha"].shape[0] if self.layers else 0

    def default_view(self) -> View:
        """The pooling weights where the model pools (the readout itself), else the last layer's alpha."""
        if self.pooling is not None:
            return View("pooling")
        return View("alpha", len(self.layers) - 1)

    def weights(self, view: View | None = None) -> np.ndarray:
        """(read words,) weights of one view."""
        view = view or self.default_view()
        if view.kind == "pooling":
            if self.pooling is None:
                raise ValueError("this model has no pooling weights: choose alpha or beta")
            return self.pooling
        if view.kind not in ("alpha", "beta"):
            raise ValueError(f"weight kind must be one of {WEIGHT_KINDS}, got {view.kind!r}")
        layer = len(self.layers) - 1 if view.layer is None else view.layer
        if not 0 <= layer < len(self.layers):
            raise ValueError(f"layer {layer + 1} does not exist: the model has {len(self.layers)}")
        table = self.layers[layer][view.kind]  # (heads, words)
        if view.head is None:
            return table.mean(0)
        if not 0 <= view.head < table.shape[0]:
            raise ValueError(f"head {view.head + 1} does not exist: the model has {table.shape[0]}")
        return table[view.head]

    def top_words(self, k: int = 10, view: View | None = None) -> list[tuple[str, float]]:
        """The k read words with the highest weight, highest first."""
        weights = self.weights(view)
        order = np.argsort(-weights, kind="stable")[:k]
        read = self.read_indices
        return [(self.words[read[r]].text, float(weights[r])) for r in order]

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-ready lists (what the HTML page embeds): every field, the arrays rounded."""
        return {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            "words": [asdict(w) for w in self.words],
            "layers": [{k: np.round(v, 6).tolist() for k, v in layer.items()} for layer in self.layers],
            "pooling": None if self.pooling is None else np.round(self.pooling, 6).tolist(),
        }

    def to_html(self, view: View | None = None, page_words: int = 400) -> str:
        """One self-contained HTML page (no network): the text shaded by the chosen weights, with controls."""
        from fastformer.interpret.page import explanation_page

        return explanation_page(self, view or self.default_view(), page_words)

    def _repr_html_(self) -> str:
        """Jupyter shows the page inline, in a frame of its own (its element ids and script stay apart from the
        notebook's and from other explanations' in the same notebook)."""
        return framed(self.to_html())

    def save_html(self, path: str | Path, view: View | None = None, page_words: int = 400) -> Path:
        path = Path(path)
        path.write_text(self.to_html(view, page_words), encoding="utf-8")
        return path

    def save_png(self, path: str | Path, view: View | None = None, max_words: int = 120) -> Path:
        """A static picture (matplotlib) of the first `max_words` read words shaded by one view, and every head."""
        from fastformer.interpret.figure import explanation_figure

        return explanation_figure(self, view or self.default_view(), Path(path), max_words)

    def save_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")
        return path
