"""General distillation as one `Task` class: a Fastformer student (`fastformer convert-bert`) learns to reproduce its
BERT teacher on unlabelled text, each layer from the teacher's input (layerwise) or the whole stack (end-to-end).
The teacher and student loading, the batches, the losses' Trainer and the held-out scores are distillation.py's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fastformer.engine.init_from import FINE_TUNING_FILE
from fastformer.engine.skeleton import Prepared
from fastformer.engine.task import Task
from fastformer.engine.training import evaluations_by_steps
from fastformer.tasks.distill.config import DistillationConfig
from fastformer.tasks.pretrain.corpus import load_texts

# written beside every distilled student: what `--init-from` fine-tunes it with unless told otherwise (the shipped
# student's recipe, its learning rate chosen on validation: docs/RESULTS.md, "A Fastformer from a pretrained
# Transformer")
STUDENT_FINE_TUNING = {
    "learning_rate": 2e-4,
    "warmup": 0.1,
    "batch_size": 32,
    "bf16": True,
    "_measured": "the distilled student fine-tuned so: IMDB-2 91.22 (1 seed), MIND topic titles 79.26 (3 seeds; "
    "docs/RESULTS.md)",
}


class DistillationTask(Task):
    """Distillation of a BERT teacher into a Fastformer student of its size (layer by layer, then end to end)."""

    name = "distill"
    help = "distillation of a teacher Transformer (BERT) into a Fastformer student of its size (`convert-bert`)"
    config_class = DistillationConfig
    architectures = ("FastformerModel",)
    instead = "fine-tune it: `fastformer train ... --init-from FOLDER` (or load it with AutoModel.from_pretrained)"

    def load_data(self, cfg: DistillationConfig, report: dict[str, Any]):
        from fastformer.engine.init_from import pretrained_tokenizer
        from fastformer.tasks.distill.distillation import check_pair, load_fastformer, load_teacher

        # every refusal before the run folder is touched: both models load and fit each other
        teacher = load_teacher(cfg.teacher)
        student = load_fastformer("--init-from", Path(cfg.init_from), **cfg.model)  # (--model local_mixing=K)
        check_pair(teacher, student, cfg)
        tokenizer = pretrained_tokenizer(cfg.init_from)
        texts = load_texts(cfg, report, "distill")
        return dict(texts=texts, teacher=teacher, student=student, tokenizer=tokenizer)

    def tokenizer_texts(self, cfg: DistillationConfig, data):
        return data["texts"]["train"]

    def input_length(self, cfg: DistillationConfig) -> int:
        return cfg.block_size

    def build_model(self, cfg: DistillationConfig, data, tokenizer):
        """The student, loaded (and checked against its teacher) with the data."""
        return data["student"], {}

    def prepare(self, cfg: DistillationConfig, data, tokenizer, model, out: Path) -> Prepared:
        import torch

        from fastformer.engine.state_loss import teacher_scales
        from fastformer.tasks.distill.distillation import (
            SCALE_PIECES,
            PaddingCollator,
            WrappedPieces,
            distillation_trainer,
        )

        texts, teacher = data["texts"], data["teacher"]
        train_set = WrappedPieces(texts["train"], tokenizer, cfg.block_size, cfg.min_block_tokens)
        eval_set = WrappedPieces(texts["validation"], tokenizer, cfg.block_size, cfg.min_block_tokens)
        collator = PaddingCollator(tokenizer.pad_token_id)
        calibration = collator([eval_set[i] for i in range(min(SCALE_PIECES, len(eval_set)))])
        with torch.no_grad():
            states = teacher(**calibration, output_hidden_states=True).hidden_states
        scales = teacher_scales(states, calibration["attention_mask"].bool())
        data["scales"] = scales
        return Prepared(
            train_dataset=train_set,
            eval_dataset=eval_set,
            data_collator=collator,
            arguments=dict(
                **evaluations_by_steps(cfg, len(train_set)),
                train_sampling_strategy="group_by_length",
                remove_unused_columns=False,
            ),
            train_counts=dict(texts=len(texts["train"]), sequences=len(train_set), tokens=train_set.num_tokens()),
            tokens_per_epoch=train_set.num_tokens(),
            metrics=dict(
                stage=cfg.stage,
                teacher=str(cfg.teacher),
                student_start=str(cfg.init_from),
                teacher_scales=dict(
                    pieces=int(calibration["input_ids"].shape[0]),
                    largest_over_floor=[round(float(s.max() / s.min()), 2) for s in scales],
                ),
            ),
            plot={"validation loss": "eval_loss"},
            trainer_class=distillation_trainer(),
            trainer_kwargs=dict(teacher=teacher, scales=scales, stage=cfg.stage, pooled_weight=cfg.pooled_weight),
            state=dict(collator=collator),
        )

    def evaluate_splits(self, cfg: DistillationConfig, model, tokenizer, data, prepared: Prepared, out: Path):
        from fastformer.precision import cpu_bf16_autocast
        from fastformer.tasks.distill.distillation import held_out_scores

        on_cpu = next(model.parameters()).device.type == "cpu"
        # on a CPU as the Trainer chose (training_arguments); on a GPU as asked, as before (the Trainer's own bf16
        # there is on wherever the GPU has it, --bf16 or not)
        use_bf16 = cpu_bf16_autocast(bool(cfg.bf16)) if on_cpu else bool(cfg.bf16)
        scores = held_out_scores(
            model, data["teacher"], prepared.eval_dataset, prepared.state["collator"], data["scales"],
            cfg.batch_size, use_bf16,
        )  # fmt: skip
        scores["texts"] = len(data["texts"]["validation"])
        (out / FINE_TUNING_FILE).write_text(json.dumps(STUDENT_FINE_TUNING, indent=2))
        print(
            f"distill: held-out pooled cosine {scores['pooled_cosine']}, layer losses "
            f"{scores['end_to_end_loss_per_depth']}",
            file=sys.stderr,
        )
        return dict(validation=scores)

    def describe(self, cfg: DistillationConfig, data) -> dict[str, Any]:
        return dict(texts={name: len(items) for name, items in data["texts"].items()}, stage=cfg.stage)

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return dict(
            validation=metrics.get("validation"), decontamination=metrics.get("data", {}).get("decontamination")
        )

    # --- the commands on a trained folder ---
