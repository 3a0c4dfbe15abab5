"""Task-specific distillation for classification (`fastformer train classification --teacher DIR`), TinyBERT's second
stage: a classifier fine-tuned on the task (the teacher, any attention) teaches the student its output distribution on
the task's training texts, and on in-domain unlabelled texts (`--unlabelled`, e.g. IMDB's 50,000 reviews) that only
the teacher labels.

    loss = (1 - w) * cross-entropy(student, labels)   (labelled rows only)
         + w * T^2 * KL(softmax(teacher / T) || softmax(student / T))   (every row)

with w = --distill-weight and T = --temperature (Hinton et al. 2015; T^2 keeps the gradient's scale as T changes).
Unlabelled texts that occur in the validation or test split are dropped (and counted) before training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F


class TeacherError(ValueError):
    """A --teacher that cannot teach this run; one line naming both values."""


def load_teacher_classifier(folder: str | Path, labels: list[str], tokenizer):
    """The fine-tuned classifier at `folder`, frozen in eval mode; refused when its labels (in order) or vocabulary
    differ from the run's."""
    from transformers import AutoTokenizer

    from fastformer.engine.init_from import InitFromError, pretrained_config
    from fastformer.engine.task import NotARunFolder, check_model_files
    from fastformer.models.fastformer import FastformerForSequenceClassification

    folder = Path(folder)
    try:
        config = pretrained_config(folder)
        check_model_files(folder)
    except (InitFromError, NotARunFolder) as error:
        raise TeacherError(f"--teacher {str(error).removeprefix('--init-from ')}") from None
    theirs = [config.id2label[i] for i in range(config.num_labels)] if config.id2label else []
    if theirs != list(labels):
        raise TeacherError(f"--teacher {folder}: its labels {theirs[:6]} are not this run's {list(labels)[:6]}")
    if AutoTokenizer.from_pretrained(str(folder)).get_vocab() != tokenizer.get_vocab():
        raise TeacherError(
            f"--teacher {folder}: its tokenizer's vocabulary is not the run's (--init-from / --tokenizer)"
        )
    teacher = FastformerForSequenceClassification.from_pretrained(str(folder))
    return teacher.eval().requires_grad_(False)


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor,
    weight: float,
    temperature: float,
) -> torch.Tensor:
    """(B, C) logits twice, (B,) labels (-100: unlabelled) -> the loss of the module docstring (float32)."""
    student, teacher = student_logits.float(), teacher_logits.float()
    labelled = labels != -100
    cross_entropy = (
        F.cross_entropy(student[labelled], labels[labelled], reduction="sum") / labelled.sum()
        if labelled.any()
        else student.sum() * 0.0
    )
    kl = F.kl_div(
        F.log_softmax(student / temperature, -1), F.log_softmax(teacher / temperature, -1), log_target=True,
        reduction="batchmean",
    )  # fmt: skip
    return (1 - weight) * cross_entropy + weight * temperature**2 * kl


def reference_distillation_loss(student_logits, teacher_logits, labels, weight, temperature) -> torch.Tensor:
    """The same, row by row with explicit sums (the tests' reference)."""
    ce, n_labelled, kl = 0.0, 0, 0.0
    for s, t, y in zip(student_logits.double(), teacher_logits.double(), labels.tolist(), strict=True):
        if y != -100:
            ce += -torch.log_softmax(s, -1)[y]
            n_labelled += 1
        p = torch.softmax(t / temperature, -1)
        kl += (p * (torch.log(p) - torch.log_softmax(s / temperature, -1))).sum()
    ce = ce / n_labelled if n_labelled else 0.0
    return (1 - weight) * ce + weight * temperature**2 * kl / len(labels)


def task_distillation_trainer():
    """A transformers Trainer whose loss is `distillation_loss` against a frozen teacher (kept out of the model:
    checkpoints and the saved folder hold the student alone)."""
    from transformers import Trainer

    class TaskDistillationTrainer(Trainer):
        def __init__(self, *args, teacher, weight: float, temperature: float, **kwargs):
            super().__init__(*args, **kwargs)
            self.teacher, self.weight, self.temperature = teacher, weight, temperature

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            self.teacher.to(self.args.device)
            with torch.autocast(self.args.device.type, dtype=torch.bfloat16, enabled=bool(self.args.bf16)):
                outputs = model(**inputs)
                with torch.no_grad():
                    teacher_logits = self.teacher(**inputs).logits
            loss = distillation_loss(outputs.logits, teacher_logits, labels, self.weight, self.temperature)
            return (loss, outputs) if return_outputs else loss

    return TaskDistillationTrainer


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
