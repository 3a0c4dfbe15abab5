"""Text classification as one `Task` class: what the run reads (data.py), the model it builds, what it reports, and
the commands on a trained folder (evaluate, predict, explain, export). The run itself (folder, checkpoints, resume,
torchrun, the atomic save) is the skeleton's (engine/skeleton.py); the encoding, batched prediction and loading of
a trained folder are classifier.py's; the baselines tfidf.py's and nbsvm.py's.
"""

from __future__ import annotations

import importlib
import math
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from fastformer.data.text_classification import LabelMap, read_examples
from fastformer.engine.outputs import write_jsonl
from fastformer.engine.skeleton import Prepared
from fastformer.engine.task import Task
from fastformer.engine.verbs import TEXT_VERBS
from fastformer.metrics.classification import classification_metrics
from fastformer.tasks.classification.config import (
    ClassificationConfig,
    ClassificationEvaluation,
    ClassificationPrediction,
)
from fastformer.tasks.classification.data import load_splits, one_sided, relabel_binary

# --architecture values that are untrained baselines: name -> module with train / evaluate / classifier / MODEL_FILES
BASELINES = {"tfidf": "fastformer.tasks.classification.tfidf", "nbsvm": "fastformer.tasks.classification.nbsvm"}


def evaluation_schedule(per_epoch: int, examples: int, batch_size: int) -> dict[str, Any]:
    """TrainingArguments fields: evaluate and save at every epoch's end (per_epoch 1), or every ceil(steps per epoch /
    per_epoch) steps, so a run killed inside a long epoch (a full IMDB epoch of a MiniLM-size model on one core: ~3 h)
    resumes from a checkpoint near where it stopped."""
    if per_epoch <= 1:
        return dict(eval_strategy="epoch", save_strategy="epoch")
    every = max(1, math.ceil(math.ceil(examples / batch_size) / per_epoch))
    return dict(eval_strategy="steps", save_strategy="steps", eval_steps=every, save_steps=every)


def classifier_head_fields(labels: LabelMap) -> dict[str, Any]:
    """The classifier's own config fields (beside the encoder's)."""
    id2label = labels.id2label()
    return dict(num_labels=len(labels), id2label=id2label, label2id={v: k for k, v in id2label.items()})


def baseline_module(architecture: str):
    """The module of a baseline architecture (BASELINES)."""
    return importlib.import_module(BASELINES[architecture])


class ClassificationTask(Task):
    """Text classification: a Fastformer (or softmax / causal) classifier, or a TF-IDF / NBSVM baseline."""

    name = "classification"
    help = "text classification (default; with no --train, the built-in generated task)"
    config_class = ClassificationConfig
    verbs: ClassVar[dict[str, type | None]] = dict(
        TEXT_VERBS, evaluate=ClassificationEvaluation, predict=ClassificationPrediction
    )
    evaluation_file = "predictions.jsonl"
    model_class_name = "FastformerForSequenceClassification"

    def load_data(self, cfg: ClassificationConfig, report: dict[str, Any]):
        splits = load_splits(cfg, report)
        labels = LabelMap.from_examples(splits["train"])
        if len(labels) < 2:
            raise ValueError(
                f"the training data holds one class ({labels.labels[0]!r}): a classifier needs two or "
                "more (check --label-field)"
            )
        if not splits.get("validation"):
            raise ValueError(
                "the validation split is empty: give --validation, or more training examples to hold out from"
            )
        for name in ("validation", "test"):  # a label the training data lacks: an error now, not after training
            for example in splits.get(name, ()):
                labels.encode(example)
        data = dict(splits=splits, labels=labels)
        if cfg.teacher:  # task distillation: the teacher loads and fits, the unlabelled texts are read, before it too
            from fastformer.engine.inputs import make_tokenizer
            from fastformer.engine.teacher import check_hidden_teaching
            from fastformer.tasks.classification.distillation import load_teacher_classifier, unlabelled_examples

            tokenizer, _ = make_tokenizer(cfg, ())
            data["teacher"], data["teacher_inputs"] = load_teacher_classifier(
                cfg.teacher, labels.labels, tokenizer, cfg.max_length, cfg.truncation, report
            )
            check_hidden_teaching(cfg, data["teacher"].config, shortened=data["teacher_inputs"] is not None)
            data["unlabelled"] = unlabelled_examples(cfg, splits, report) if cfg.unlabelled else []
        return data

    def baseline(self, cfg: ClassificationConfig, data, out: Path, report: dict[str, Any]):
        return baseline_module(cfg.architecture).train(cfg, data["splits"], data["labels"], out, report)

    def tokenizer_texts(self, cfg: ClassificationConfig, data):
        return (e.text for e in data["splits"]["train"])

    def head_fields(self, cfg: ClassificationConfig, data, tokenizer=None) -> dict[str, Any]:
        return classifier_head_fields(data["labels"])

    def input_length(self, cfg: ClassificationConfig) -> int:
        return cfg.max_length

    def prepare(self, cfg: ClassificationConfig, data, tokenizer, model, out: Path) -> Prepared:
        import numpy as np
        from transformers import DataCollatorWithPadding

        from fastformer.engine.teacher import teaching_trainer
        from fastformer.tasks.classification.classifier import EncodedDataset
        from fastformer.tasks.classification.distillation import text_states

        splits, labels = data["splits"], data["labels"]
        texts = splits["train"] + data.get("unlabelled", [])
        train_set = EncodedDataset(texts, tokenizer, labels, cfg.max_length, cfg.truncation)
        eval_set = EncodedDataset(splits["validation"], tokenizer, labels, cfg.max_length, cfg.truncation)

        # transformers' own Trainer without --teacher
        trainer_class, teaching = teaching_trainer(
            cfg, data.get("teacher"), teacher_inputs=data.get("teacher_inputs"), text_states=text_states
        )

        def compute_metrics(prediction):
            logits, label_ids = prediction
            scores = classification_metrics(label_ids, np.argmax(logits, axis=-1), labels.labels)
            return {k: scores[k] for k in ("accuracy", "macro_f1")}

        return Prepared(
            train_dataset=train_set,
            eval_dataset=eval_set,
            data_collator=DataCollatorWithPadding(tokenizer),
            arguments=dict(
                train_sampling_strategy=cfg.sampling,
                **evaluation_schedule(cfg.evaluations_per_epoch, len(train_set), cfg.batch_size),
                metric_for_best_model=cfg.metric,
                greater_is_better=True,
            ),
            train_counts=dict(examples=len(train_set), unlabelled=len(data.get("unlabelled", []))),
            tokens_per_epoch=train_set.num_tokens(),
            plot={
                "validation loss": "eval_loss",
                "validation macro-F1": "eval_macro_f1",
                "validation accuracy": "eval_accuracy",
            },
            trainer_kwargs=dict(compute_metrics=compute_metrics, **teaching),
            trainer_class=trainer_class,
        )

    def evaluate_splits(self, cfg: ClassificationConfig, model, tokenizer, data, prepared: Prepared, out: Path):
        from fastformer.tasks.classification.classifier import bf16_scoring, evaluate_split

        metrics = {}
        for name in ("validation", "test"):
            if name in data["splits"]:
                with bf16_scoring(cfg.bf16):
                    split_metrics, rows = evaluate_split(
                        model, tokenizer, data["splits"][name], data["labels"], cfg.max_length, cfg.truncation
                    )
                metrics[name] = split_metrics
                write_jsonl(out / f"predictions_{name}.jsonl", rows)
        return metrics

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {n: {k: metrics[n][k] for k in ("accuracy", "macro_f1")} for n in ("validation", "test") if n in metrics}

    def describe(self, cfg: ClassificationConfig, data) -> dict[str, Any]:
        counts = Counter(e.label for e in data["splits"]["train"])
        shown = dict(counts.most_common(20))
        if len(counts) > 20:
            shown["..."] = f"{len(counts)} labels in all"
        return dict(examples={n: len(s) for n, s in data["splits"].items()}, training_labels=shown)

    @classmethod
    def older_folder_architecture(cls, folder: Path, architecture: str | None) -> str | None:
        if (folder / "tfidf.json").is_file() or (folder / "model.joblib").is_file():
            return "tfidf"
        return "nbsvm" if (folder / "nbsvm.json").is_file() else None

    # --- the commands on a trained folder ---
    def export_model(self, model_dir: str | Path, architecture: str | None):
        """The model `fastformer export` traces: the classifier (None for a bag-of-words folder, which has none)."""
        from fastformer.tasks.classification.classifier import load_model

        return None if architecture in BASELINES else load_model(model_dir)[0]

    def evaluate_folder(
        self, model_dir: str | Path, architecture: str | None, settings, output: Path
    ) -> dict[str, Any]:
        """Accuracy, macro-F1 and the confusion matrix of a trained folder (a model or a bag-of-words baseline) on a
        labelled file (`settings`: ClassificationEvaluation), read with the run's own columns and label mapping
        unless the settings name others; the predictions go to EVALUATION_FILE beside `output` (metrics.json)."""
        from fastformer.engine.folder import run_settings
        from fastformer.tasks.classification.classifier import Classifier

        run = run_settings(model_dir)
        text_field = settings.text_field if settings.text_field is not None else run.get("text_field")
        label_field = settings.label_field if settings.label_field is not None else run.get("label_field")
        threshold = settings.binary_threshold if settings.binary_threshold is not None else run.get("binary_threshold")
        examples = read_examples(
            settings.data, text_field=text_field, label_field=label_field, format=settings.format, where=settings.where
        )
        examples = examples[: settings.max_examples] if settings.max_examples else examples
        if settings.binary_threshold is None and threshold is not None and (why := one_sided(examples, threshold)):
            # the run's threshold on another scale (IMDB's 7 on SST-5's 1-5) would score every row against one class
            raise ValueError(
                f"--data {settings.data}: {why} by the run's --binary-threshold; give --binary-threshold for this "
                "file's scale"
            )
        examples = relabel_binary(examples, threshold)
        if architecture in BASELINES:
            metrics, rows = baseline_module(architecture).evaluate(model_dir, examples)
        else:
            metrics, rows = Classifier(model_dir, settings.max_length).evaluate(examples)  # as the run scored them
        write_jsonl(Path(output).with_name(self.evaluation_file), rows)
        return metrics

    def headline(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {k: metrics[k] for k in ("examples", "accuracy", "macro_f1") if k in metrics}

    def predictor(self, model_dir: str | Path, architecture: str | None, settings):
        """The folder's classifier (or baseline) loaded once: texts -> label and class probabilities each."""
        from fastformer.tasks.classification.classifier import Classifier

        if architecture in BASELINES:
            return baseline_module(architecture).classifier(model_dir)
        return Classifier(model_dir, settings.max_length)

    def explained_model(self, model_dir: str | Path, architecture: str | None):
        """(model, tokenizer, `explain` settings) that `fastformer explain` reads the weights of: the texts read as
        `predict` reads them (the run's --max-length, --truncation and --bf16)."""
        from fastformer.tasks.classification.classifier import Classifier

        if architecture in BASELINES:
            raise ValueError(f"{model_dir} holds the {architecture} baseline: it has no attention weights to show")
        classifier = Classifier(model_dir)
        reading = dict(max_length=classifier.max_length, truncation=classifier.truncation, bf16=classifier.bf16)
        return classifier.model, classifier.tokenizer, reading
