"""Classification metrics: accuracy, macro-F1 and the confusion matrix (scikit-learn)."""

from __future__ import annotations

from typing import Any


def classification_metrics(labels, predictions, label_names: list[str]) -> dict[str, Any]:
    """Accuracy, macro-F1 and the confusion matrix (rows: true label, columns: predicted), with scikit-learn."""
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

    ids = list(range(len(label_names)))
    return dict(
        accuracy=float(accuracy_score(labels, predictions)),
        macro_f1=float(f1_score(labels, predictions, labels=ids, average="macro", zero_division=0)),
        confusion_matrix=confusion_matrix(labels, predictions, labels=ids).tolist(),
        labels=label_names,
    )


def label_record(text: str, probabilities, label_names: list[str]) -> dict[str, Any]:
    """What `predict` writes for one text: its first 80 characters, the most probable label and every label's
    probability (rounded to 4 places); `probabilities` is one row (a tensor or an array) in label order."""
    return dict(
        text=text[:80],
        label=label_names[int(probabilities.argmax())],
        probabilities={name: round(float(probabilities[j]), 4) for j, name in enumerate(label_names)},
    )


def prediction_row(example, probabilities, label_names: list[str]) -> dict[str, Any]:
    """One line of a predictions_*.jsonl file: where the example came from, its label, the predicted label and that
    label's probability (6 places); `probabilities` is the example's row (a tensor or an array) in label order."""
    predicted = int(probabilities.argmax())
    return dict(
        source=example.source,
        label=example.label,
        predicted=label_names[predicted],
        probability=round(float(probabilities[predicted]), 6),
    )
