"""TF-IDF + logistic regression (scikit-learn): the classical baseline, on the same splits and metrics as the models.

Word uni- and bigrams, sublinear term frequency; the inverse regularisation C is chosen on the validation split by
the run's metric. The fitted pipeline is saved as plain data, never as a pickle (loading a pickle runs code):
`tfidf.json` (the vectorizer's settings, its vocabulary in index order, the label names) and `tfidf.safetensors`
(the idf vector and the logistic regression's coefficients and intercepts), from which `load_tfidf` rebuilds the
same pipeline (same probabilities, tested). With metrics.json and
the prediction files, as a model run writes them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from fastformer.engine.outputs import write_jsonl

C_GRID = (0.25, 1.0, 4.0, 16.0)


def train_tfidf(cfg, splits: dict[str, list], labels, out: Path, data_report: dict[str, Any] | None = None):
    """Fit on splits["train"], pick C on splits["validation"], evaluate every split; write the model (plain data)
    and the prediction files into `out` (the run's staging folder). Returns the metrics; `data_report` (what the readers
    found) is kept in them as "data"."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from fastformer.metrics.classification import classification_metrics

    encode = [labels.encode(e) for e in splits["train"]]
    texts = [e.text for e in splits["train"]]
    validation_texts = [e.text for e in splits["validation"]]
    validation_labels = [labels.encode(e) for e in splits["validation"]]
    start = time.perf_counter()
    # the vectorizer does not depend on C: fitted once, the regression once per C
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2, max_features=500_000)
    x, x_validation = vectorizer.fit_transform(texts), vectorizer.transform(validation_texts)
    best = None
    for c in C_GRID:
        regression = LogisticRegression(C=c, max_iter=2000).fit(x, encode)
        predicted = regression.predict(x_validation).tolist()
        score = classification_metrics(validation_labels, predicted, labels.labels)[cfg.metric]
        if best is None or score > best[0]:
            best = (score, c, regression)
    seconds = time.perf_counter() - start
    _, c, regression = best
    pipeline = make_pipeline(vectorizer, regression)
    metrics: dict[str, Any] = dict(
        architecture="tfidf",
        train=dict(examples=len(texts), seconds=round(seconds, 2), c_grid=list(C_GRID), chosen_c=c),
    )
    score_splits(pipeline, labels.labels, splits, out, metrics, data_report)
    save_tfidf(pipeline, labels.labels, out)
    return metrics


MODEL_FILES = ("tfidf.json", "tfidf.safetensors")
VECTORIZER_SETTINGS = (
    "lowercase",
    "ngram_range",
    "sublinear_tf",
    "min_df",
    "max_features",
    "token_pattern",
    "norm",
    "use_idf",
    "smooth_idf",
    "analyzer",
    "strip_accents",
)


def save_tfidf(pipeline, label_names: list[str], out: Path) -> None:
    """The fitted pipeline as plain data: tfidf.json and tfidf.safetensors (see the module docstring)."""
    from safetensors.numpy import save_file

    vectorizer, classifier = pipeline.steps[0][1], pipeline.steps[1][1]
    settings = {k: v for k, v in vectorizer.get_params().items() if k in VECTORIZER_SETTINGS}
    terms = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
    classes = [int(c) for c in classifier.classes_]
    saved = dict(vectorizer=settings, classes=classes, labels=label_names, vocabulary=terms)
    (out / "tfidf.json").write_text(json.dumps(saved))
    arrays = dict(idf=vectorizer.idf_, coef=classifier.coef_, intercept=classifier.intercept_)
    # C order: scikit-learn's coefficients may be Fortran-ordered, and safetensors writes the raw buffer as C order
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(out / "tfidf.safetensors"))


# what each saved vectorizer setting may be (what save_tfidf writes); anything else in a tfidf.json is refused
SETTING_VALUES = {
    "lowercase": lambda v: isinstance(v, bool),
    "ngram_range": lambda v: (
        isinstance(v, list) and len(v) == 2 and all(type(n) is int for n in v) and 1 <= v[0] <= v[1] <= 5
    ),
    "sublinear_tf": lambda v: isinstance(v, bool),
    "min_df": lambda v: (type(v) is int and v >= 1) or (type(v) is float and 0.0 <= v <= 1.0),
    "max_features": lambda v: v is None or (type(v) is int and v >= 1),
    "token_pattern": lambda v: v == r"(?u)\b\w\w+\b",  # scikit-learn's default: no regular expression from a file
    "norm": lambda v: v in ("l1", "l2", None),
    "use_idf": lambda v: isinstance(v, bool),
    "smooth_idf": lambda v: isinstance(v, bool),
    "analyzer": lambda v: v in ("word", "char", "char_wb"),
    "strip_accents": lambda v: v in ("ascii", "unicode", None),
}


def checked_settings(path: Path, saved: dict, arrays: dict) -> dict[str, Any]:
    """The vectorizer settings of a tfidf.json, each checked against what save_tfidf writes, and the arrays' shapes
    against its vocabulary and classes: a crafted or damaged file is one line naming the field, never handed to
    scikit-learn as it is."""
    try:
        settings, vocabulary, classes = dict(saved["vectorizer"]), saved["vocabulary"], saved["classes"]
        saved["labels"]
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path}: damaged, lacks {error}") from None
    for key, value in settings.items():
        allowed = SETTING_VALUES.get(key)
        if allowed is None or not allowed(value):
            raise ValueError(f"{path}: field vectorizer.{key}={value!r} is not a setting this library saves")
    if not isinstance(vocabulary, list) or not all(isinstance(t, str) for t in vocabulary):
        raise ValueError(f"{path}: field vocabulary must be a list of strings")
    rows = 1 if len(classes) == 2 else len(classes)
    expected = dict(idf=(len(vocabulary),), coef=(rows, len(vocabulary)), intercept=(rows,))
    for name, shape in expected.items():
        if name not in arrays or tuple(arrays[name].shape) != shape:
            found = tuple(arrays[name].shape) if name in arrays else "missing"
            raise ValueError(
                f"{path.with_suffix('.safetensors')}: {name} is {found}, expected {shape} for the "
                f"{len(vocabulary)} terms and {len(classes)} classes of tfidf.json"
            )
    if "ngram_range" in settings:
        settings["ngram_range"] = tuple(settings["ngram_range"])
    return settings


def load_tfidf(model_dir: str | Path):
    """(pipeline, label names) of a TF-IDF run folder, rebuilt from plain data. A folder of an earlier version holds a
    pickle (model.joblib): refused, never unpickled."""
    from safetensors.numpy import load_file
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    folder = Path(model_dir)
    if not (folder / "tfidf.json").is_file():
        if (folder / "model.joblib").is_file():
            raise ValueError(
                f"{folder}: a TF-IDF model saved as a pickle by an earlier version; pickles are not "
                "loaded (they can run code): train it again"
            )
        raise ValueError(f"{folder}: no tfidf.json")
    saved = json.loads((folder / "tfidf.json").read_text())
    arrays = load_file(str(folder / "tfidf.safetensors"))
    settings = checked_settings(folder / "tfidf.json", saved, arrays)
    vectorizer = TfidfVectorizer(**settings, vocabulary=saved["vocabulary"])
    vectorizer.idf_ = arrays["idf"]
    classifier = LogisticRegression()
    classifier.coef_, classifier.intercept_ = arrays["coef"], arrays["intercept"]
    classifier.classes_ = np.array(saved["classes"])
    return make_pipeline(vectorizer, classifier), list(saved["labels"])


def score_examples(pipeline, names: list[str], examples: list) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics and per-example predictions (as the models' prediction files) of a fitted pipeline."""
    from fastformer.data.text_classification import LabelMap
    from fastformer.metrics.classification import classification_metrics, prediction_row

    labels = LabelMap(names)
    probs = pipeline.predict_proba([e.text for e in examples])
    predicted = probs.argmax(-1).tolist()
    metrics = classification_metrics([labels.encode(e) for e in examples], predicted, names)
    metrics["examples"] = len(examples)
    rows = [prediction_row(e, row, names) for e, row in zip(examples, probs, strict=True)]
    return metrics, rows


def score_splits(pipeline, names: list[str], splits: dict, out: Path, metrics: dict, data_report: dict | None) -> None:
    """A baseline's run: its data report and each held-out split's metrics into `metrics`, the splits' prediction
    files into `out` (predictions_validation.jsonl, predictions_test.jsonl), as the models' runs write them."""
    if data_report:
        metrics["data"] = data_report
    for name in ("validation", "test"):
        if name in splits:
            metrics[name], rows = score_examples(pipeline, names, splits[name])
            write_jsonl(out / f"predictions_{name}.jsonl", rows)


def evaluate_tfidf(model_dir: str | Path, examples: list) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics and per-example predictions of a TF-IDF run folder on labelled examples."""
    return score_examples(*load_tfidf(model_dir), examples)


def tfidf_classifier(model_dir: str | Path):
    """A TF-IDF folder loaded once: a function from texts to label and class probabilities (as `Classifier`)."""
    pipeline, names = load_tfidf(model_dir)

    def classify(texts: list[str]) -> list[dict[str, Any]]:
        probs = pipeline.predict_proba(texts) if texts else []
        from fastformer.metrics.classification import label_record

        return [label_record(t, p, names) for t, p in zip(texts, probs, strict=True)]

    return classify


# the interface every classification baseline has (classification.BASELINES)
train = train_tfidf
evaluate = evaluate_tfidf
classifier = tfidf_classifier
