"""A generated long-document classification task that needs no download: the built-in default of `fastformer train`.

Each document is a few hundred filler words; K classes each own a few evidence words scattered through it. The
true class's evidence appears EVIDENCE_COUNT times, every other class's fewer times, at random positions, so the
label can only be read by counting evidence spread over the whole text, not from any one window.
"""

from __future__ import annotations

import random

from fastformer.data.text_classification import Example

NUM_CLASSES = 4
EVIDENCE_WORDS_PER_CLASS = 3
EVIDENCE_COUNT = 5
FILLER_VOCABULARY = 400


def evidence_words(label: int) -> list[str]:
    return [f"mark{label}x{j}" for j in range(EVIDENCE_WORDS_PER_CLASS)]


_FILLER_WORDS = [f"w{i}" for i in range(FILLER_VOCABULARY)]


def _filler(rng: random.Random, length: int) -> list[str]:
    """`length` filler words, each `rng.randrange(FILLER_VOCABULARY)`: the same draws as that call (CPython's
    rejection sampling of getrandbits, which randrange(n) is), without its two Python calls per word, which were
    most of the time of every built-in run (820k of them for the default 2,600 documents)."""
    bits, getrandbits, words = FILLER_VOCABULARY.bit_length(), rng.getrandbits, []
    for _ in range(length):
        r = getrandbits(bits)
        while r >= FILLER_VOCABULARY:
            r = getrandbits(bits)
        words.append(_FILLER_WORDS[r])
    return words


def generate(count: int, seed: int, min_words: int = 200, max_words: int = 400) -> list[Example]:
    """`count` labelled documents, reproducible from `seed`."""
    rng = random.Random(seed)
    examples = []
    for i in range(count):
        label = rng.randrange(NUM_CLASSES)
        words = _filler(rng, rng.randint(min_words, max_words))
        for cls in range(NUM_CLASSES):
            times = EVIDENCE_COUNT if cls == label else rng.randrange(EVIDENCE_COUNT)
            for _ in range(times):
                words.insert(rng.randrange(len(words) + 1), rng.choice(evidence_words(cls)))
        examples.append(Example(" ".join(words), str(label), f"generated(seed={seed}):{i + 1}"))
    return examples
