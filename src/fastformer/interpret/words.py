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
    """A text split for the model: every word shown, the token ids the model reads (its first `max_length`, its head and
    tail, or its last), and for each of those tokens the index of its word among the read words (-1 for a token outside
    every word, e.g. a special token). Read words may not be contiguous: a head+tail reading skips the middle."""

    text: str  # cut UNREAD_WORDS_SHOWN unread words past what the model reads (both sides of a skipped middle)
    words: list[Word]
    input_ids: list[int]
    token_words: list[int]  # per read token: its word's place among the read words (`read_indices`), or -1
    total_tokens: int  # of the whole text, read or not
    words_not_shown: int = 0  # words cut out of the text (at its end, its start, or in a skipped middle)
    not_shown_after: int = -1  # the index of the word the cut words followed (-1: none, or the text's first)

    @property
    def read_words(self) -> int:
        return sum(w.read for w in self.words)

    @property
    def read_indices(self) -> list[int]:
        """The indices in `words` of the words the model read, in order (what weight arrays are indexed by)."""
        return [i for i, w in enumerate(self.words) if w.read]

    def word_weights(self, token_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(..., tokens) weights -> ((..., read words) summed per word, in the order of `read_indices`; (...,) the
        weight left on tokens outside every word)."""
        token_weights = np.asarray(token_weights, dtype=np.float64)
        index = np.asarray(self.token_words, dtype=np.int64)
        inside = index >= 0
        membership = np.zeros((len(index), self.read_words))  # (tokens, read words): 1 where a token is in a word
        membership[np.flatnonzero(inside), index[inside]] = 1.0
        out = token_weights @ membership
        return out, token_weights[..., ~inside].sum(-1)

    def without_words(self, drop: set[int]) -> str:
        """The text with the words at these indices (of `words`) cut out (the characters between words stay)."""
        pieces, cursor = [], 0
        for i in sorted(drop):
            word = self.words[i]
            pieces.append(self.text[cursor : word.start])
            cursor = word.end
        pieces.append(self.text[cursor:])
        return "".join(pieces)


UNREAD_WORDS_SHOWN = 200  # words past the model's input kept in an explanation (struck through on the page)


def read_positions(total: int, max_length: int | None, head: int | None = None) -> list[int]:
    """The positions of a text's `total` tokens a model reads: all of them when they fit in `max_length`, else the
    first `max_length` (`head` None), or the first `head` and the last `max_length - head` (head+tail truncation,
    as `encode_texts` cuts a long review; `head` 0: the last `max_length`, as a language model reads a long text)."""
    if max_length is None or total <= max_length:
        return list(range(total))
    if head is None:
        return list(range(max_length))
    head = max(0, min(head, max_length))
    return list(range(head)) + list(range(total - (max_length - head), total))


def split_words(tokenizer, text: str, max_length: int | None, head: int | None = None) -> TokenizedText:
    """Split `text` as the tasks do (no special tokens; the tokens `read_positions` keeps are read) and group the
    tokens into the tokenizer's words. Needs a fast tokenizer (every tokenizer `fastformer train` saves is one)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("explain needs a fast tokenizer (its word_ids and offsets): load it with use_fast=True")
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
    ids, offsets, word_ids = encoding["input_ids"], encoding["offset_mapping"], encoding.word_ids()
    positions = read_positions(len(ids), max_length, head)
    read_tokens = set(positions)
    spans: dict[int, list] = {}  # word id -> [start, end, first token, read]
    for position, (word, (start, end)) in enumerate(zip(word_ids, offsets, strict=True)):
        if word is None:
            continue
        span = spans.setdefault(word, [start, end, position, False])
        span[0], span[1] = min(span[0], start), max(span[1], end)
        span[3] = span[3] or position in read_tokens  # a word cut by the truncation is read by its read pieces
    ordered = sorted(spans.items(), key=lambda item: item[1][2])
    words = [Word(text[s:e], s, e, read) for _, (s, e, _, read) in ordered]
    number = {word: i for i, (word, _) in enumerate(ordered)}
    rank = {index: r for r, index in enumerate(i for i, w in enumerate(words) if w.read)}
    token_words = [-1 if word_ids[p] is None else rank[number[word_ids[p]]] for p in positions]
    # a long text (a 1 MB file line) keeps UNREAD_WORDS_SHOWN unread words past each end of what the model reads and
    # loses the rest: the model's input is unchanged, and a word cut out by the faithfulness check still has unread
    # words to pull into its place; the page, its data and every re-scoring stay the size of what was read (they used
    # to carry the whole text: 97 s, 1.95 GB and a 47 MB page for 1 MB)
    first_unread = next((i for i, w in enumerate(words) if not w.read), len(words))
    tail = next((i for i in range(first_unread, len(words)) if words[i].read), len(words))  # first read after it
    # words [keep_to, keep_from) are cut out (a text read by its tail alone keeps no unread words before the rest)
    keep_to = min(first_unread + UNREAD_WORDS_SHOWN, tail) if first_unread else 0
    keep_from = max(tail - UNREAD_WORDS_SHOWN, keep_to) if tail < len(words) else len(words)
    not_shown = keep_from - keep_to
    if not not_shown:
        return TokenizedText(text, words, [ids[p] for p in positions], token_words, len(ids))
    # the characters between the last word kept and the word after the cut stay
    cut_start = words[keep_to - 1].end if keep_to else 0
    cut_end = words[keep_from - 1].end if keep_from < len(words) else len(text)
    shift = cut_end - cut_start
    kept = words[:keep_to] + [Word(w.text, w.start - shift, w.end - shift, w.read) for w in words[keep_from:]]
    text = text[:cut_start] + text[cut_end:]
    return TokenizedText(text, kept, [ids[p] for p in positions], token_words, len(ids), not_shown, keep_to - 1)
