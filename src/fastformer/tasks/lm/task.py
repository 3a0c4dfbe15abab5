"""Causal language modelling end to end: read documents, train a tokenizer, train a causal Fastformer (or the
GPT-2 softmax baseline of the same size, in the same pipeline) with the Hugging Face Trainer, report perplexity,
save a `save_pretrained` folder that `AutoModelForCausalLM` loads and `generate()` continues.

Documents are tokenized, joined with the separator token and cut into blocks of `block_size` tokens (the usual
"group texts" scheme), so every training and evaluation token counts the same.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import torch

from fastformer.engine.skeleton import Prepared, Task, run_task
from fastformer.engine.splits import hold_out, limit_splits
from fastformer.engine.training import evaluations_by_steps
from fastformer.tasks.lm.config import LanguageModelingConfig

# The language model's defaults (overridable with `model`): GPT-style pre-LN blocks, independent layers and no
# query-value sharing, so that the Fastformer and the GPT-2 baseline have the same parameters but for the attention.


def load_documents(cfg: LanguageModelingConfig) -> dict[str, list[str]]:
    """train / validation documents as the config says."""
    from itertools import islice

    from fastformer.data.text_corpus import read_texts

    read = dict(text_field=cfg.text_field, format=cfg.format)
    # the limits keep the first documents: with a validation file, read no further (a hold-out needs them all)
    train = list(
        islice(read_texts(cfg.train, where=cfg.train_where, **read), cfg.max_train_texts if cfg.validation else None)
    )
    if cfg.validation:
        validation = list(islice(read_texts(cfg.validation, where=cfg.validation_where, **read), cfg.max_eval_texts))
    else:
        validation, train = hold_out(train, cfg.validation_fraction, cfg.seed)
    return limit_splits(dict(train=train, validation=validation), cfg.max_train_texts, cfg.max_eval_texts)


class TokenBlocks(torch.utils.data.Dataset):
    """Documents tokenized, joined by `separator_id` and cut into blocks of `block_size` (the tail is dropped)."""

    def __init__(self, documents: list[str], tokenizer, block_size: int, separator_id: int):
        ids: list[int] = []
        # verbose=False: documents longer than the tokenizer's model_max_length are cut into blocks here, on purpose
        for doc_ids in tokenizer(documents, add_special_tokens=False, verbose=False)["input_ids"]:
            ids.extend(doc_ids)
            ids.append(separator_id)
        usable = len(ids) // block_size * block_size
        if usable == 0:
            raise ValueError(f"{len(ids)} tokens are fewer than one block of {block_size}")
        self.blocks = torch.tensor(ids[:usable], dtype=torch.long).view(-1, block_size)

    def __len__(self) -> int:
        return self.blocks.shape[0]

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]}

    def num_tokens(self) -> int:
        return self.blocks.numel()


def build_model(cfg: LanguageModelingConfig, vocab_size: int, pad_token_id: int, separator_id: int):
    """A FastformerForCausalLM (with softmax attention for architecture "softmax") or, for "gpt2", a GPT2LMHeadModel
    of the same sizes.

    The separator between documents is also the begin- and end-of-sequence token."""
    from fastformer.models.language_models import LM_MODEL_DEFAULTS, causal_language_model

    fields_ = dict(LM_MODEL_DEFAULTS)
    fields_.update(
        vocab_size=vocab_size,
        max_position_embeddings=cfg.block_size,
        pad_token_id=pad_token_id,
        bos_token_id=separator_id,
        eos_token_id=separator_id,
    )
    fields_.update(cfg.model)
    return causal_language_model(cfg.architecture, cfg.preset, **fields_)


@torch.no_grad()
def perplexity(model, dataset: TokenBlocks, batch_size: int = 16) -> dict[str, float]:
    """Mean next-token cross-entropy over every block (equal-length blocks: a token mean) and its exp."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(dataset), batch_size):
        ids = dataset.blocks[start : start + batch_size]
        loss = model(input_ids=ids, labels=ids).loss
        n = ids.shape[0] * (ids.shape[1] - 1)
        total, count = total + float(loss) * n, count + n
    mean = total / count
    return dict(loss=round(mean, 5), perplexity=round(math.exp(mean), 3), tokens=count)


class LanguageModelingTask(Task):
    name = "lm"
    config_class = LanguageModelingConfig

    def load_data(self, cfg: LanguageModelingConfig, report: dict[str, Any]):
        documents = load_documents(cfg)
        if cfg.init_from:  # refused before the run folder is touched
            from fastformer.engine.init_from import continuing_config, pretrained_tokenizer

            tokenizer = pretrained_tokenizer(cfg.init_from, cfg.tokenizer)
            continuing_config(cfg.init_from, cfg.model, cfg.architecture, tokenizer, cfg.block_size)
        return documents

    def tokenizer_texts(self, cfg: LanguageModelingConfig, documents):
        return documents["train"]

    def prepare(self, cfg: LanguageModelingConfig, documents, tokenizer, out: Path) -> Prepared:
        from transformers import default_data_collator

        separator = tokenizer.sep_token_id
        train_set = TokenBlocks(documents["train"], tokenizer, cfg.block_size, separator)
        eval_set = TokenBlocks(documents["validation"], tokenizer, cfg.block_size, separator)
        origin = None
        if cfg.init_from:  # continued pretraining: every weight from the folder, a fresh optimizer
            from fastformer.engine.init_from import continuing_config, load_whole, origin_report
            from fastformer.models.fastformer import FastformerForCausalLM

            config = continuing_config(cfg.init_from, cfg.model, cfg.architecture, tokenizer, cfg.block_size)
            model = load_whole(FastformerForCausalLM, cfg.init_from, config)
            origin = origin_report(cfg.init_from, [])
        else:
            model = build_model(cfg, len(tokenizer), tokenizer.pad_token_id, separator)
        return Prepared(
            model=model,
            train_dataset=train_set,
            eval_dataset=eval_set,
            data_collator=default_data_collator,
            arguments=evaluations_by_steps(cfg, len(train_set)),
            train_counts=dict(documents=len(documents["train"]), blocks=len(train_set)),
            tokens_per_epoch=train_set.num_tokens(),
            plot={"validation loss": "eval_loss"},
            metrics={"init_from": origin} if origin else {},
        )

    def evaluate(self, cfg: LanguageModelingConfig, model, tokenizer, documents, prepared: Prepared, out: Path):
        start = time.perf_counter()
        validation = perplexity(model, prepared.eval_dataset, cfg.batch_size)
        validation.update(seconds=round(time.perf_counter() - start, 2), documents=len(documents["validation"]))
        return dict(validation=validation)

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return dict(validation=metrics.get("validation"))


TASK = LanguageModelingTask()


def train(cfg: LanguageModelingConfig) -> dict[str, Any]:
    """Train, keep the checkpoint with the lowest validation loss, measure perplexity, save. Returns the metrics."""
    return run_task(TASK, cfg)


def export_model(model_dir: str | Path, architecture: str | None):
    """The model `fastformer export` traces: the Fastformer LM (None for the softmax baselines, not exported here:
    the exported decode step carries the Fastformer's state)."""
    return None if architecture not in (None, "fastformer") else load_generator(model_dir)[0]


def generation_export(model) -> dict[str, Any]:
    """`fastformer export`'s generate-ready pair: prefill and one-token decode programs, the state's names, what the
    decode step takes."""
    from fastformer.models.fastformer import exportable

    return dict(
        programs=exportable.export_causal_lm(model),
        state=exportable.state_names(model.config.num_hidden_layers),
        inputs="(input_ids (B, 1), *state)",
    )


def load_generator(model_dir: str | Path):
    """(model in eval mode, tokenizer) of a trained folder: a Fastformer or any AutoModelForCausalLM."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)

    saved = json.loads((Path(model_dir) / "config.json").read_text()).get("architectures") or []
    if saved and not any(name.endswith(("ForCausalLM", "LMHeadModel")) for name in saved):
        # loading would keep the encoder and start a random next-token head: text out of noise, exit 0
        raise ValueError(
            f"{model_dir}: holds a {saved[0]}, not a causal language model (`fastformer train lm` trains one)"
        )
    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    tokenizer.padding_side = "left"  # decoding continues from the last column
    return model, tokenizer


def generate_texts(model_dir: str | Path, prompts: list[str], **generate_kwargs) -> list[str]:
    """Continuations of each prompt (new text only), with `generate()` and its usual arguments."""
    return continue_texts(*load_generator(model_dir), prompts, **generate_kwargs)


def continue_texts(model, tokenizer, prompts: list[str], **generate_kwargs) -> list[str]:
    """Continuations of each prompt with a loaded model (left padding)."""
    batch = tokenizer(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            pad_token_id=tokenizer.pad_token_id,
            **generate_kwargs,
        )
    return tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)


# --- the commands on a trained folder (engine/verbs.py) ---


def evaluate_folder(model_dir: str | Path, architecture: str | None, settings, output: Path) -> dict[str, Any]:
    """Perplexity of a trained folder on a file of documents (`settings`: LanguageModelEvaluation; the first
    `max_examples`: read no further), in blocks of `max_length` tokens (default: the model's positions)."""
    import time
    from itertools import islice

    from fastformer.data.text_corpus import read_texts

    documents = read_texts(settings.data, text_field=settings.text_field, format=settings.format, where=settings.where)
    documents = list(islice(documents, settings.max_examples))
    model, tokenizer = load_generator(model_dir)
    block = settings.max_length or getattr(model.config, "max_position_embeddings", None) or model.config.n_positions
    start = time.perf_counter()
    metrics = perplexity(model, TokenBlocks(documents, tokenizer, block, tokenizer.sep_token_id))
    return dict(**metrics, documents=len(documents), block_size=block, seconds=round(time.perf_counter() - start, 2))


def headline(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: metrics[k] for k in ("documents", "loss", "perplexity") if k in metrics}


def predictor(model_dir: str | Path, architecture: str | None, settings):
    """The folder's language model loaded once: prompts -> their continuation each (`settings.max_new_tokens`)."""
    model, tokenizer = load_generator(model_dir)
    return lambda texts: [
        dict(continuation=c) for c in continue_texts(model, tokenizer, texts, max_new_tokens=settings.max_new_tokens)
    ]


def explained_model(model_dir: str | Path, architecture: str | None):
    """(model, tokenizer, generate settings) that `fastformer explain` reads the weights of."""
    model, tokenizer = load_generator(model_dir)
    return model, tokenizer, {}
