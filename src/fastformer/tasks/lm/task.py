"""Causal language modelling as one `Task` class: read documents, train a tokenizer, train a causal Fastformer (or
the GPT-2 softmax baseline of the same size, in the same pipeline), report perplexity, save a `save_pretrained`
folder that `AutoModelForCausalLM` loads and `generate()` continues; and the commands on a trained folder
(evaluate, predict, explain, export, generate). The token blocks, the model and generation are language_model.py's.
"""

from __future__ import annotations

import time
from itertools import islice
from pathlib import Path
from typing import Any, ClassVar

from fastformer.engine.skeleton import Prepared
from fastformer.engine.task import Task
from fastformer.engine.training import evaluations_by_steps
from fastformer.engine.verbs import TextExplanationSettings
from fastformer.tasks.lm.config import LanguageModelEvaluation, LanguageModelingConfig, LanguageModelPrediction


class LanguageModelingTask(Task):
    """Causal language modelling: a causal Fastformer or the GPT-2 softmax baseline of its size."""

    name = "lm"
    help = "causal language model (Fastformer or the GPT-2 baseline of the same size)"
    config_class = LanguageModelingConfig
    architectures = ("FastformerForCausalLM", "GPT2LMHeadModel")
    verbs: ClassVar[dict[str, type | None]] = dict(
        evaluate=LanguageModelEvaluation,
        predict=LanguageModelPrediction,
        explain=TextExplanationSettings,
        export=None,
        generate=None,
    )

    def load_data(self, cfg: LanguageModelingConfig, report: dict[str, Any]):
        from fastformer.tasks.lm.language_model import load_documents

        documents = load_documents(cfg)
        if cfg.init_from:  # refused before the run folder is touched
            from fastformer.engine.init_from import continuing_config, pretrained_tokenizer

            tokenizer = pretrained_tokenizer(cfg.init_from, cfg.tokenizer)
            continuing_config(cfg.init_from, cfg.model, cfg.architecture, tokenizer, cfg.block_size)
        return documents

    def tokenizer_texts(self, cfg: LanguageModelingConfig, documents):
        return documents["train"]

    def input_length(self, cfg: LanguageModelingConfig) -> int:
        return cfg.block_size

    def build_model(self, cfg: LanguageModelingConfig, documents, tokenizer):
        """A causal Fastformer or the GPT-2 baseline (language_model.build_model), or with --init-from continued
        pretraining: every weight from the folder (a fresh optimizer)."""
        if not cfg.init_from:
            from fastformer.tasks.lm.language_model import build_model

            return build_model(cfg, len(tokenizer), tokenizer.pad_token_id, tokenizer.sep_token_id), {}
        from fastformer.engine.init_from import continuing_config, load_whole, origin_report
        from fastformer.models.fastformer import FastformerForCausalLM

        config = continuing_config(cfg.init_from, cfg.model, cfg.architecture, tokenizer, cfg.block_size)
        model = load_whole(FastformerForCausalLM, cfg.init_from, config)
        return model, {"init_from": origin_report(cfg.init_from, [])}

    def prepare(self, cfg: LanguageModelingConfig, documents, tokenizer, model, out: Path) -> Prepared:
        from transformers import default_data_collator

        from fastformer.tasks.lm.language_model import TokenBlocks, split_source

        # (a split shorter than one block is refused here, still before the run begins and the folder changes)
        train_set, eval_set = (
            TokenBlocks(documents[split], tokenizer, cfg.block_size, tokenizer.sep_token_id, split_source(cfg, split))
            for split in ("train", "validation")
        )
        return Prepared(
            train_dataset=train_set,
            eval_dataset=eval_set,
            data_collator=default_data_collator,
            arguments=evaluations_by_steps(cfg, len(train_set)),
            train_counts=dict(documents=len(documents["train"]), blocks=len(train_set)),
            tokens_per_epoch=train_set.num_tokens(),
            plot={"validation loss": "eval_loss"},
        )

    def evaluate_splits(self, cfg: LanguageModelingConfig, model, tokenizer, documents, prepared: Prepared, out: Path):
        from fastformer.tasks.lm.language_model import perplexity

        start = time.perf_counter()
        validation = perplexity(model, prepared.eval_dataset, cfg.batch_size)
        validation.update(seconds=round(time.perf_counter() - start, 2), documents=len(documents["validation"]))
        return dict(validation=validation)

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return dict(validation=metrics.get("validation"))

    # --- the commands on a trained folder ---

    def export_model(self, model_dir: str | Path, architecture: str | None):
        """The model `fastformer export` traces: a causal model whose mixer keeps a decoding state (the exported
        decode step carries it); None for the others (the softmax and GPT-2 baselines read the whole prefix)."""
        from fastformer.tasks.lm.language_model import load_generator

        model = load_generator(model_dir)[0]
        return model if getattr(model.config, "keeps_decoding_state", False) else None

    def generation_export(self, model) -> dict[str, Any]:
        """`fastformer export`'s generate-ready pair: prefill and one-token decode programs, the state's names, what the
        decode step takes."""
        from fastformer.models.fastformer import exportable

        return dict(
            programs=exportable.export_causal_lm(model),
            state=exportable.state_names(exportable.template_cache(model)),
            inputs="(input_ids (B, 1), *state)",
        )

    def generate_texts(self, model_dir: str | Path, prompts: list[str], **generate_kwargs) -> list[str]:
        """Continuations of each prompt (new text only), with `generate()` and its usual arguments."""
        from fastformer.tasks.lm.language_model import continue_texts, load_generator

        return continue_texts(*load_generator(model_dir), prompts, **generate_kwargs)

    def evaluate_folder(
        self, model_dir: str | Path, architecture: str | None, settings, output: Path
    ) -> dict[str, Any]:
        """Perplexity of a trained folder on a file of documents (`settings`: LanguageModelEvaluation; the first
        `max_examples`: read no further), in blocks of `max_length` tokens (default: the run's --block-size, as it
        scored its splits; an --init-from model may have more positions)."""
        from fastformer.data.text_corpus import read_texts
        from fastformer.engine.folder import run_settings
        from fastformer.tasks.lm.language_model import TokenBlocks, load_generator, perplexity

        documents = read_texts(
            settings.data, text_field=settings.text_field, format=settings.format, where=settings.where
        )
        documents = list(islice(documents, settings.max_examples))
        model, tokenizer = load_generator(model_dir)
        positions = getattr(model.config, "max_position_embeddings", None) or model.config.n_positions
        block = settings.max_length or run_settings(model_dir).get("block_size") or positions
        start = time.perf_counter()
        metrics = perplexity(
            model, TokenBlocks(documents, tokenizer, block, tokenizer.sep_token_id, str(settings.data))
        )
        return dict(
            **metrics, documents=len(documents), block_size=block, seconds=round(time.perf_counter() - start, 2)
        )

    def headline(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {k: metrics[k] for k in ("documents", "loss", "perplexity") if k in metrics}

    def predictor(self, model_dir: str | Path, architecture: str | None, settings):
        """The folder's language model loaded once: prompts -> their continuation each (`settings.max_new_tokens`)."""
        from fastformer.tasks.lm.language_model import continue_texts, load_generator

        model, tokenizer = load_generator(model_dir)
        return lambda texts: [
            dict(continuation=c)
            for c in continue_texts(model, tokenizer, texts, max_new_tokens=settings.max_new_tokens)
        ]

    def explained_model(self, model_dir: str | Path, architecture: str | None):
        """(model, tokenizer, `explain` settings) that `fastformer explain` reads the weights of: at most a block of
        the run's training (--block-size; an --init-from model may have more positions)."""
        from fastformer.engine.folder import run_settings
        from fastformer.tasks.lm.language_model import load_generator

        model, tokenizer = load_generator(model_dir)
        return model, tokenizer, dict(max_length=run_settings(model_dir).get("block_size"))
