"""A trained classifier's texts in and labels out: a batch cut to a teacher's length, the encoded dataset (its token
ids cut by `fastformer.data.tokenizer.encode_texts`, the run's truncation), batched prediction in length order, a
split's metrics, and a trained folder loaded for `predict` / `evaluate` / `explain`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from fastformer.data.text_classification import Example, LabelMap
from fastformer.data.tokenizer import encode_texts
from fastformer.engine.skeleton import release_freed_memory
from fastformer.metrics.classification import classification_metrics, label_record, prediction_row
from fastformer.precision import cpu_bf16_autocast


def shorten_rows(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, max_length: int, head: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch (B, N) cut to rows of at most `max_length` real tokens (B, min(N, max_length)), right-padded with 0:
    a longer row keeps its first `head` and its last `max_length - head` real tokens (any padding side). With
    `head = kept_head(tokenizer, max_length, truncation)`, a row `encode_texts` made at a greater length becomes the
    row it makes at `max_length` (tested): what a 512-token teacher reads of a 1,024-token student's batch."""
    real = attention_mask.bool()
    count = real.sum(1, keepdim=True)  # (B, 1) real tokens per row
    rank = real.long().cumsum(1) - 1  # (B, N) each real token's place among its row's
    cut = (count - max_length).clamp(min=0)  # (B, 1) tokens dropped from the middle of a longer row
    keep = real & ((rank < head) | (rank >= head + cut))
    width = min(input_ids.shape[1], max_length)
    place = torch.where(keep, torch.where(rank < head, rank, rank - cut), width)  # dropped: a spare column
    ids = input_ids.new_zeros(input_ids.shape[0], width + 1).scatter_(1, place, input_ids)
    mask = attention_mask.new_zeros(input_ids.shape[0], width + 1).scatter_(1, place, keep.to(attention_mask.dtype))
    return ids[:, :width], mask[:, :width]


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


def bf16_scoring(bf16: bool):
    """The context a run scores its splits in: bf16 autocast on CPU with `--bf16` (on a GPU the Trainer chooses),
    else none; a folder is scored in its run's, where this CPU multiplies bfloat16 (precision.py)."""
    enabled = not torch.cuda.is_available() and cpu_bf16_autocast(bool(bf16))
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled)


class Classifier:
    """A trained folder loaded once, reading texts as its run did; called on a list of texts, the label and class
    probabilities of each; `.evaluate` scores labelled examples."""

    def __init__(self, model_dir: str | Path, max_length: int | None = None):
        from fastformer.engine.folder import run_settings

        self.model, self.tokenizer, self.labels = load_model(model_dir)
        run = run_settings(model_dir)  # read texts as the run did: as many tokens (positions may be more), same ends
        self.max_length = max_length or run.get("max_length") or self.model.config.max_position_embeddings
        self.truncation = run.get("truncation") or "head"
        self.bf16 = bool(run.get("bf16"))

    def __call__(self, texts: list[str]) -> list[dict[str, Any]]:
        names = self.labels.labels
        examples = [Example(t, names[0], f"input:{i + 1}") for i, t in enumerate(texts)]
        dataset = EncodedDataset(examples, self.tokenizer, self.labels, self.max_length, self.truncation)
        with bf16_scoring(self.bf16):
            probs = predict_dataset(self.model, dataset, self.tokenizer).softmax(-1)
        return [label_record(t, p, names) for t, p in zip(texts, probs, strict=True)]

    def evaluate(self, examples: list[Example]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(metrics, prediction rows) of labelled examples, scored as the run scored its splits."""
        with bf16_scoring(self.bf16):
            return evaluate_split(self.model, self.tokenizer, examples, self.labels, self.max_length, self.truncation)


def predict_texts(model_dir: str | Path, texts: list[str], max_length: int | None = None) -> list[dict[str, Any]]:
    """Label and class probabilities for each text."""
    return Classifier(model_dir, max_length)(texts)
