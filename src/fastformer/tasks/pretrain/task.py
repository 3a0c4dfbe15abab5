"""Self-supervised pretraining as one `Task` class: a masked-LM or ELECTRA (replaced-token detection) encoder
trained on unlabelled text, decontaminated of evaluation texts, that `fastformer train ... --init-from` fine-tunes.
The corpus, the masking and the objectives' models and scores are pretraining.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastformer.engine.skeleton import Prepared
from fastformer.engine.task import Task
from fastformer.engine.training import evaluations_by_steps
from fastformer.tasks.pretrain.config import PretrainingConfig


class PretrainingTask(Task):
    """Self-supervised pretraining of an encoder (masked LM or ELECTRA) for `train ... --init-from`."""

    name = "pretrain"
    help = "self-supervised pretraining (masked LM or ELECTRA) of an encoder that `train ... --init-from` fine-tunes"
    config_class = PretrainingConfig
    architectures = ("FastformerForMaskedLM", "FastformerForReplacedTokenDetection")
    instead = "fine-tune it: `fastformer train ... --init-from FOLDER` (or load it with from_pretrained)"

    def load_data(self, cfg: PretrainingConfig, report: dict[str, Any]):
        from fastformer.tasks.pretrain.corpus import load_texts

        return load_texts(cfg, report)

    def tokenizer_texts(self, cfg: PretrainingConfig, texts):
        return texts["train"]

    def input_length(self, cfg: PretrainingConfig) -> int:
        return cfg.block_size

    def build_model(self, cfg: PretrainingConfig, texts, tokenizer):
        """The objective's model: a masked LM, or ELECTRA's generator and discriminator (pretraining.build_model)."""
        from fastformer.tasks.pretrain.pretraining import build_model

        return build_model(cfg, tokenizer), {}

    def prepare(self, cfg: PretrainingConfig, texts, tokenizer, model, out: Path) -> Prepared:
        from fastformer.tasks.pretrain.pretraining import (
            EVALUATION_MASK_SEED,
            MaskedPieces,
            MaskingCollator,
            TextPieces,
            detection_accuracy,
            detections,
            epoch_callback,
            masked_accuracy,
            masked_argmax,
        )

        train_set = TextPieces(texts["train"], tokenizer, cfg.block_size, cfg.min_block_tokens, cfg.whole_word_mask)
        pieces = TextPieces(texts["validation"], tokenizer, cfg.block_size, cfg.min_block_tokens, cfg.whole_word_mask)
        electra = cfg.objective == "electra"
        collator = MaskingCollator(tokenizer, cfg.mlm_probability, cfg.whole_word_mask, cfg.seed, electra)
        fixed = MaskingCollator(tokenizer, cfg.mlm_probability, cfg.whole_word_mask, EVALUATION_MASK_SEED, electra)
        eval_set = MaskedPieces(pieces, fixed)
        metrics = (detection_accuracy, detections) if electra else (masked_accuracy, masked_argmax)
        return Prepared(
            train_dataset=train_set,
            eval_dataset=eval_set,
            data_collator=collator,
            arguments=dict(**evaluations_by_steps(cfg, len(train_set)), train_sampling_strategy="group_by_length"),
            train_counts=dict(texts=len(texts["train"]), sequences=len(train_set), tokens=train_set.num_tokens()),
            tokens_per_epoch=train_set.num_tokens(),
            metrics=dict(objective=cfg.objective, vocabulary=len(tokenizer)),
            plot={"validation loss": "eval_loss", "validation accuracy": "eval_accuracy"},
            trainer_kwargs=dict(
                compute_metrics=metrics[0],
                preprocess_logits_for_metrics=metrics[1],
                callbacks=[epoch_callback(collator)],
            ),
            state=dict(collator=collator),
        )

    def evaluate_splits(self, cfg: PretrainingConfig, model, tokenizer, texts, prepared: Prepared, out: Path):
        from fastformer.tasks.pretrain.pretraining import masked_lm_scores, replaced_token_scores

        score = replaced_token_scores if cfg.objective == "electra" else masked_lm_scores
        scores = score(model, prepared.eval_dataset, prepared.state["collator"])
        scores["texts"] = len(texts["validation"])
        return dict(validation=scores)

    def describe(self, cfg: PretrainingConfig, texts) -> dict[str, Any]:
        return dict(texts={name: len(items) for name, items in texts.items()})

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return dict(
            validation=metrics.get("validation"), decontamination=metrics.get("data", {}).get("decontamination")
        )

    # --- the commands on a trained folder ---
