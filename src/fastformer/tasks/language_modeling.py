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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from fastformer.tasks.common import (
    CHECKPOINTS,
    dataclass_from_dict,
    hold_out,
    is_main_process,
    last_complete_checkpoint,
    run_tokenizer,
    save_run,
    training_arguments,
)

ARCHITECTURES = ("fastformer", "gpt2")

# The language model's defaults (overridable with `model`): GPT-style pre-LN blocks, independent layers and no
# query-value sharing, so that the Fastformer and the GPT-2 baseline have the same parameters but for the attention.
LM_MODEL_DEFAULTS = dict(
    hidden_size=256,
    num_hidden_layers=4,
    num_attention_heads=16,
    intermediate_size=1024,
    hidden_dropout_prob=0.1,
    norm_position="pre",
    layer_sharing=False,
    query_value_sharing=False,
    embedding_layer_norm=False,
    layer_norm_eps=1e-5,
)


@dataclass
class LanguageModelingConfig:
    """Everything a language-modelling run depends on; saved as run_config.json beside the model."""

    train: str | None = None
    validation: str | None = None  # None: hold out validation_fraction of the training documents
    text_field: str | None = None
    format: str | None = None  # jsonl, csv, tsv or txt (default: from the file name)
    train_where: dict[str, str] | None = None
    validation_where: dict[str, str] | None = None
    validation_fraction: float = 0.05
    max_train_texts: int | None = None
    max_eval_texts: int | None = None
    tokenizer: str | None = None
    vocab_size: int = 8000
    block_size: int = 256
    architecture: str = "fastformer"  # or "gpt2": transformers' GPT2LMHeadModel, softmax attention (SDPA)
    preset: str = "paper"
    model: dict[str, Any] = field(default_factory=dict)  # config overrides (FastformerConfig field names)
    epochs: float = 1
    max_steps: int = -1  # > 0 overrides epochs
    batch_size: int = 16  # global, split over processes
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.05
    scheduler: str = "cosine"
    max_grad_norm: float = 1.0
    seed: int = 42
    logging_steps: int = 20
    evaluations: int = 4  # validation passes during training (the best one is kept)
    output_dir: str = "runs/lm"
    resume: bool = False
    progress: bool = True

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> LanguageModelingConfig:
        cfg = dataclass_from_dict(cls, values)
        if cfg.train is None:
            raise ValueError("language modelling needs --train (a JSON Lines, CSV/TSV or text file of documents)")
        if cfg.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {cfg.architecture!r}")
        return cfg


def load_documents(cfg: LanguageModelingConfig) -> dict[str, list[str]]:
    """train / validation documents as the config says."""
    from fastformer.data.text_corpus import read_texts

    read = dict(text_field=cfg.text_field, format=cfg.format)
    train = list(read_texts(cfg.train, where=cfg.train_where, **read))
    if cfg.validation:
        validation = list(read_texts(cfg.validation, where=cfg.validation_where, **read))
    else:
        validation, train = hold_out(train, cfg.validation_fraction, cfg.seed)
    if cfg.max_train_texts:
        train = train[: cfg.max_train_texts]
    if cfg.max_eval_texts:
        validation = validation[: cfg.max_eval_texts]
    return dict(train=train, validation=validation)


class TokenBlocks(torch.utils.data.Dataset):
    """Documents tokenized, joined by `separator_id` and cut into blocks of `block_size` (the tail is dropped)."""

    def __init__(self, documents: list[str], tokenizer, block_size: int, separator_id: int):
        ids: list[int] = []
        for doc_ids in tokenizer(documents, add_special_tokens=False)["input_ids"]:
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
    """A FastformerForCausalLM or, for architecture "gpt2", a GPT2LMHeadModel of the same sizes.

    The separator between documents is also the begin- and end-of-sequence token."""
    fields_ = dict(LM_MODEL_DEFAULTS)
    fields_.update(
        vocab_size=vocab_size,
        max_position_embeddings=cfg.block_size,
        pad_token_id=pad_token_id,
        bos_token_id=separator_id,
        eos_token_id=separator_id,
    )
    fields_.update(cfg.model)
    if cfg.architecture == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            vocab_size=fields_["vocab_size"],
            n_positions=fields_["max_position_embeddings"],
            n_embd=fields_["hidden_size"],
            n_layer=fields_["num_hidden_layers"],
            n_head=fields_["num_attention_heads"],
            n_inner=fields_["intermediate_size"],
            activation_function="gelu",
            resid_pdrop=fields_["hidden_dropout_prob"],
            embd_pdrop=fields_["hidden_dropout_prob"],
            attn_pdrop=fields_["hidden_dropout_prob"],
            layer_norm_epsilon=fields_["layer_norm_eps"],
            pad_token_id=fields_["pad_token_id"],
            bos_token_id=fields_["bos_token_id"],
            eos_token_id=fields_["eos_token_id"],
        )
        config._attn_implementation = "sdpa"  # torch scaled_dot_product_attention, as the benchmark baseline
        return GPT2LMHeadModel(config)
    from fastformer.models.fastformer import FastformerConfig, FastformerForCausalLM

    return FastformerForCausalLM(FastformerConfig.from_preset(cfg.preset, **fields_, causal=True))


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


def build_trainer(cfg: LanguageModelingConfig, model, tokenizer, train_set, eval_set):
    from transformers import Trainer, default_data_collator

    steps_per_epoch = math.ceil(len(train_set) / cfg.batch_size)
    total_steps = cfg.max_steps if cfg.max_steps > 0 else math.ceil(cfg.epochs * steps_per_epoch)
    every = max(1, math.ceil(total_steps / max(1, cfg.evaluations)))
    args = training_arguments(
        cfg,
        max_steps=cfg.max_steps,
        eval_strategy="steps",
        eval_steps=every,
        save_strategy="steps",
        save_steps=every,
        metric_for_best_model="loss",
        greater_is_better=False,
    )
    return Trainer(
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=eval_set,
        data_collator=default_data_collator,
        processing_class=tokenizer,
    )


def train(cfg: LanguageModelingConfig) -> dict[str, Any]:
    """Train, keep the checkpoint with the lowest validation loss, measure perplexity, save. Returns the metrics."""
    from transformers import set_seed

    output_dir = Path(cfg.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    set_seed(cfg.seed)
    documents = load_documents(cfg)
    tokenizer = run_tokenizer(cfg, documents["train"], output_dir)
    separator = tokenizer.sep_token_id
    train_set = TokenBlocks(documents["train"], tokenizer, cfg.block_size, separator)
    eval_set = TokenBlocks(documents["validation"], tokenizer, cfg.block_size, separator)
    model = build_model(cfg, len(tokenizer), tokenizer.pad_token_id, separator)
    if is_main_process():
        (output_dir / "run_config.json").write_text(json.dumps(asdict(cfg), indent=2))

    trainer = build_trainer(cfg, model, tokenizer, train_set, eval_set)
    resume_from = last_complete_checkpoint(output_dir / CHECKPOINTS) if cfg.resume else None
    result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    runtime = result.metrics.get("train_runtime")
    steps = trainer.state.global_step
    metrics: dict[str, Any] = dict(
        architecture=cfg.architecture,
        parameters=sum(p.numel() for p in model.parameters()),
        train=dict(
            documents=len(documents["train"]),
            blocks=len(train_set),
            steps=steps,
            tokens_seen=steps * cfg.batch_size * cfg.block_size,
            train_runtime=runtime,
            tokens_per_s=round(steps * cfg.batch_size * cfg.block_size / runtime, 1) if runtime else None,
            final_loss=result.training_loss,
            resumed_from=str(resume_from) if resume_from else None,
            best_checkpoint=trainer.state.best_model_checkpoint,
        ),
    )
    if not is_main_process():
        return metrics
    model = trainer.model
    start = time.perf_counter()
    metrics["validation"] = perplexity(model, eval_set, cfg.batch_size)
    metrics["validation"]["seconds"] = round(time.perf_counter() - start, 2)
    metrics["validation"]["documents"] = len(documents["validation"])
    save_run(trainer, tokenizer, output_dir, metrics)
    return metrics


def load_generator(model_dir: str | Path):
    """(model in eval mode, tokenizer) of a trained folder: a Fastformer or any AutoModelForCausalLM."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)

    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    tokenizer.padding_side = "left"  # decoding continues from the last column
    return model, tokenizer


def generate_texts(model_dir: str | Path, prompts: list[str], **generate_kwargs) -> list[str]:
    """Continuations of each prompt (new text only), with `generate()` and its usual arguments."""
    model, tokenizer = load_generator(model_dir)
    batch = tokenizer(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            pad_token_id=tokenizer.pad_token_id,
            **generate_kwargs,
        )
    return tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
