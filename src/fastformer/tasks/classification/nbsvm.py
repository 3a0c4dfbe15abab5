"""NBSVM (Wang & Manning 2012, "Baselines and Bigrams"), the logistic-regression form: the strongest simple
bag-of-words baseline on sentiment (published at 91.2-91.8 on IMDB), beside TF-IDF + LR.

Features: binarised word uni-, bi- and trigram counts x in {0, 1}^V. For a class c against the rest, the log-count
ratio r_c = log((p / |p|_1) / (q / |q|_1)) with p = alpha + sum of x over the texts of c and q = alpha + the same over
the others; the texts are represented as x * r_c and a logistic regression is fitted on them, C chosen on the
validation split by the run's metric. Two classes: one regression (the second class against the first); more: one
per class (one-vs-rest), probabilities the per-class sigmoids normalised to sum 1 (as scikit-learn's OneVsRest).

Since (x * r_c) . w_c = x . (r_c * w_c), the fitted model is a linear model on x with coefficients r_c * w_c: saved as
plain data (nbsvm.json: vectorizer settings, vocabulary, labels; nbsvm.safetensors: r, coefficients, intercepts),
never a pickle.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from fastformer.tasks.classification.tfidf import score_examples, score_splits

C_GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
ALPHA = 1.0  # the smoothing of the counts (Wang & Manning's alpha)
MODEL_FILES = ("nbsvm.json", "nbsvm.safetensors")
VECTORIZER = dict(ngram_range=(1, 3), binary=True, min_df=2, lowercase=True, token_pattern=r"(?u)\b\w+\b|[!?]")


def log_count_ratio(x, positive: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """r = log((p / |p|_1) / (q / |q|_1)), p = alpha + sum of the rows of x where `positive`, q the same elsewhere.
    x: (n, V) binary (sparse or dense); positive: (n,) bool -> (V,) float64."""
    p = alpha + np.asarray(x[positive].sum(0)).ravel()
    q = alpha + np.asarray(x[~positive].sum(0)).ravel()
    return np.log((p / p.sum()) / (q / q.sum()))


def scaled_features(x, r: np.ndarray):
    """x * r, row by row (the NB-scaled features the regression is fitted on)."""
    from scipy import sparse

    return sparse.csr_matrix(x).multiply(r[None, :]).tocsr()


class NBSVM:
    """The fitted model: vectorizer + per-classifier (r, w, b); `predict_proba(texts)` as a scikit-learn pipeline."""

    def __init__(self, vectorizer, ratios: np.ndarray, coef: np.ndarray, intercept: np.ndarray, num_classes: int):
        self.vectorizer, self.ratios, self.coef, self.intercept = vectorizer, ratios, coef, intercept
        self.num_classes = num_classes

    @classmethod
    def fit(cls, vectorizer, x, y: np.ndarray, num_classes: int, c: float) -> NBSVM:
        from sklearn.linear_model import LogisticRegression

        targets = [1] if num_classes == 2 else list(range(num_classes))
        ratios, coefs, intercepts = [], [], []
        for target in targets:
            positive = y == target
            r = log_count_ratio(x, positive)
            regression = LogisticRegression(C=c, max_iter=1000, solver="liblinear")
            regression.fit(scaled_features(x, r), positive.astype(int))
            ratios.append(r)
            coefs.append(regression.coef_[0] * r)  # (x * r) . w == x . (r * w)
            intercepts.append(regression.intercept_[0])
        return cls(vectorizer, np.stack(ratios), np.stack(coefs), np.array(intercepts), num_classes)

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.num_classes))
        return self.probabilities(self.vectorizer.transform(texts))

    def probabilities(self, x) -> np.ndarray:
        """x: (n, V) the vectorizer's counts -> (n, num_classes) class probabilities."""
        scores = 1.0 / (1.0 + np.exp(-(np.asarray(x @ self.coef.T) + self.intercept)))  # (n, classifiers)
        if self.num_classes == 2:
            return np.concatenate([1 - scores, scores], axis=1)
        return scores / scores.sum(1, keepdims=True)

    def save(self, label_names: list[str], out: Path) -> None:
        from safetensors.numpy import save_file

        terms = sorted(self.vectorizer.vocabulary_, key=self.vectorizer.vocabulary_.get)
        params = self.vectorizer.get_params()
        settings = {k: params[k] for k in ("ngram_range", "binary", "lowercase", "token_pattern", "min_df")}
        settings["ngram_range"] = list(settings["ngram_range"])
        (out / "nbsvm.json").write_text(json.dumps(dict(vectorizer=settings, labels=label_names, vocabulary=terms)))
        arrays = dict(ratios=self.ratios, coef=self.coef, intercept=self.intercept)
        save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(out / "nbsvm.safetensors"))

    @classmethod
    def load(cls, model_dir: str | Path) -> tuple[NBSVM, list[str]]:
        from safetensors.numpy import load_file
        from sklearn.feature_extraction.text import CountVectorizer

        folder = Path(model_dir)
        for name in MODEL_FILES:
            if not (folder / name).is_file():
                raise ValueError(f"{folder}: no {name}")
        saved = json.loads((folder / "nbsvm.json").read_text())
        settings = dict(saved["vectorizer"], ngram_range=tuple(saved["vectorizer"]["ngram_range"]))
        vectorizer = CountVectorizer(**settings, vocabulary=saved["vocabulary"])
        arrays = load_file(str(folder / "nbsvm.safetensors"))
        labels = list(saved["labels"])
        return cls(vectorizer, arrays["ratios"], arrays["coef"], arrays["intercept"], len(labels)), labels


def train_nbsvm(cfg, splits: dict[str, list], labels, out: Path, data_report: dict[str, Any] | None = None):
    """Fit on splits["train"], pick C on splits["validation"], evaluate every split; write the model (plain data) and
    the prediction files into `out`. Returns the metrics (as `train_tfidf`)."""
    from sklearn.feature_extraction.text import CountVectorizer

    from fastformer.metrics.classification import classification_metrics

    start = time.perf_counter()
    vectorizer = CountVectorizer(**VECTORIZER)
    x = vectorizer.fit_transform([e.text for e in splits["train"]])
    y = np.array([labels.encode(e) for e in splits["train"]])
    x_validation = vectorizer.transform([e.text for e in splits["validation"]])
    validation_labels = [labels.encode(e) for e in splits["validation"]]
    best = None
    for c in C_GRID:
        model = NBSVM.fit(vectorizer, x, y, len(labels), c)
        predicted = model.probabilities(x_validation).argmax(-1).tolist()
        score = classification_metrics(validation_labels, predicted, labels.labels)[cfg.metric]
        if best is None or score > best[0]:
            best = (score, c, model)
    _, c, model = best
    metrics: dict[str, Any] = dict(
        architecture="nbsvm",
        train=dict(
            examples=len(y),
            features=x.shape[1],
            seconds=round(time.perf_counter() - start, 2),
            c_grid=list(C_GRID),
            chosen_c=c,
            alpha=ALPHA,
        ),
    )
    score_splits(model, labels.labels, splits, out, metrics, data_report)
    model.save(labels.labels, out)
    return metrics


def evaluate_nbsvm(model_dir: str | Path, examples: list) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics and per-example predictions of an NBSVM run folder on labelled examples."""
    return score_examples(*NBSVM.load(model_dir), examples)


def nbsvm_classifier(model_dir: str | Path):
    """An NBSVM folder loaded once: a function from texts to label and class probabilities (as `Classifier`)."""
    from fastformer.metrics.classification import label_record

    model, names = NBSVM.load(model_dir)
    return lambda texts: [label_record(t, p, names) for t, p in zip(texts, model.predict_proba(texts), strict=True)]


# the interface every classification baseline has (classification.BASELINES)
train = train_nbsvm
evaluate = evaluate_nbsvm
classifier = nbsvm_classifier
