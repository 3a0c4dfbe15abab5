"""Task-specific distillation for classification (`fastformer train classification --teacher DIR`): the loss and its
Trainer are engine/teacher.py's; here, the classifier teacher's checks, what it reads of a row longer than its
positions, and the unlabelled texts (`--unlabelled`, e.g. IMDB's 50,000 reviews) that only the teacher labels.
Unlabelled texts that occur in the validation or test split are dropped (and counted) before training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastformer.engine.teacher import TeacherError, teacher_folder_config, teacher_max_length


def text_states(outputs, inputs: dict):
    """--distill-hidden: a classifier's hidden states (embeddings' output first) and its (B, N) mask of real tokens."""
    return outputs.hidden_states, inputs["attention_mask"]


def load_teacher_classifier(
    folder: str | Path, labels: list[str], tokenizer, max_length: int, truncation: str, report: dict[str, Any]
):
    """(the fine-tuned classifier at `folder` frozen in eval mode, the function that cuts a batch to what it reads or
    None), refused when its labels (in order) or vocabulary differ from the run's. A teacher whose positions are
    fewer than `max_length` (a 512-token BERT teaching a student with extended positions) reads each row as the run's
    --truncation would have made it at the teacher's length: e.g. the first 511 tokens and the closing [SEP]. What it
    reads goes into `report["teacher"]`."""
    from fastformer.data.tokenizer import kept_head
    from fastformer.models.fastformer import FastformerForSequenceClassification
    from fastformer.tasks.classification.classifier import shorten_rows

    config = teacher_folder_config(folder, tokenizer, "FastformerForSequenceClassification", None)
    theirs = [config.id2label[i] for i in range(config.num_labels)] if config.id2label else []
    if theirs != list(labels):
        raise TeacherError(f"--teacher {folder}: its labels {theirs[:6]} are not this run's {list(labels)[:6]}")
    teacher = FastformerForSequenceClassification.from_pretrained(str(folder)).eval().requires_grad_(False)
    reads = teacher_max_length(config)
    report["teacher"] = dict(folder=str(folder), reads_tokens=min(reads, max_length), truncation=truncation)
    if reads >= max_length:
        return teacher, None
    head = kept_head(tokenizer, reads, truncation)

    def teacher_inputs(inputs: dict) -> dict:
        ids, mask = shorten_rows(inputs["input_ids"], inputs["attention_mask"], reads, head)
        return {**inputs, "input_ids": ids, "attention_mask": mask}

    return teacher, teacher_inputs


def unlabelled_examples(cfg, splits: dict[str, list], report: dict[str, Any]) -> list:
    """--unlabelled texts as examples with no label (label None; `source` counts kept texts), every text that occurs
    in the validation or test split dropped (whitespace and case normalised) and counted in `report`."""
    from fastformer.data.text_classification import Example
    from fastformer.data.text_corpus import read_texts
    from fastformer.tasks.pretrain.corpus import decontaminate, normalise_text

    excluded = {normalise_text(e.text) for name in ("validation", "test") for e in splits.get(name, ())}
    texts = list(read_texts(cfg.unlabelled, cfg.unlabelled_field))
    kept, dropped, repeats = decontaminate(texts, excluded)
    if cfg.max_unlabelled:
        kept = kept[: cfg.max_unlabelled]
    report["unlabelled"] = dict(
        file=cfg.unlabelled,
        read=len(texts),
        dropped_as_evaluation_texts=dropped,
        repeats_dropped=repeats,
        kept=len(kept),
    )
    return [Example(text=text, label=None, source=f"{cfg.unlabelled}:{i + 1}") for i, text in enumerate(kept)]
