"""Task-specific distillation (`fastformer train TASK --teacher DIR`), TinyBERT's second stage, for any task whose
model scores a fixed set of choices per row (a classifier's labels, a recommender's candidates): a model fine-tuned
on the task (the teacher, any attention) teaches the student its output distribution beside the labels.

    loss = (1 - w) * cross-entropy(student, labels)   (labelled rows only)
         + w * T^2 * KL(softmax(teacher / T) || softmax(student / T))   (every row)

with w = --distill-weight and T = --temperature (Hinton et al. 2015; T^2 keeps the gradient's scale as T changes);
with --distill-hidden h > 0, plus h times the text encoder's hidden states against the teacher's (TinyBERT's
intermediate layers: `hidden_state_loss` of engine/state_loss.py, each depth in units of the teacher's scales there).
The task checks that its teacher reads the same inputs (`teacher_folder_config`, then its own checks) and hands
`task_distillation_trainer` its Trainer class, with a function that cuts a batch down to what the teacher reads where
the student reads more (a classifier with extended positions); the teacher stays out of the model, so checkpoints and
the saved folder hold the student alone.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.nn import functional as F


class TeacherError(ValueError):
    """A --teacher that cannot teach this run; one line naming both values."""


def teacher_folder_config(folder: str | Path, tokenizer, architecture: str, max_length: int | None):
    """The config of the trained model at `folder`, checked: a complete model folder of `architecture` (a model
    class name) whose tokenizer's vocabulary is the run's and whose positions cover the run's `max_length` (the
    student feeds the teacher its own token ids; None: the task cuts longer rows to the teacher's length itself)."""
    from transformers import AutoTokenizer

    from fastformer.engine.init_from import InitFromError, pretrained_config
    from fastformer.engine.task import NotARunFolder, check_model_files

    folder = Path(folder)
    try:
        config = pretrained_config(folder)
        check_model_files(folder)
    except (InitFromError, NotARunFolder) as error:
        raise TeacherError(f"--teacher {str(error).removeprefix('--init-from ')}") from None
    if architecture not in (config.architectures or []):
        raise TeacherError(f"--teacher {folder}: a {', '.join(config.architectures or ['?'])}, not a {architecture}")
    if AutoTokenizer.from_pretrained(str(folder)).get_vocab() != tokenizer.get_vocab():
        raise TeacherError(
            f"--teacher {folder}: its tokenizer's vocabulary is not the run's (--init-from / --tokenizer)"
        )
    if max_length and teacher_max_length(config) < max_length:
        raise TeacherError(
            f"--teacher {folder}: it reads at most {config.max_position_embeddings} tokens, this run --max-length "
            f"{max_length}"
        )
    return config


def check_hidden_teaching(cfg, teacher_config, shortened: bool = False) -> None:
    """--distill-hidden compares the student's hidden states with the teacher's token by token and dimension by
    dimension: refused in one line (before anything is written) when their hidden sizes differ or when the teacher
    reads other tokens than the student (`shortened`: a teacher with fewer positions reading a cut row)."""
    if not cfg.distill_hidden:
        return
    from fastformer.engine.init_from import pretrained_config

    if cfg.init_from:
        student = pretrained_config(cfg.init_from)
    else:
        from fastformer.models.fastformer import FastformerConfig

        student = FastformerConfig.from_preset(cfg.preset, **cfg.model)
    if student.hidden_size != teacher_config.hidden_size:
        raise TeacherError(
            f"--distill-hidden: the teacher's hidden size is {teacher_config.hidden_size}, the student's "
            f"{student.hidden_size} (hidden states are compared dimension by dimension)"
        )
    if shortened:
        reads = teacher_max_length(teacher_config)
        raise TeacherError(
            f"--distill-hidden: the teacher reads {reads} tokens of a row, the student --max-length {cfg.max_length} "
            f"(hidden states are compared token by token): give --max-length {reads} or --distill-hidden 0"
        )


def teacher_max_length(config) -> float:
    """How many tokens a row may hold for the model of `config`: its positions, or any number (relative ones)."""
    return config.max_position_embeddings if config.position_embedding_type == "absolute" else float("inf")


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor,
    weight: float,
    temperature: float,
) -> torch.Tensor:
    """(B, C) logits twice, (B,) labels (-100: unlabelled) -> the loss of the module docstring (float32). A choice
    masked out in both (a padded candidate at the dtype's lowest value) adds nothing."""
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


def teaching_trainer(
    cfg, teacher, base: type | None = None, teacher_inputs=None, text_states=None
) -> tuple[type | None, dict]:
    """(Trainer class, its extra keyword arguments) of a run that a --teacher may teach: `base` and none without one
    (None: transformers' own Trainer); with one, `task_distillation_trainer(base)` and the loaded `teacher` with
    --distill-weight, --temperature, `teacher_inputs` (batch -> the teacher's batch; None: the same) and, for
    --distill-hidden, the task's `text_states` ((model outputs, batch) -> (the text encoder's hidden states,
    embeddings' output first, and their (B, N) mask of real tokens))."""
    if not cfg.teacher:
        return base, {}
    hidden = cfg.distill_hidden
    if hidden and text_states is None:
        raise TeacherError(
            f"--distill-hidden: this task ({type(cfg).__name__}) does not say where its hidden states are"
        )
    return task_distillation_trainer(base), dict(
        teacher=teacher, weight=cfg.distill_weight, temperature=cfg.temperature, teacher_inputs=teacher_inputs,
        hidden_weight=hidden, text_states=text_states,
    )  # fmt: skip


def task_distillation_trainer(base: type | None = None):
    """A subclass of `base` (a transformers Trainer class; default transformers' own) whose loss is
    `distillation_loss` against a frozen teacher, plus `hidden_weight` times `hidden_state_loss` on the states that
    `text_states` reads from both models' outputs: the batch's inputs go to both models (to the teacher through
    `teacher_inputs` where given), its `labels` to the loss. That is the loss of training steps; evaluation's is
    the student's own on the labels, the teacher left out (what an untaught run reports as validation loss)."""
    from transformers import Trainer

    from fastformer.engine.state_loss import hidden_state_loss

    class TaskDistillationTrainer(base or Trainer):
        def __init__(
            self,
            *args,
            teacher,
            weight: float,
            temperature: float,
            teacher_inputs=None,
            hidden_weight: float = 0.0,
            text_states=None,
            **kwargs,
        ):
            super().__init__(*args, **kwargs)
            self.teacher, self.weight, self.temperature = teacher, weight, temperature
            self.teacher_inputs = teacher_inputs or (lambda inputs: inputs)
            self.hidden_weight, self.text_states = hidden_weight, text_states

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if not model.training:
                # Evaluation: the student alone on its labels, as an untaught run evaluates. Its validation loss
                # stays comparable with an untaught run's, and no teacher reads the validation set at every
                # evaluation (half of an evaluation's time where teacher and student cost alike).
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            labels = inputs.pop("labels")
            self.teacher.to(self.args.device)
            hidden = bool(self.hidden_weight)
            states = dict(output_hidden_states=True) if hidden else {}
            with torch.autocast(self.args.device.type, dtype=torch.bfloat16, enabled=bool(self.args.bf16)):
                outputs = model(**inputs, **states)
                with torch.no_grad():
                    taught = self.teacher(**self.teacher_inputs(inputs), **states)
            loss = distillation_loss(outputs.logits, taught.logits, labels, self.weight, self.temperature)
            if hidden:
                students, mask = self.text_states(outputs, inputs)
                teachers, _ = self.text_states(taught, inputs)
                loss = loss + self.hidden_weight * hidden_state_loss(students, teachers, mask.bool())
            return (loss, outputs) if return_outputs else loss

    return TaskDistillationTrainer
