"""Text classification end to end: read data, train a tokenizer, train with the Hugging Face Trainer, evaluate,
save a `save_pretrained` folder with metrics, predictions and plots.

The run itself (folder, checkpoints, resume, torchrun, the atomic save) is the skeleton's (engine/skeleton.py);
this module supplies what is classification's own: the splits, the encoded datasets, the model, the metrics and
the predictions.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from fastformer.data.text_classification import Example, LabelMap, read_examples
from fastformer.data.tokenizer import special_tokens_around
from fastformer.engine import inputs
from fastformer.engine.init_from import check_start, start_from
from fastformer.engine.outputs import write_jsonl
from fastformer.engine.skeleton import Prepared, Task, release_freed_memory, run_task
from fastformer.engine.splits import hold_out, limit_splits
from fastformer.metrics.classification import classification_metrics, label_record, prediction_row
from fastformer.presets import mixer_of
from fastformer.tasks.classification.config import ClassificationConfig

# --architecture values that are untrained baselines: name -> module with train / evaluate / classifier / MODEL_FILES
BASELINES = {"tfidf": "fastformer.tasks.classification.tfidf", "nbsvm": "fastformer.tasks.classification.nbsvm"}
SUBSET_SEED = 0  # the --max-*-examples sample: fixed, so that every seed and architecture sees the same examples
SUBSETS = {"random": SUBSET_SEED, "first": None}  # --subset -> limit_splits' subset_seed (None: file order)


def relabel_binary(examples: list[Example], threshold: float | None) -> list[Example]:
    """Numeric labels >= threshold -> "pos", else "neg"; unchanged when threshold is None."""
    if threshold is None:
        return examples
    relabelled = []
    for e in examples:
        try:
            value = float(e.label)
        except ValueError:
            raise ValueError(
                f"{e.source}: label {e.label!r} is not a number; --binary-threshold {threshold:g} "
                "splits numeric labels (ratings) into pos / neg"
            ) from None
        relabelled.append(Example(e.text, "pos" if value >= threshold else "neg", e.source))
    return relabelled


def load_mind_topics(cfg: ClassificationConfig, report: dict[str, Any]) -> dict[str, list[Example]]:
    """MIND topic classification: news texts labelled with their category (`fastformer.data.mind_topics`).

    `cfg.train` may name several files joined by commas (news.tsv, MIND folders, MINDRec JSON). The validation and
    test splits missing as files are cut from the training texts by `title_disjoint_split` (fixed seed SUBSET_SEED,
    so every training seed sees the same split); texts of a given validation / test file are removed from training.
    """
    from fastformer.data.mind_topics import normalise_title, read_topics, title_disjoint_split

    read = dict(text_fields=cfg.text_field or "title", label_field=cfg.label_field or "category")
    splits, found = {}, {}
    splits["train"], found["train"] = read_topics(cfg.train.split(","), **read)
    for name in ("validation", "test"):
        path = getattr(cfg, name)
        if path:
            splits[name], found[name] = read_topics(path.split(","), **read)
    held = {normalise_title(e.text) for name in ("validation", "test") if name in splits for e in splits[name]}
    if held:
        before = len(splits["train"])
        splits["train"] = [e for e in splits["train"] if normalise_title(e.text) not in held]
        report["train_texts_removed_as_in_evaluation_files"] = before - len(splits["train"])
    missing = [name for name in ("validation", "test") if name not in splits]
    if missing:
        fractions = dict(validation=cfg.validation_fraction, test=cfg.test_fraction)
        cut, _ = title_disjoint_split(
            splits["train"], *(fractions[n] if n in missing else 0.0 for n in ("validation", "test")), seed=SUBSET_SEED
        )
        splits["train"] = cut["train"]
        splits.update({name: cut[name] for name in missing})
        empty = [name for name in missing if not splits[name]]
        if empty:
            largest = ", ".join(f"{c} {n}" for c, n in Counter(e.label for e in splits["train"]).most_common(3))
            raise ValueError(
                f"MIND topics: no {' or '.join(empty)} texts could be cut from the training texts (a category gives "
                f"some from 3 texts; the largest here: {largest}); give --{' / --'.join(empty)} files or more texts"
            )
    report["read"] = {name: r.as_dict() for name, r in found.items()}
    report["split"] = {name: len(items) for name, items in splits.items()}
    report["split_categories"] = {name: dict(Counter(e.label for e in items)) for name, items in splits.items()}
    rare = [c for c, n in found["train"].categories.items() if n < 3]
    if rare:
        report["categories_in_training_only"] = rare
    print(f"MIND topics: {found['train'].summary()}", file=sys.stderr)
    return splits


def load_splits(cfg: ClassificationConfig, report: dict[str, Any] | None = None) -> dict[str, list[Example]]:
    """train / validation / test examples as the config says (the generated task when no train file is given).
    `report`, when given, receives what the readers found (MIND topics: counts per category, texts dropped)."""
    report = {} if report is None else report
    if cfg.format == "mind-topics":
        splits = load_mind_topics(cfg, report)
        return limit_splits(splits, cfg.max_train_examples, cfg.max_eval_examples, SUBSETS[cfg.subset])
    if cfg.train is None:
        from fastformer.data import synthetic

        splits = dict(
            train=synthetic.generate(2000, seed=1),
            validation=synthetic.generate(300, seed=2),
            test=synthetic.generate(300, seed=3),
        )
    else:
        read = dict(
            text_field=cfg.text_field, label_field=cfg.label_field, format=cfg.format, has_header=cfg.has_header
        )
        splits = {"train": read_examples(cfg.train, where=cfg.train_where, **read)}
        if cfg.validation:
            splits["validation"] = read_examples(cfg.validation, where=cfg.validation_where, **read)
        else:  # a seeded hold-out of the training file
            splits["validation"], splits["train"] = hold_out(splits["train"], cfg.validation_fraction, cfg.seed)
        if cfg.test:
            splits["test"] = read_examples(cfg.test, where=cfg.test_where, **read)
    splits = {name: relabel_binary(examples, cfg.binary_threshold) for name, examples in splits.items()}
    return limit_splits(splits, cfg.max_train_examples, cfg.max_eval_examples, SUBSETS[cfg.subset])


def distillation_kwargs(cfg: ClassificationConfig, data) -> dict[str, Any]:
    """The task-distillation Trainer's own arguments (none without --teacher)."""
    if not cfg.teacher:
        return {}
    return dict(teacher=data["teacher"], weight=cfg.distill_weight, temperature=cfg.temperature)


def distillation_trainer_class(cfg: ClassificationConfig):
    """The Trainer of a run with --teacher (the distillation loss), else None (transformers' own)."""
    if not cfg.teacher:
        return None
    from fastformer.tasks.classification.distillation import task_distillation_trainer

    return task_distillation_trainer()


def evaluation_schedule(per_epoch: int, examples: int, batch_size: int) -> dict[str, Any]:
    """TrainingArguments fields: evaluate and save at every epoch's end (per_epoch 1), or every ceil(steps per epoch /
    per_epoch) steps, so a run killed inside a long epoch (a full IMDB epoch of a MiniLM-size model on one core: ~3 h)
    resumes from a checkpoint near where it stopped."""
    import math

    if per_epoch <= 1:
        return dict(eval_strategy="epoch", save_strategy="epoch")
    every = max(1, math.ceil(math.ceil(examples / batch_size) / per_epoch))
    return dict(eval_strategy="steps", save_strategy="steps", eval_steps=every, save_steps=every)


HEAD_TOKENS = 128  # head+tail truncation: the first 128 tokens and the last max_length - 128 (Sun et al. 2019)
TRUNCATIONS = ("head", "head+tail")


def encode_texts(tokenizer, texts: list[str], max_length: int, truncation: str = "head") -> list[list[int]]:
    """Token ids of each text with the tokenizer's own special tokens (none for the tokenizers runs train, [CLS] ...
    [SEP] for a BERT tokenizer, as a `convert-bert` model was trained to read), at most `max_length` in all: its
    first tokens (`head`), or its first HEAD_TOKENS and its last ones (`head+tail`: where a long review says what it
    concludes; Sun et al. 2019 found it best on IMDB)."""
    if truncation == "head":
        return tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
    before, after = special_tokens_around(tokenizer)
    room = max(1, max_length - len(before) - len(after))
    head = min(HEAD_TOKENS, room // 2)
    encoded = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
    return [
        before + (ids if len(ids) <= room else ids[:head] + ids[len(ids) - (room - head) :]) + after for ids in encoded
    ]


class EncodedDataset(torch.utils.data.Dataset):
    """Token ids and label ids of examples (`encode_texts`); padding happens per batch in the collator."""

    def __init__(self, examples: list[Example], tokenizer, labels: LabelMap, max_length: int, truncation: str = "head"):
        self.examples = examples
        self.input_ids = encode_texts(tokenizer, [e.text for e in examples], max_length, truncation)
        # an unknown label raises with its file and line; None (a text only a --teacher labels) is -100, no label
        self.labels = [-100 if e.label is None else labels.encode(e) for e in examples]

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.input_ids[i], "labels": self.labels[i]}

    def num_tokens(self) -> int:
        return sum(len(ids) for ids in self.input_ids)


def predict_dataset(model, dataset: EncodedDataset, tokenizer, batch_size: int = 64) -> torch.Tensor:
    """Logits (n, num_labels) for every example, in order, in eval mode. Batches are formed in length order (little
    padding) and the rows put back in the dataset's order."""
    from transformers import DataCollatorWithPadding

    collate = DataCollatorWithPadding(tokenizer)
    model.eval()
    order = sorted(range(len(dataset)), key=lambda i: len(dataset.input_ids[i]))
    out = []
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            batch = collate([{"input_ids": dataset.input_ids[i]} for i in order[start : start + batch_size]])
            out.append(model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float())
            release_freed_memory()  # (batches grow in length: glibc would keep each smaller one's freed fragments)
    logits = torch.cat(out) if out else torch.zeros(0, model.config.num_labels)
    restored = torch.empty_like(logits)
    restored[torch.tensor(order, dtype=torch.long)] = logits
    return restored


def evaluate_split(
    model, tokenizer, examples: list[Example], labels: LabelMap, max_length: int, truncation: str = "head"
):
    """Metrics and per-example predictions of one split."""
    dataset = EncodedDataset(examples, tokenizer, labels, max_length, truncation)
    logits = predict_dataset(model, dataset, tokenizer)
    predicted = logits.argmax(-1).tolist()
    metrics = classification_metrics(dataset.labels, predicted, labels.labels)
    metrics["examples"] = len(examples)
    probs = logits.softmax(-1)
    rows = [prediction_row(e, row, labels.labels) for e, row in zip(examples, probs, strict=True)]
    return metrics, rows


def classifier_head_fields(labels: LabelMap) -> dict[str, Any]:
    """The classifier's own config fields (beside the encoder's)."""
    id2label = labels.id2label()
    return dict(num_labels=len(labels), id2label=id2label, label2id={v: k for k, v in id2label.items()})


def baseline_module(architecture: str):
    """The module of a baseline architecture (BASELINES)."""
    import importlib

    return importlib.import_module(BASELINES[architecture])


class ClassificationTask(Task):
    name = "classification"
    config_class = ClassificationConfig

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
        check_start(cfg, classifier_head_fields(labels), cfg.max_length)  # refused before the folder is touched
        data = dict(splits=splits, labels=labels)
        if cfg.teacher:  # task distillation: the teacher loads and fits, the unlabelled texts are read, before it too
            from fastformer.engine.inputs import make_tokenizer
            from fastformer.tasks.classification.distillation import load_teacher_classifier, unlabelled_examples

            tokenizer, _ = make_tokenizer(cfg, ())
            data["teacher"] = load_teacher_classifier(cfg.teacher, labels.labels, tokenizer)
            data["unlabelled"] = unlabelled_examples(cfg, splits, report) if cfg.unlabelled else []
        return data

    def baseline(self, cfg: ClassificationConfig, data, out: Path, report: dict[str, Any]):
        if cfg.architecture not in BASELINES:
            return None
        return baseline_module(cfg.architecture).train(cfg, data["splits"], data["labels"], out, report)

    def tokenizer_texts(self, cfg: ClassificationConfig, data):
        return (e.text for e in data["splits"]["train"])

    def prepare(self, cfg: ClassificationConfig, data, tokenizer, out: Path) -> Prepared:
        import numpy as np
        from transformers import DataCollatorWithPadding

        from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification

        splits, labels = data["splits"], data["labels"]
        texts = splits["train"] + data.get("unlabelled", [])
        train_set = EncodedDataset(texts, tokenizer, labels, cfg.max_length, cfg.truncation)
        eval_set = EncodedDataset(splits["validation"], tokenizer, labels, cfg.max_length, cfg.truncation)
        model_fields = dict(
            vocab_size=len(tokenizer),
            max_position_embeddings=max(cfg.max_length, 8),
            pad_token_id=tokenizer.pad_token_id,
            **classifier_head_fields(labels),
        )
        origin = None
        if cfg.init_from:
            model, origin = start_from(
                FastformerForSequenceClassification, cfg, classifier_head_fields(labels), tokenizer, cfg.max_length
            )
        else:
            model_fields["attention_type"] = mixer_of(cfg.architecture)  # (a baseline never gets here)
            config = FastformerConfig.from_preset(cfg.preset, **{**model_fields, **cfg.model})
            model = FastformerForSequenceClassification(config)
        embeddings = inputs.embed_run_vectors(cfg, model, tokenizer)

        def compute_metrics(prediction):
            logits, label_ids = prediction
            scores = classification_metrics(label_ids, np.argmax(logits, axis=-1), labels.labels)
            return {k: scores[k] for k in ("accuracy", "macro_f1")}

        return Prepared(
            model=model,
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
            metrics=dict(
                inputs=inputs.inputs_report(cfg, tokenizer, Path(cfg.output_dir) / "tokenizer", embeddings),
                **({"init_from": origin} if origin else {}),
            ),
            plot={
                "validation loss": "eval_loss",
                "validation macro-F1": "eval_macro_f1",
                "validation accuracy": "eval_accuracy",
            },
            trainer_kwargs=dict(compute_metrics=compute_metrics, **distillation_kwargs(cfg, data)),
            trainer_class=distillation_trainer_class(cfg),
        )

    def evaluate(self, cfg: ClassificationConfig, model, tokenizer, data, prepared: Prepared, out: Path):
        metrics = {}
        bf16 = bool(cfg.bf16) and not torch.cuda.is_available()
        for name in ("validation", "test"):
            if name in data["splits"]:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
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


TASK = ClassificationTask()


def train(cfg: ClassificationConfig) -> dict[str, Any]:
    """Train, keep the best checkpoint by validation `cfg.metric`, evaluate, save. Returns the metrics."""
    return run_task(TASK, cfg)


def export_model(model_dir: str | Path, architecture: str | None):
    """The model `fastformer export` traces: the classifier (None for a bag-of-words folder, which has none)."""
    return None if architecture in BASELINES else load_model(model_dir)[0]


def load_model(model_dir: str | Path):
    """(model, tokenizer, LabelMap) of a trained folder."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)

    model, info = AutoModelForSequenceClassification.from_pretrained(str(model_dir), output_loading_info=True)
    missing = info.get("missing_keys") or []
    if missing:  # a renamed or lost tensor would be drawn at random and predict with it
        raise ValueError(
            f"{model_dir}/model.safetensors: lacks tensors {', '.join(sorted(missing)[:5])}"
            f"{' ...' if len(missing) > 5 else ''}; the folder is damaged"
        )
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    if len(tokenizer) > model.config.vocab_size:  # ids past the embedding table: an IndexError deep in the model
        raise ValueError(
            f"{model_dir}: its tokenizer has {len(tokenizer)} tokens, the model's vocabulary {model.config.vocab_size} "
            "(a tokenizer of another model?); the folder is damaged"
        )
    id2label = model.config.id2label
    if "id2label" not in json.loads((Path(model_dir) / "config.json").read_text()):  # transformers' LABEL_0, ...
        print(
            f"warning: {model_dir}/config.json names no labels (id2label): classes are called "
            f"{', '.join(id2label[i] for i in range(min(3, len(id2label))))}{', ...' if len(id2label) > 3 else ''}",
            file=sys.stderr,
        )
    return model, tokenizer, LabelMap([id2label[i] for i in range(len(id2label))])


class Classifier:
    """A trained folder loaded once; called on a list of texts, the label and class probabilities of each."""

    def __init__(self, model_dir: str | Path, max_length: int | None = None):
        from fastformer.engine.folder import run_settings

        self.model, self.tokenizer, self.labels = load_model(model_dir)
        self.max_length = max_length or self.model.config.max_position_embeddings
        self.truncation = run_settings(model_dir).get("truncation") or "head"  # as the run read its texts

    def __call__(self, texts: list[str]) -> list[dict[str, Any]]:
        names = self.labels.labels
        examples = [Example(t, names[0], f"input:{i + 1}") for i, t in enumerate(texts)]
        dataset = EncodedDataset(examples, self.tokenizer, self.labels, self.max_length, self.truncation)
        probs = predict_dataset(self.model, dataset, self.tokenizer).softmax(-1)
        return [label_record(t, p, names) for t, p in zip(texts, probs, strict=True)]


def predict_texts(model_dir: str | Path, texts: list[str], max_length: int | None = None) -> list[dict[str, Any]]:
    """Label and class probabilities for each text."""
    return Classifier(model_dir, max_length)(texts)


# --- the commands on a trained folder (engine/verbs.py) ---
EVALUATION_FILE = "predictions.jsonl"


def evaluate_folder(model_dir: str | Path, architecture: str | None, settings, output: Path) -> dict[str, Any]:
    """Accuracy, macro-F1 and the confusion matrix of a trained folder (a model or a bag-of-words baseline) on a
    labelled file (`settings`: ClassificationEvaluation), read with the run's own columns and label mapping
    unless the settings name others; the predictions go to EVALUATION_FILE beside `output` (metrics.json)."""
    from fastformer.engine.folder import run_settings

    run = run_settings(model_dir)
    text_field = settings.text_field if settings.text_field is not None else run.get("text_field")
    label_field = settings.label_field if settings.label_field is not None else run.get("label_field")
    threshold = settings.binary_threshold if settings.binary_threshold is not None else run.get("binary_threshold")
    examples = read_examples(
        settings.data, text_field=text_field, label_field=label_field, format=settings.format, where=settings.where
    )
    examples = relabel_binary(examples[: settings.max_examples] if settings.max_examples else examples, threshold)
    if architecture in BASELINES:
        metrics, rows = baseline_module(architecture).evaluate(model_dir, examples)
    else:
        model, tokenizer, labels = load_model(model_dir)
        max_length = settings.max_length or model.config.max_position_embeddings
        truncation = run.get("truncation") or "head"  # as the run read its texts
        metrics, rows = evaluate_split(model, tokenizer, examples, labels, max_length, truncation)
    write_jsonl(Path(output).with_name(EVALUATION_FILE), rows)
    return metrics


def headline(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: metrics[k] for k in ("examples", "accuracy", "macro_f1") if k in metrics}


def predictor(model_dir: str | Path, architecture: str | None, settings):
    """The folder's classifier (or baseline) loaded once: texts -> label and class probabilities each."""
    if architecture in BASELINES:
        return baseline_module(architecture).classifier(model_dir)
    return Classifier(model_dir)


def explained_model(model_dir: str | Path, architecture: str | None):
    """(model, tokenizer, generate settings) that `fastformer explain` reads the weights of."""
    if architecture in BASELINES:
        raise ValueError(f"{model_dir} holds the {architecture} baseline: it has no attention weights to show")
    model, tokenizer, _ = load_model(model_dir)
    return model, tokenizer, {}
