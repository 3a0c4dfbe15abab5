"""A word-level tokenizer as the paper's inputs: lower-cased words and punctuation split as NLTK's `word_tokenize`
splits them, with a vocabulary of training words, saved as a Hugging Face tokenizer (`AutoTokenizer.from_pretrained`
loads it; no NLTK at run time).

The split is one regular expression run by the `tokenizers` library (so it is saved in tokenizer.json and fast),
written to agree with NLTK's Treebank rules on what matters for word vectors: clitics (`don't` -> `do n't`, `it's` ->
`it 's`, `can't` -> `ca n't`), punctuation as tokens, numbers kept whole (`1,000.50`, `3.5`, `12/25/2020`),
abbreviations with inner periods kept (`e.g.`, `u.s.a.`), hyphenated words and inner apostrophes kept (`well-known`,
`o'clock`). Where it departs from NLTK, on purpose: a URL stays one token (NLTK breaks it at `:` and `?`; neither form
is in a vocabulary of words), double quotes stay `"` (NLTK rewrites them to `` and ''), `gonna` stays one word (NLTK:
`gon na`), and every sentence-final period is split off (NLTK's sentence splitter needs the punkt model).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from fastformer.data.tokenizer import SPECIAL_TOKENS, wrap_tokenizer  # the same special tokens and ids as WordPiece

_CLITIC = r"(?:s|m|d|ll|re|ve)\b"
WORD_PATTERN = "|".join(
    [
        r"https?://[^\s<>\"]*[^\s<>\".,;:!?)'\]]",  # a URL, without trailing punctuation
        r"www\.[^\s<>\"]*[^\s<>\".,;:!?)'\]]",
        r"(?:[^\W\d_]\.){2,}",  # e.g. u.s.a.
        r"\d+(?:[.,:/]\d+)*\w*",  # 1,000.50  12/25/2020  10:30am  2nd
        r"\w+(?:\.\w+)+",  # x.org (a period inside a word stays, as in NLTK)
        r"\w+(?=n't\b)",  # do|n't, ca|n't
        r"n't\b",
        r"'" + _CLITIC,  # 's 'm 'd 'll 're 've
        r"\w+(?:-\w+|'(?!" + _CLITIC + r")\w+)*",  # words, well-known, o'clock, rock'n'roll
        r"\.\.\.|--|``|''",
        r"[^\w\s]",  # any other symbol, one at a time
    ]
)


def word_pre_tokenizer():
    """The `tokenizers` normalizer and pre-tokenizer of the word-level split (lower case, curly quotes straightened)."""
    from tokenizers import Regex, normalizers, pre_tokenizers

    normalizer = normalizers.Sequence(
        [
            normalizers.NFKC(),
            normalizers.Replace("\u2019", "'"),  # curly apostrophe, as in "don’t"
            normalizers.Replace("\u2018", "'"),
            normalizers.Lowercase(),
        ]
    )
    # invert=True: the pattern matches the tokens; everything between them (white space) is dropped
    pre_tokenizer = pre_tokenizers.Split(Regex(WORD_PATTERN), behavior="removed", invert=True)
    return normalizer, pre_tokenizer


def word_splitter():
    """A function text -> its words under the word-level split (build it once, call it per text)."""
    normalizer, pre_tokenizer = word_pre_tokenizer()
    return lambda text: [word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]


def split_words(text: str) -> list[str]:
    """The word-level split of one text (what the tokenizer's vocabulary is made of)."""
    return word_splitter()(text)


def count_words(texts: Iterable[str]) -> Counter:
    """How often each word of the split occurs in `texts`."""
    split = word_splitter()
    counts: Counter = Counter()
    for text in texts:
        counts.update(split(text))
    return counts


def choose_vocabulary(
    counts: Counter, vocab_size: int, min_count: int = 2, known: Iterable[str] | None = None
) -> tuple[list[str], dict[str, Any]]:
    """(words, report): training words seen at least `min_count` times, plus rarer ones that `known` (the word
    vectors' words) holds, the most frequent first, at most `vocab_size` entries including the special tokens.

    The report counts what the vocabulary covers: `token_coverage` is the share of training tokens that get a
    vocabulary id (not [UNK]).
    """
    known = set(known or ())
    room = vocab_size - len(SPECIAL_TOKENS)
    if room < 1:
        raise ValueError(f"vocab_size {vocab_size} leaves no room beside the {len(SPECIAL_TOKENS)} special tokens")
    eligible = [w for w, c in counts.items() if (c >= min_count or w in known) and w not in SPECIAL_TOKENS]
    eligible.sort(key=lambda w: (-counts[w], w))  # frequency, then the word: the same vocabulary every time
    words = eligible[:room]
    total = sum(counts.values())
    report = dict(
        training_words=len(counts),
        training_tokens=total,
        vocabulary=len(words) + len(SPECIAL_TOKENS),
        min_count=min_count,
        dropped_by_cap=len(eligible) - len(words),
        token_coverage=round(sum(counts[w] for w in words) / total, 4) if total else 0.0,
    )
    return words, report


def build_word_tokenizer(words: list[str]):
    """A `PreTrainedTokenizerFast` (word level) over SPECIAL_TOKENS + `words`."""
    from tokenizers import Tokenizer, models

    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + list(words))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer, tokenizer.pre_tokenizer = word_pre_tokenizer()
    return wrap_tokenizer(tokenizer)


def train_word_tokenizer(
    texts: Iterable[str], vocab_size: int = 30000, min_count: int = 2, known: Iterable[str] | None = None
):
    """(tokenizer, report): a word-level tokenizer whose vocabulary comes from `texts` (see `choose_vocabulary`)."""
    words, report = choose_vocabulary(count_words(texts), vocab_size, min_count, known)
    return build_word_tokenizer(words), report
