"""ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum F1 with Google's `rouge-score` package, with bootstrap confidence
intervals (its BootstrapAggregator).

Settings: Porter stemming on; rouge-score's own tokenization (lower-case, alphanumeric tokens); ROUGE-Lsum reads
summaries as one sentence per line (references keep their sentence lines; predictions are split into sentences
first, `fastformer.data.summarization.split_sentences`). Scores are in percent, as papers report them.
"""

from __future__ import annotations

from collections.abc import Sequence

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def rouge(
    predictions: Sequence[str],
    references: Sequence[str],
    *,
    bootstrap_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """{rouge type: {"f1", "low", "high", "precision", "recall"}}: the mean F1 over the pairs and the bootstrap
    interval of that mean (resampling the pairs `bootstrap_samples` times, seeded)."""
    import numpy as np
    from rouge_score import rouge_scorer, scoring

    from fastformer.data.summarization import split_sentences

    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if not predictions:
        raise ValueError("no predictions to score")
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    aggregator = scoring.BootstrapAggregator(confidence_interval=confidence, n_samples=bootstrap_samples)
    for prediction, reference in zip(predictions, references, strict=True):
        prediction = "\n".join(split_sentences(prediction)) if "\n" not in prediction else prediction
        aggregator.add_scores(scorer.score(reference, prediction))
    state = np.random.get_state()  # the aggregator samples with numpy's global generator: seed it, then restore it
    np.random.seed(seed)
    try:
        result = aggregator.aggregate()
    finally:
        np.random.set_state(state)
    return {
        name: dict(
            f1=round(100 * float(result[name].mid.fmeasure), 3),
            low=round(100 * float(result[name].low.fmeasure), 3),
            high=round(100 * float(result[name].high.fmeasure), 3),
            precision=round(100 * float(result[name].mid.precision), 3),
            recall=round(100 * float(result[name].mid.recall), 3),
        )
        for name in ROUGE_TYPES
    }
