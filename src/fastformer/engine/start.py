"""How a run's model starts, once for every task that names its model (`Task.model_class_name`): a preset's fresh
model, or `--init-from` a pretrained folder's encoder with a fresh head; then the run's word vectors; and the start
checks, before the run folder changes. A task supplies its head's config fields (`Task.head_fields`), its own
defaults (`Task.model_fields`) and the tokens it reads (`Task.input_length`); a task whose model is its own (a
language model continued, a pretraining objective, a distillation student) overrides `Task.build_model` instead.
Light at import (the models, and with them torch and transformers, load when a model is built).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastformer.engine import inputs
from fastformer.engine.init_from import check_start, start_from
from fastformer.presets import mixer_of

if TYPE_CHECKING:
    from fastformer.engine.task import Task


def check_model_start(task: Task, cfg, data) -> None:
    """Refuse, in one line, an `--init-from` folder that cannot start the task's model (before the folder changes)."""
    if task.model_class_name:
        check_start(cfg, task.head_fields(cfg, data), task.input_length(cfg))


def build_model(task: Task, cfg, data, tokenizer) -> tuple[Any, dict[str, Any]]:
    """(the task's model, its metrics.json entries: `inputs`, and `init_from` when it started from a folder)."""
    from fastformer.models import fastformer as models

    model_class = getattr(models, task.model_class_name)
    head = task.head_fields(cfg, data, tokenizer)
    origin = None
    if cfg.init_from:  # the pretrained encoder; the head (and whatever the encoder lacks) starts fresh
        model, origin = start_from(model_class, cfg, head, tokenizer, task.input_length(cfg))
    else:
        fields = dict(
            vocab_size=len(tokenizer),
            max_position_embeddings=max(task.input_length(cfg), 8),
            pad_token_id=tokenizer.pad_token_id,
            **task.model_fields(cfg),
            **head,
        )
        if hasattr(cfg, "architecture"):  # a task with baselines: the mixer its --architecture names
            fields["attention_type"] = mixer_of(cfg.architecture)
        model = model_class(models.FastformerConfig.from_preset(cfg.preset, **{**fields, **cfg.model}))
    embeddings = inputs.embed_run_vectors(cfg, model, tokenizer)  # (one table: a decoder's and output layer's too)
    metrics = dict(inputs=inputs.inputs_report(cfg, tokenizer, embeddings))
    if origin:
        metrics["init_from"] = origin
    return model, metrics
