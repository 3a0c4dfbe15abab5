"""Words of a text as a tokenizer splits it, and each word's share of token weights.

A person reads words, not word pieces: "unbelievable" may be three WordPiece tokens, and a weight per piece is noise
to the eye. The words are the tokenizer's own pre-tokenizer words (a fast tokenizer's `word_ids`), so they are the
units the model was given, with their character spans in the original text; a word's weight is the sum of its
pieces' weights (the weights are shares of a pooled vector, so shares add).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Word:
    """One word of the input: its text, its character span [start, end), and whether the model read it (a word
    after the tokenizer's truncation point is shown but was not read)."""

    text: str
    start: int
    end: int
    read: bool


@dataclass(frozen=True)
class TokenizedText:
    """A text split for the model: every word, the token ids the model reads (truncated to `max_length`), and for
    each of those tokens the index of its word (-1 for a token outside every word, e.g. a special token)."""

    text: str  # cut after the last word kept (UNREAD_WORDS_SHOWN past what the model reads)
    words: list[Word]
    input_ids: list[int]
    token_words: list[int]
    total_tokens: int  # of the whole text, read or not
    words_not_shown: int = 0  # words after the cut

    @property
    def read_words(self) -> int:
        return sum(w.read for w in self.words)

    def word_weights(self, token_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(..., tokens) weights -> ((..., read words) summed per word, (...,) the weight left on tokens outside
        every word). The read words come first in `words`, so the result lines up with them."""
        token_weights = np.asarray(token_weights, dtype=np.float64)
        index = np.asarray(self.token_words, dtype=np.int64)
        inside = index >= 0
        membership = np.zeros((len(index), self.read_words))  # (tokens, read words): 1 where a token is in a word
        membership[np.flatnonzero(inside), index[inside]] = 1.0
        out = token_weights @ membership
        return out, token_weights[..., ~inside].sum(-1)

    def without_words(self, drop: set[int]) -> str:
        """The text with the words at these indices cut out (the characters between words stay)."""
        pieces, cursor = [], 0
        for i in sorted(drop):
            word = self.words[i]
            pieces.append(self.text[cursor : word.start])
            cursor = word.end
        pieces.append(self.text[cursor:])
        return "".join(pieces)


UNREAD_WORDS_SHOWN = 200  # words past the model's input kept in an explanation (struck through on the page)


def split_words(tokenizer, text: str, max_length: int | None) -> TokenizedText:
    """Split `text` as the tasks do (no special tokens; the first `max_length` tokens are read) and group the
    tokens into the tokenizer's words. Needs a fast tokenizer (every tokenizer `fastformer train` saves is one)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("explain needs a fast tokenizer (its word_ids and offsets): load it with use_fast=True")
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
    ids, offsets, word_ids = encoding["input_ids"], encoding["offset_mapping"], encoding.word_ids()
    read = len(ids) if max_length is None else min(len(ids), max_length)
    spans: dict[int, list[int]] = {}  # word id -> [start, end, first token]
    for position, (word, (start, end)) in enumerate(zip(word_ids, offsets, strict=True)):
        if word is None:
            continue
        span = spans.setdefault(word, [start, end, position])
        span[0], span[1] = min(span[0], start), max(span[1], end)
    ordered = sorted(spans.items(), key=lambda item: item[1][2])
    number = {word: i for i, (word, _) in enumerate(ordered)}
    words = [Word(text[s:e], s, e, first < read) for _, (s, e, first) in ordered]
    token_words = [-1 if w is None else number[w] for w in word_ids[:read]]
    # a long text (a 1 MB file line) is cut UNREAD_WORDS_SHOWN words past what the model reads: the model's input is
    # unchanged (its tokens all come before the cut), and the page, its data and every faithfulness re-scoring stay
    # the size of what was read (they used to carry the whole text: 97 s, 1.95 GB and a 47 MB page for 1 MB)
    keep = sum(w.read for w in words) + UNREAD_WORDS_SHOWN
    not_shown = max(0, len(words) - keep)
    if not_shown:
        text, words = text[: words[keep - 1].end], words[:keep]
    return TokenizedText(text, words, list(ids[:read]), token_words, len(ids), not_shown)
