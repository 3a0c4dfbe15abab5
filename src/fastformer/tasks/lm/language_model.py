"""The language-model task's torch code (its `Task` class is task.py's): the documents read, the token blocks, the
causal Fastformer (or GPT-2 baseline) built, perplexity, and a trained folder loaded to continue prompts.

Documents are tokenized, joined with the separator token and cut into blocks of `block_size` tokens (the usual
"group texts" scheme), so every training and evaluation token counts the same.
"""

from __future__ import annotations

import json
import math
from itertools import islice
from pathlib import Path

import torch

from fastformer.engine.splits import hold_out, limit_splits
from fastformer.tasks.lm.config import LanguageModelingConfig

# The language model's defaults (overridable with `model`): GPT-style pre-LN blocks, independent layers and no
# query-value sharing, so that the Fastformer and the GPT-2 baseline have the same parameters but for the attention.


def load_documents(cfg: LanguageModelingConfig) -> dict[str, list[str]]:
    """train / validation documents as the config says."""
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


def split_source(cfg: LanguageModelingConfig, split: str) -> str:
    """How a refusal names a split's documents: the flag and file, or the held-out share of --train."""
    if split == "train":
        return f"--train {cfg.train}"
    if cfg.validation:
        return f"--validation {cfg.validation}"
    return (
        f"the validation documents held out of --train {cfg.train} (--validation-fraction {cfg.validation_fraction:g})"
    )


class TokenBlocks(torch.utils.data.Dataset):
    """Documents tokenized, joined by `separator_id` and cut into blocks of `block_size` (the tail is dropped)."""

    def __init__(self, documents: list[str], tokenizer, block_size: int, separator_id: int, source: str | None = None):
        """`source`: how an error names the documents (a run's `split_source`, the file `evaluate` reads)."""
        ids: list[int] = []
        # verbose=False: documents longer than the tokenizer's model_max_length are cut into blocks here, on purpose
        for doc_ids in tokenizer(documents, add_special_tokens=False, verbose=False)["input_ids"]:
            ids.extend(doc_ids)
            ids.append(separator_id)
        usable = len(ids) // block_size * block_size
        if usable == 0:
            counted = f"{len(ids)} tokens ({len(documents)} document{'s' if len(documents) != 1 else ''})"
            where = f"{source}: " if source else ""
            raise ValueError(f"{where}{counted} are fewer than one block of --block-size {block_size}")
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
