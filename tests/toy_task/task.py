"""The toy task: is a text warm or cool? A text is a few colour words; its label is the family of its first word.
Everything here is what a new task writes: its settings, its data, its model, its metrics, its verbs; the run
(folder, tokenizer, Trainer, checkpoints, resume, the atomic save) and the command line are the engine's."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from fastformer.engine.inputs import WordInputSettings
from fastformer.engine.settings import setting
from fastformer.engine.skeleton import Prepared
from fastformer.engine.task import Task
from fastformer.engine.verbs import EvaluationSettings, TextPredictionSettings

WARM, COOL = ("red", "orange", "yellow"), ("blue", "green", "violet")
LABELS = ("warm", "cool")


@dataclass
class ToyConfig(WordInputSettings):
    """The toy task's settings: how many generated texts it trains on."""

    examples: int = setting(96, "generated training texts", minimum=8)
    max_length: int = setting(16, "tokens read per text", minimum=2)


@dataclass
class ToyEvaluation(EvaluationSettings):
    """`fastformer evaluate` of a toy folder: --data is a JSON Lines file of {"text", "label"}."""


def generate(count: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        words = [rng.choice(WARM + COOL) for _ in range(rng.randint(2, 5))]
        rows.append(dict(text=" ".join(words), label=LABELS[words[0] in COOL]))
    return rows


def encode(tokenizer, rows: list[dict[str, str]], max_length: int) -> list[dict[str, Any]]:
    ids = tokenizer([r["text"] for r in rows], truncation=True, max_length=max_length)["input_ids"]
    return [dict(input_ids=i, labels=LABELS.index(r["label"])) for i, r in zip(ids, rows, strict=True)]


def classify(model, tokenizer, texts: list[str]) -> list[str]:
    import torch

    limit = model.config.max_position_embeddings
    batch = tokenizer(texts, padding=True, truncation=True, max_length=limit, return_tensors="pt")
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    return [LABELS[i] for i in logits.argmax(-1).tolist()]


def load(folder):
    from transformers import AutoTokenizer

    from fastformer.models.fastformer import FastformerForSequenceClassification

    return FastformerForSequenceClassification.from_pretrained(str(folder)).eval(), AutoTokenizer.from_pretrained(
        str(folder)
    )


class ToyTask(Task):
    """Warm or cool colour words: a tiny Fastformer classifier."""

    name = "toy"
    help = "a toy task (warm or cool colour words)"
    config_class = ToyConfig
    model_class_name = "FastformerForSequenceClassification"  # built by the engine from the methods below
    verbs: ClassVar[dict[str, type | None]] = dict(evaluate=ToyEvaluation, predict=TextPredictionSettings)

    def load_data(self, cfg: ToyConfig, report: dict[str, Any]):
        return dict(train=generate(cfg.examples, 1), validation=generate(32, 2))

    def tokenizer_texts(self, cfg: ToyConfig, data):
        return [r["text"] for r in data["train"]]

    def head_fields(self, cfg: ToyConfig, data, tokenizer=None) -> dict[str, Any]:
        return dict(num_labels=len(LABELS))

    def model_fields(self, cfg: ToyConfig) -> dict[str, Any]:
        return dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)

    def input_length(self, cfg: ToyConfig) -> int:
        return cfg.max_length

    def prepare(self, cfg: ToyConfig, data, tokenizer, model, out: Path) -> Prepared:
        from transformers import DataCollatorWithPadding

        return Prepared(
            train_dataset=encode(tokenizer, data["train"], cfg.max_length),
            eval_dataset=encode(tokenizer, data["validation"], cfg.max_length),
            data_collator=DataCollatorWithPadding(tokenizer),
            arguments=dict(eval_strategy="epoch", save_strategy="epoch"),
            train_counts=dict(examples=len(data["train"])),
        )

    def evaluate_splits(self, cfg: ToyConfig, model, tokenizer, data, prepared: Prepared, out: Path):
        rows = data["validation"]
        said = classify(model, tokenizer, [r["text"] for r in rows])
        return dict(validation=dict(accuracy=sum(s == r["label"] for s, r in zip(said, rows, strict=True)) / len(rows)))

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return dict(validation=metrics["validation"])

    def evaluate_folder(self, folder, architecture, settings, output: Path) -> dict[str, Any]:
        rows = [json.loads(line) for line in Path(settings.data).read_text().splitlines() if line.strip()]
        said = classify(*load(folder), [r["text"] for r in rows])
        return dict(
            examples=len(rows), accuracy=sum(s == r["label"] for s, r in zip(said, rows, strict=True)) / len(rows)
        )

    def predictor(self, folder, architecture, settings):
        model, tokenizer = load(folder)
        return lambda texts: [dict(label=label) for label in classify(model, tokenizer, texts)]
