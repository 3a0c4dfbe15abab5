"""TF-IDF + logistic regression (scikit-learn): the classical baseline, on the same splits and metrics as the models.

Word uni- and bigrams, sublinear term frequency; the inverse regularisation C is chosen on the validation split by
the run's metric. The fitted pipeline is saved as `model.joblib` (scikit-learn's persistence) with metrics.json and
the prediction files, as a model run writes them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastformer.tasks.common import write_jsonl

C_GRID = (0.25, 1.0, 4.0, 16.0)


def train_tfidf(cfg, splits: dict[str, list], labels, out: Path, data_report: dict[str, Any] | None = None):
    """Fit on splits["train"], pick C on splits["validation"], evaluate every split; write model.joblib and the
    prediction files into `out` (the run's staging folder). Returns the metrics; `data_report` (what the readers
    found) is kept in them as "data"."""
    import joblib
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from fastformer.metrics.classification import classification_metrics

    encode = [labels.encode(e) for e in splits["train"]]
    texts = [e.text for e in splits["train"]]
    validation_texts = [e.text for e in splits["validation"]]
    validation_labels = [labels.encode(e) for e in splits["validation"]]
    start = time.perf_counter()
    best = None
    for c in C_GRID:
        pipeline = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2, max_features=500_000),
            LogisticRegression(C=c, max_iter=2000),
        )
        pipeline.fit(texts, encode)
        predicted = pipeline.predict(validation_texts).tolist()
        score = classification_metrics(validation_labels, predicted, labels.labels)[cfg.metric]
        if best is None or score > best[0]:
            best = (score, c, pipeline)
    seconds = time.perf_counter() - start
    _, c, pipeline = best
    metrics: dict[str, Any] = dict(
        architecture="tfidf",
        train=dict(examples=len(texts), seconds=round(seconds, 2), c_grid=list(C_GRID), chosen_c=c),
    )
    if data_report:
        metrics["data"] = data_report
    for name in ("validation", "test"):
        if name in splits:
            metrics[name], rows = score_examples(pipeline, labels.labels, splits[name])
            write_jsonl(out / f"predictions_{name}.jsonl", rows)
    joblib.dump(dict(pipeline=pipeline, labels=labels.labels), out / "model.joblib")
    return metrics


def load_tfidf(model_dir: str | Path):
    """(pipeline, label names) of a TF-IDF run folder."""
    import joblib

    saved = joblib.load(Path(model_dir) / "model.joblib")
    return saved["pipeline"], list(saved["labels"])


def score_examples(pipeline, names: list[str], examples: list) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics and per-example predictions (as the models' prediction files) of a fitted pipeline."""
    from fastformer.data.text_classification import LabelMap
    from fastformer.metrics.classification import classification_metrics

    labels = LabelMap(names)
    probs = pipeline.predict_proba([e.text for e in examples])
    predicted = probs.argmax(-1).tolist()
    metrics = classification_metrics([labels.encode(e) for e in examples], predicted, names)
    metrics["examples"] = len(examples)
    rows = [
        dict(source=e.source, label=e.label, predicted=names[p], probability=round(float(row[p]), 6))
        for e, p, row in zip(examples, predicted, probs, strict=True)
    ]
    return metrics, rows


def evaluate_tfidf(model_dir: str | Path, examples: list) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics and per-example predictions of a TF-IDF run folder on labelled examples."""
    return score_examples(*load_tfidf(model_dir), examples)


def predict_tfidf(model_dir: str | Path, texts: list[str]) -> list[dict[str, Any]]:
    """Label and class probabilities of each text, as `classification.predict_texts`."""
    pipeline, names = load_tfidf(model_dir)
    probs = pipeline.predict_proba(texts) if texts else []
    return [
        dict(
            text=t[:80],
            label=names[int(p.argmax())],
            probabilities={n: round(float(p[j]), 4) for j, n in enumerate(names)},
        )
        for t, p in zip(texts, probs, strict=True)
    ]
