"""`explain(model, tokenizer, text)`: a Fastformer's additive-attention weights over one text, per word, with what it
predicted and a check that the weights matter.

Which model decides what is explained:
- a sequence classifier: the predicted label and class probabilities; weights: the pooling that feeds the classifier
  and every layer's alpha and beta;
- a causal language model: the next token it expects after the text (top 5; a text longer than max_length is read
  by its last max_length tokens, the ones that token follows); weights: every layer's alpha and beta over the text
  read, as the last position pools them (the prefix of the step that predicts the next token);
- a summarizer (encoder-decoder): the summary it generates; weights: the encoder's alpha and beta over the source.

Faithfulness (a check, not a proof): cut the k words with the highest weight from the text and measure how much the
prediction's own score falls (the predicted class's probability; the expected next token's probability; the
summary's per-token probability), against cutting k words drawn at random (mean and spread over `trials` draws).
Weights that matter should cost more than random words.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fastformer.data.tokenizer import TRUNCATIONS, encode_texts, head_length, special_tokens_around
from fastformer.interpret.explanation import Explanation, View
from fastformer.interpret.words import TokenizedText, split_words
from fastformer.layers.attention import AdditiveAttention
from fastformer.layers.layer import FastformerLayer
from fastformer.precision import cpu_bf16_autocast


def scorer_for(model) -> type[Scorer]:
    """The scorer of a model's kind of prediction (SCORERS, by the model's class)."""
    from fastformer.models import fastformer as models

    for name, scorer in SCORERS.items():
        if isinstance(model, getattr(models, name)):
            return scorer
    raise ValueError(
        f"explain takes a Fastformer classifier, language model or summarizer, not {type(model).__name__} "
        "(a news recommender is explained per user: fastformer.interpret.explain_user)"
    )


def _check_additive(model) -> None:
    """Refuse a model whose mixers pool no additive-attention weights (a softmax baseline), whatever it is called."""
    if not any(isinstance(m, FastformerLayer) and m.mixer.additive_weights for m in model.modules()):
        mixer = getattr(model.config, "attention_type", "another")
        raise ValueError(
            f"this model's layers mix tokens with {mixer} attention, which pools no additive-attention weights: "
            "nothing for explain to show"
        )


def _to_numpy(weights) -> list[dict[str, np.ndarray]]:
    return [dict(alpha=a[0].double().cpu().numpy(), beta=b[0].double().cpu().numpy()) for a, b in weights]


class Scorer:
    """One kind of prediction and the score that faithfulness follows, for any list of texts: `predict` one text
    (and remember what it predicted), then `scores` for texts with words cut (the same prediction's score)."""

    kind = ""
    # the task reads a text inside its tokenizer's own special tokens ([CLS] ... [SEP] of a BERT tokenizer, as a
    # classifier's or a summarizer's run encodes it; none for a tokenizer a run trained): added around the words here
    reads_special_tokens = False
    truncations: tuple[str, ...] = ("head",)  # how the task cuts a long text (a classifier may keep its tail too)

    def __init__(self, model, tokenizer, max_length: int, generation: dict[str, Any], truncation: str = "head"):
        self.model, self.tokenizer, self.max_length = model, tokenizer, max_length
        self.generation, self.truncation = generation, truncation
        self.device = next(model.parameters()).device
        self.target: Any = None  # what the score is of: a class id, a token id, the summary's ids
        if truncation not in self.truncations:
            if truncation in TRUNCATIONS:
                raise ValueError(f"truncation {truncation!r} is a classifier's: a {self.kind} model reads the head")
            raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
        self.before, self.after = special_tokens_around(tokenizer) if self.reads_special_tokens else ([], [])
        self.reserved_tokens = len(self.before) + len(self.after)  # of max_length, taken by the special tokens

    def read_head(self) -> int | None:
        """How many of a long text's first word tokens are read before its tail (None: its head only; 0: its tail
        only)."""
        return None

    def _wrapped(self, rows: list[list[int]]) -> list[list[int]]:
        """Rows of word tokens (at most max_length - reserved_tokens) inside the special tokens the task reads."""
        room = self.max_length - self.reserved_tokens
        return [self.before + row[:room] + self.after for row in rows]

    def _read_weights(self, weights, n: int) -> list[AdditiveAttention]:
        """Each layer's (alpha, beta) of a wrapped row at its n word tokens (the special tokens' left out)."""
        start = len(self.before)
        return [AdditiveAttention(a[..., start : start + n], b[..., start : start + n]) for a, b in weights]

    def _batch(self, texts: list[str], left: bool = False) -> dict[str, torch.Tensor]:
        ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        room = self.max_length - self.reserved_tokens
        last = self.read_head() == 0  # a text cut as `split_words` cut the explained one: its end, or its start
        ids = [row[-room:] if last else row[:room] for row in ids]
        ids = self._wrapped([row or [self.tokenizer.pad_token_id] for row in ids])  # an emptied text: one pad token
        batch = self.tokenizer.pad({"input_ids": ids}, padding_side="left" if left else "right", return_tensors="pt")
        return {name: batch[name].to(self.device) for name in ("input_ids", "attention_mask")}

    def predict(self, input_ids: torch.Tensor) -> tuple[dict[str, Any], list, np.ndarray | None]:
        """(prediction record, per-layer (alpha, beta) tensors, pooling weights or None) for one text (1, N)."""
        raise NotImplementedError

    def batch_scores(self, texts: list[str]) -> torch.Tensor:
        """The prediction's score for each text of a batch."""
        raise NotImplementedError

    @torch.no_grad()
    def scores(self, texts: list[str], batch_size: int = 16) -> np.ndarray:
        """The prediction's score for each text (see the module docstring)."""
        out = [self.batch_scores(texts[start : start + batch_size]) for start in range(0, len(texts), batch_size)]
        return torch.cat(out).cpu().numpy().astype(np.float64)


class ClassifierScorer(Scorer):
    """The predicted class's probability; weights: the pooling before the classifier and each layer's.

    The classifier reads texts with its tokenizer's own special tokens ([CLS] ... [SEP] for a converted BERT; none for
    a tokenizer a run trained), as `fastformer predict` does: they are added around the words here, and their weights
    are left out of the words' (so a BERT classifier's word weights sum to less than 1)."""

    kind = "classification"
    reads_special_tokens = True
    truncations = TRUNCATIONS

    def read_head(self) -> int | None:
        if self.truncation == "head":
            return None
        return head_length(self.before, self.after, self.max_length, self.truncation) - len(self.before)

    def predict(self, input_ids):
        wrapped = torch.tensor(self._wrapped([input_ids[0].tolist()]), device=input_ids.device)
        out = self.model(wrapped, output_attentions=True)
        start, n = len(self.before), input_ids.shape[1]
        weights = self._read_weights(out.additive_attentions, n)
        pooling = out.pooling_attentions[0, start : start + n].double().cpu().numpy()
        probs = out.logits.float().softmax(-1)[0].cpu()
        self.target = int(probs.argmax())
        names = self.model.config.id2label
        prediction = dict(
            label=str(names[self.target]),
            probabilities={str(names[i]): round(float(p), 6) for i, p in enumerate(probs)},
            score_name=f"probability of {names[self.target]}",
        )
        return prediction, weights, pooling

    def batch_scores(self, texts):
        return self.model(**self._batch(texts)).logits.float().softmax(-1)[:, self.target]

    def _batch(self, texts: list[str], left: bool = False) -> dict[str, torch.Tensor]:
        ids = encode_texts(self.tokenizer, texts, self.max_length, self.truncation)  # as `fastformer predict` cuts
        empty = self.before + [self.tokenizer.pad_token_id] + self.after  # an emptied text still gets one (pad) token
        ids = [row if len(row) > self.reserved_tokens else empty for row in ids]
        batch = self.tokenizer.pad({"input_ids": ids}, padding_side="left" if left else "right", return_tensors="pt")
        return {name: batch[name].to(self.device) for name in ("input_ids", "attention_mask")}


class NextTokenScorer(Scorer):
    """The expected next token's probability after the text (left-padded, so the last column is the text's end);
    a long text is read by its last max_length tokens, those the next token follows."""

    kind = "lm"

    def read_head(self) -> int | None:
        return 0  # no head: the tail alone

    def predict(self, input_ids):
        out = self.model(input_ids, output_attentions=True, use_cache=False)
        probs = out.logits[0, -1].float().softmax(-1).cpu()
        top = probs.topk(min(5, probs.numel()))
        self.target = int(top.indices[0])
        expected = [
            dict(token=self.tokenizer.decode([int(i)]), probability=round(float(p), 6))
            for p, i in zip(top.values, top.indices, strict=True)
        ]
        prediction = dict(next_tokens=expected, score_name=f"probability of the next token {expected[0]['token']!r}")
        return prediction, out.additive_attentions, None

    def batch_scores(self, texts):
        logits = self.model(**self._batch(texts, left=True), use_cache=False).logits.float()
        return logits[:, -1].softmax(-1)[:, self.target]


class SummaryScorer(Scorer):
    """The generated summary's per-token probability (geometric mean); weights: the encoder's over the source."""

    kind = "summarize"
    reads_special_tokens = True  # as the run's documents are encoded

    def predict(self, input_ids):
        wrapped = torch.tensor(self._wrapped([input_ids[0].tolist()]), device=input_ids.device)
        encoder = self.model.get_encoder()
        read = encoder(wrapped, output_attentions=True, return_dict=True).additive_attentions
        weights = self._read_weights(read, input_ids.shape[1])
        generated = self.model.generate(input_ids=wrapped, attention_mask=torch.ones_like(wrapped), **self.generation)
        summary_ids = [t for t in generated[0].tolist() if t not in self.tokenizer.all_special_ids]
        self.target = summary_ids or [self.tokenizer.eos_token_id or self.tokenizer.pad_token_id]
        prediction = dict(
            summary=self.tokenizer.decode(summary_ids, skip_special_tokens=True).strip(),
            score_name="per-token probability of the summary",
        )
        return prediction, weights, None

    def batch_scores(self, texts):
        batch = self._batch(texts)
        labels = torch.tensor([self.target] * len(texts), device=self.device)
        logits = self.model(**batch, labels=labels).logits.float()
        token_logp = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]  # (B, T)
        return token_logp.mean(-1).exp()


# model class (fastformer.models.fastformer) -> the scorer of its prediction; a new kind of model is one line here
SCORERS: dict[str, type[Scorer]] = {
    "FastformerForSequenceClassification": ClassifierScorer,
    "FastformerForCausalLM": NextTokenScorer,
    "FastformerForConditionalGeneration": SummaryScorer,
}


def faithfulness_check(
    scorer: Scorer, tokenized: TokenizedText, explanation: Explanation, k: int, trials: int, seed: int
) -> dict[str, Any] | None:
    """How much the prediction's score falls when the k top-weighted read words are cut, for each kind of weight,
    against k random read words (mean and standard deviation over `trials` draws). None for texts under 2 words."""
    n = explanation.read_words
    if n < 2:
        return None
    k = max(1, min(k, n - 1))
    views = [View("pooling")] if explanation.pooling is not None else []
    last = len(explanation.layers) - 1
    views += [View("alpha", last), View("beta", last)]
    rng = np.random.default_rng(seed)
    read = explanation.read_indices  # sets below are of places among the read words (where the weights are)
    random_sets = [set(rng.choice(n, size=k, replace=False).tolist()) for _ in range(trials)]
    top_sets = [set(np.argsort(-explanation.weights(v), kind="stable")[:k].tolist()) for v in views]
    texts = [tokenized.text] + [tokenized.without_words({read[r] for r in s}) for s in top_sets + random_sets]
    scores = scorer.scores(texts)
    base, top, random = scores[0], scores[1 : 1 + len(views)], scores[1 + len(views) :]
    drops = base - random
    return dict(
        k=k,
        score=explanation.prediction.get("score_name", "score"),
        original=round(float(base), 6),
        top_weighted=[
            dict(
                view=v.label(),
                words=[explanation.words[read[r]].text for r in sorted(s)],
                drop=round(float(base - t), 6),
            )
            for v, s, t in zip(views, top_sets, top, strict=True)
        ],
        random=dict(trials=trials, mean_drop=round(float(drops.mean()), 6), std_drop=round(float(drops.std()), 6)),
    )


def unknown_words(tokenized: TokenizedText, unk_id: int | None) -> int:
    """How many read words the model knows nothing of: each of their tokens is the unknown token (their weights,
    and the prediction, cannot tell them apart)."""
    if unk_id is None:
        return 0
    tokens_of: dict[int, list[int]] = {}
    for token, word in zip(tokenized.input_ids, tokenized.token_words, strict=True):
        if word >= 0:
            tokens_of.setdefault(word, []).append(token)
    return sum(all(t == unk_id for t in tokens) for tokens in tokens_of.values())


def explain(
    model,
    tokenizer,
    text: str,
    *,
    max_length: int | None = None,
    faithfulness_k: int = 5,
    trials: int = 20,
    seed: int = 0,
    generation: dict[str, Any] | None = None,
    truncation: str = "head",
    bf16: bool = False,
) -> Explanation:
    """Explain one text with a trained Fastformer (classifier, language model or summarizer) and its tokenizer.

    max_length: tokens read (default: the model's max_position_embeddings); truncation: a classifier's "head" or
    "head+tail" (its first 128 tokens and its last ones); bf16: score under bfloat16 autocast on CPU. `fastformer
    explain` passes the run's (--max-length or a summarizer's --max-source-length, --truncation, --bf16), so the
    prediction is the one `fastformer predict` makes;
    faithfulness_k / trials / seed: the word-cutting check (faithfulness_k=0 skips it); generation: generate()
    arguments for a summarizer (default greedy, up to the model's target length).
    Returns an `Explanation` (`.to_html()`, `.save_png()`, `.top_words()`, `.to_dict()`; shown inline in Jupyter).
    """
    scorer_class = scorer_for(model)
    _check_additive(model)
    model.eval()
    max_length = max_length or model.config.max_position_embeddings
    if scorer_class is SummaryScorer:  # default: greedy, up to the model's target length
        generation = {"num_beams": 1, "max_new_tokens": model.config.max_target_positions - 1, **(generation or {})}
    scorer = scorer_class(model, tokenizer, max_length, generation or {}, truncation)
    tokenized = split_words(tokenizer, text, max_length - scorer.reserved_tokens, scorer.read_head())
    if not tokenized.input_ids:
        raise ValueError("the text has no tokens to explain (it is empty or only spaces)")
    text = tokenized.text  # a long text is cut past what the model reads (same input tokens)
    on_cpu = scorer.device.type == "cpu"  # (where the CPU multiplies bfloat16: precision.py)
    scoring = torch.autocast("cpu", dtype=torch.bfloat16, enabled=on_cpu and cpu_bf16_autocast(bool(bf16)))
    with torch.no_grad(), scoring:
        prediction, weights, pooling = scorer.predict(torch.tensor([tokenized.input_ids], device=scorer.device))
    layers = _to_numpy(weights)
    outside: dict[str, float] = {}
    word_layers = []
    for depth, layer in enumerate(layers):
        merged = {}
        for kind, table in layer.items():
            merged[kind], rest = tokenized.word_weights(table[:, : len(tokenized.input_ids)])
            outside[f"{kind}:{depth}"] = float(rest.mean())
        word_layers.append(merged)
    word_pooling = None
    if pooling is not None:
        word_pooling, rest = tokenized.word_weights(pooling[: len(tokenized.input_ids)])
        outside["pooling"] = float(rest)
    explanation = Explanation(
        text=text,
        task=scorer.kind,
        words=tokenized.words,
        layers=word_layers,
        pooling=word_pooling,
        prediction=prediction,
        outside_words={k: round(v, 6) for k, v in outside.items() if v > 1e-9},
        tokens_read=len(tokenized.input_ids),
        tokens_total=tokenized.total_tokens,
        words_not_shown=tokenized.words_not_shown,
        not_shown_after=tokenized.not_shown_after,
        unknown_words=unknown_words(tokenized, tokenizer.unk_token_id),
    )
    if faithfulness_k > 0:
        with scoring:
            explanation.faithfulness = faithfulness_check(scorer, tokenized, explanation, faithfulness_k, trials, seed)
    return explanation
