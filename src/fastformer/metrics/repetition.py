"""Is a generated text degenerate? ROUGE alone cannot say: a string of frequent words ("the the of of ...") scores
ROUGE-1 near 20 on PubMed. These count what such output lacks, per summary, then average over the summaries:

- distinct-n: distinct n-grams / all n-grams of the summary (1.0 = no n-gram twice; "the the the" -> 1/3 for n = 1);
- repeated-n rate: the share of the summary's n-grams that already occurred earlier in it (1 - distinct-n when n-grams
  are counted with their repeats; reported for n = 3, the usual degeneration check);
- adjacent-repeat rate: the share of words that repeat the word just before ("important important important": 2 of
  3). Beam search with no repeated trigrams (our default) keeps the trigram rate low by construction, yet lets a word
  stutter twice in a row; this count sees it (fluent text: ~0.001, the SumPubMed abstracts);
- words: the mean summary length in words.

Words are rouge-score's tokens (lower-cased alphanumeric runs), so the counts agree with what ROUGE compared.
"""

from __future__ import annotations

from collections.abc import Sequence


def _tokens(text: str) -> list[str]:
    from rouge_score import tokenize

    return tokenize.tokenize(text, None)


def _ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def repetition(texts: Sequence[str]) -> dict[str, float]:
    """{"distinct_1", "distinct_2", "repeated_3gram_rate", "adjacent_repeat_rate", "words"} averaged over the texts
    (a text too short to have an n-gram counts as distinct and unrepeated for that n). Empty input: zeros."""
    totals = dict(distinct_1=0.0, distinct_2=0.0, repeated_3gram_rate=0.0, adjacent_repeat_rate=0.0, words=0.0)
    if not texts:
        return totals
    for text in texts:
        tokens = _tokens(text)
        totals["words"] += len(tokens)
        grams = {n: _ngrams(tokens, n) for n in (1, 2, 3)}
        for n in (1, 2):
            totals[f"distinct_{n}"] += len(set(grams[n])) / len(grams[n]) if grams[n] else 1.0
        trigrams = grams[3]
        totals["repeated_3gram_rate"] += 1 - len(set(trigrams)) / len(trigrams) if trigrams else 0.0
        totals["adjacent_repeat_rate"] += sum(a == b for a, b in grams[2]) / len(tokens) if grams[2] else 0.0
    return {k: round(v / len(texts), 4) for k, v in totals.items()}
