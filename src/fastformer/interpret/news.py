"""Explain a news recommender for one user: which clicked news made the user vector, how much each of them adds to
each candidate's score, and which title words made each news vector.

The score of candidate c is user . c, and the user vector is the user encoder's pooling sum_i w_i s_i over its outputs
s_i at the clicked news i, so score(c) = sum_i w_i (s_i . c): each clicked news' share of a score is exact, and the
shares add up to the score. (s_i is the clicked news after the user encoder's layers, so it also carries what the other
clicks added to it.) A model that scores popularity (PP-Rec) adds its learned popularity score to that sum; it is
shown apart. Title words are weighted by the news encoder's pooling, the last step that makes a news vector.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fastformer.data.mind import known_history
from fastformer.data.tokenizer import special_tokens_around
from fastformer.interpret.explanation import framed
from fastformer.interpret.page import STYLE, shade_style
from fastformer.interpret.words import TokenizedText, split_words


@dataclass
class NewsItem:
    news_id: str
    text: str
    words: list[str]
    weights: np.ndarray  # (words,) the news encoder's pooling weights per word


@dataclass
class NewsExplanation:
    """One impression of one user. `clicked[i].weight` is clicked news i's weight in the user vector;
    `candidates` are sorted by score, each with `shares` (one per clicked news), `popularity` (the model's popularity
    score, 0 for a model without one; shares + popularity = score) and `clicked` (1 / 0, or None when the impression
    has no labels)."""

    user_id: str
    impression_id: str
    clicked: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    scores_popularity: bool = False  # the model adds a popularity score (PP-Rec) to the clicked news' shares

    def to_dict(self) -> dict[str, Any]:
        def item(entry):
            rest = dict(entry)
            news: NewsItem = rest.pop("news")
            return dict(
                rest,
                news_id=news.news_id,
                text=news.text,
                words=news.words,
                word_weights=np.round(news.weights, 6).tolist(),
            )

        return dict(
            user_id=self.user_id,
            impression_id=self.impression_id,
            scores_popularity=self.scores_popularity,
            clicked=[item(c) for c in self.clicked],
            candidates=[item(c) for c in self.candidates],
        )

    def to_html(self) -> str:
        return news_page(self)

    def summary(self) -> str:
        """One line: the user, the impression, what was clicked and the top candidate."""
        top = self.candidates[0] if self.candidates else None
        said = f"; top candidate {top['news'].news_id} (score {top['score']:+.3f})" if top else ""
        return (
            f"user {self.user_id}, impression {self.impression_id}: {len(self.clicked)} clicked news, "
            f"{len(self.candidates)} candidates{said}"
        )

    def _repr_html_(self) -> str:
        return framed(self.to_html())

    def save_html(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def save_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")
        return path

    def save_png(self, path: str | Path) -> Path:
        """A heat map: candidates (by score) x clicked news, each cell the clicked news' share of that score."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        shares = (
            np.array([c["shares"] for c in self.candidates]) if self.clicked else np.zeros((len(self.candidates), 1))
        )
        short = lambda text: text if len(text) <= 48 else text[:45] + "..."  # noqa: E731
        height = 1.2 + 0.3 * len(self.candidates)
        figure, axis = plt.subplots(figsize=(max(7.0, 2 + 0.45 * shares.shape[1]), height))
        bound = float(np.abs(shares).max()) or 1.0
        image = axis.imshow(shares, aspect="auto", cmap="RdBu", vmin=-bound, vmax=bound, interpolation="nearest")
        axis.set_yticks(
            range(len(self.candidates)),
            [f"{c['score']:+.2f} {'*' if c['clicked'] else ' '} {short(c['news'].text)}" for c in self.candidates],
            fontsize=7,
        )
        axis.set_xticks(range(len(self.clicked)), [f"{i + 1}" for i in range(len(self.clicked))], fontsize=7)
        axis.set_xlabel("clicked news (oldest first)")
        title = f"user {self.user_id}: each clicked news' share of each candidate's score (* = clicked)"
        if self.scores_popularity:  # the label's score includes it; the cells do not
            title += "\nscores include the model's popularity score; the cells are the clicked news' shares"
        axis.set_title(title, fontsize=9, loc="left")
        figure.colorbar(image, ax=axis, fraction=0.03)
        figure.tight_layout()
        path = Path(path)
        figure.savefig(path, dpi=150)
        plt.close(figure)
        return path


def _item(news_id: str, tokenized: TokenizedText, pooling: np.ndarray) -> NewsItem:
    weights, _ = tokenized.word_weights(pooling[: len(tokenized.input_ids)])
    return NewsItem(news_id, tokenized.text, [tokenized.words[i].text for i in tokenized.read_indices], weights)


@torch.no_grad()
def explain_user(
    model, tokenizer, data, user_id: str, impression_id: str | None = None, clicks=None
) -> NewsExplanation:
    """Explain the ranking of one impression of `user_id` in MIND data (`fastformer.data.mind.load_mind`): the first
    impression of that user, or the one named. `clicks`: the news click counts of a model that scores popularity
    (`fastformer.tasks.news.task.load_news_clicks`). Raises ValueError naming what is missing."""
    from fastformer.models.fastformer.modeling_news import candidate_clicks  # (transformers: only when used)

    mine = [i for i in data.impressions if i.user_id == user_id]
    if not mine:
        raise ValueError(f"user {user_id!r} has no impression in {data.folder}")
    if impression_id is not None:
        mine = [i for i in mine if i.impression_id == impression_id]
        if not mine:
            raise ValueError(f"user {user_id!r} has no impression {impression_id!r} in {data.folder}")
    impression = mine[0]
    config = model.config
    history = known_history(impression, data.news, config.max_history)
    if not history:
        raise ValueError(f"user {user_id!r} has no clicked news that news.tsv knows: nothing to explain")
    candidates = [c for c in impression.candidates if c in data.news]
    if not candidates:
        raise ValueError(
            f"impression {impression.impression_id} of user {user_id!r}: none of its {len(impression.candidates)} "
            "candidates is in news.tsv: nothing to rank"
        )
    fields = getattr(config, "news_fields", None) or ["title"]
    news_ids = list(dict.fromkeys(history + candidates))
    length = getattr(config, "news_max_length", None) or config.max_position_embeddings  # as the run read them
    before, after = special_tokens_around(tokenizer)  # and inside its tokenizer's own ([CLS] ... [SEP] of a BERT's)
    tokenized = [split_words(tokenizer, data.news[n].text(fields), length - len(before) - len(after)) for n in news_ids]
    rows = [before + t.input_ids + after for t in tokenized]
    width = max(1, *(len(r) for r in rows))  # at least one column, as NewsTokens.batch pads
    batch = tokenizer.pad(
        {"input_ids": rows}, padding="max_length", max_length=width, padding_side="right", return_tensors="pt"
    )
    ids, mask = batch["input_ids"], batch["attention_mask"]
    row_of = {n: i for i, n in enumerate(news_ids)}
    model.eval()
    history_index = torch.tensor([[row_of[n] for n in history]])
    candidate_index = torch.tensor([[row_of[n] for n in candidates]])
    counts = candidate_clicks(model, [tuple(candidates)], clicks)
    out = model(
        ids, mask, history_index, candidate_index, candidate_clicks=counts, output_attentions=True, return_dict=True
    )
    pooling = out.news_pooling_attentions.double().numpy()[:, len(before) :]  # (U, L) from each text's first word
    weights = out.user_pooling_attentions[0].double().numpy()  # (H,) each clicked news' weight in the user vector
    states = out.user_news_states[0].double()  # (H, hidden)
    vectors = out.news_vectors.double()
    items = {n: _item(n, tokenized[i], pooling[i]) for i, n in enumerate(news_ids)}
    labels = dict(zip(impression.candidates, impression.labels, strict=True)) if impression.labels else {}
    ranked = []
    for column, n in enumerate(candidates):
        shares = weights * (states @ vectors[row_of[n]]).numpy()
        popularity = 0.0 if out.popularity_scores is None else float(out.popularity_scores[0, column])
        ranked.append(
            dict(
                news=items[n],
                score=float(out.logits[0, column]),
                shares=np.round(shares, 6).tolist(),
                popularity=popularity,
                clicked=labels.get(n),
            )
        )
    ranked.sort(key=lambda c: -c["score"])
    clicked = [dict(news=items[n], weight=float(w)) for n, w in zip(history, weights, strict=True)]
    return NewsExplanation(user_id, impression.impression_id, clicked, ranked, counts is not None)


def _title(item: NewsItem) -> str:
    top = float(item.weights.max()) if len(item.weights) else 0.0
    return " ".join(
        f"<span class='w' style='{shade_style(float(w), top)}' title='weight {w:.4f}'>{html.escape(word)}</span>"
        for word, w in zip(item.words, item.weights, strict=True)
    )


def news_page(explanation: NewsExplanation) -> str:
    """The HTML page (a str): the clicked news with their weight in the user vector, then every candidate by score
    with its title words shaded and the clicked news that added and took most from its score."""
    clicked_rows = "".join(
        f"<tr><td>{i + 1}</td><td><span class='bar' style='width:{120 * c['weight']:.0f}px'></span> "
        f"{c['weight']:.3f}</td><td>{_title(c['news'])}</td></tr>"
        for i, c in enumerate(explanation.clicked)
    )
    rows = []
    for rank, c in enumerate(explanation.candidates, start=1):
        shares = np.array(c["shares"])
        order = np.argsort(-np.abs(shares))[:3]
        drivers = "; ".join(f"#{i + 1} {shares[i]:+.3f}" for i in order)
        mark = {1: "clicked", 0: "not clicked"}.get(c["clicked"], "")
        popularity = f"<td>{c['popularity']:+.3f}</td>" if explanation.scores_popularity else ""
        rows.append(
            f"<tr><td>{rank}</td><td>{c['score']:+.3f}</td>{popularity}<td>{mark}</td>"
            f"<td>{_title(c['news'])}</td><td class='muted'>{drivers}</td></tr>"
        )
    popularity_head = "<th>of it, popularity</th>" if explanation.scores_popularity else ""
    popularity_note = (
        " This model also adds a learned score of each candidate's popularity (its clicks in the training data, the "
        "column beside the score), so the shares sum to the score less that column."
        if explanation.scores_popularity
        else " The shares sum to the score."
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fastformer explain: user {html.escape(explanation.user_id)}</title>
<style>{STYLE}</style></head><body>
<h1>Why these news for user {html.escape(explanation.user_id)}</h1>
<p class="muted">Impression {html.escape(explanation.impression_id)}. Title words are shaded by the news encoder's
pooling weight (darkest = the title's largest).</p>
<h2>Clicked news and their weight in the user vector</h2>
<table><tr><th>#</th><th>weight</th><th>title</th></tr>{clicked_rows}</table>
<h2>Candidates by score</h2>
<table><tr><th>rank</th><th>score</th>{popularity_head}<th></th><th>title</th>
<th>clicked news that moved the score most</th></tr>
{"".join(rows)}</table>
<div class="note">A candidate's score is the dot product of the user vector and its news vector. The user vector is
the user encoder's weighted sum over the clicked news (the weights above), so each clicked news adds an exact share
to every score; the three largest are listed by number.{popularity_note} The weights are contributions to pooled
vectors, not pairwise attention.</div>
</body></html>
"""
