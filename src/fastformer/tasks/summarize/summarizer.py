"""The summarization task's torch code (its `Task` class is task.py's): the pairs read and encoded, summaries with
`generate()` (beam search), ROUGE with bootstrap confidence intervals, Lead-3, and a trained folder loaded with the
run's generation settings.

`architecture`: "fastformer" (the Fastformer encoder), "softmax" (the same model with a softmax Transformer encoder;
the paper truncates its input at 512 tokens) or "lead3" (the first three sentences of the document; no training).
The best checkpoint is chosen by validation loss (generating every epoch would cost more than the training on CPU);
ROUGE is computed on the validation and test sets at the end.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from fastformer.data.summarization import Pair, lead, read_pairs
from fastformer.engine.outputs import write_jsonl
from fastformer.engine.skeleton import release_freed_memory
from fastformer.engine.splits import hold_out, limit_splits
from fastformer.metrics.repetition import repetition
from fastformer.metrics.rouge import rouge
from fastformer.tasks.summarize.config import SummarizationConfig


def load_splits(cfg: SummarizationConfig) -> tuple[dict[str, list[Pair]], dict[str, list[str]]]:
    """(splits, {file: rows skipped because their document or summary is empty})."""
    fields = dict(source_field=cfg.source_field, target_field=cfg.target_field, format=cfg.format)
    skipped: dict[str, list[str]] = {}

    def read(path, where):
        pairs = read_pairs(path, where=where, **fields)
        skipped[str(path)] = pairs.skipped_empty
        return pairs

    splits: dict[str, list[Pair]] = {}
    if cfg.train:
        splits["train"] = read(cfg.train, cfg.train_where)
    if cfg.split:
        pairs, (n_train, n_val, n_test) = splits["train"], cfg.split
        if n_train + n_val + n_test > len(pairs):
            raise ValueError(f"split {cfg.split} needs {sum(cfg.split)} pairs; {cfg.train} has {len(pairs)}")
        splits = dict(
            train=pairs[:n_train], validation=pairs[n_train : n_train + n_val], test=pairs[n_train + n_val :][:n_test]
        )
    else:
        if cfg.validation:
            splits["validation"] = read(cfg.validation, cfg.validation_where)
        elif "train" in splits:
            splits["validation"], splits["train"] = hold_out(splits["train"], cfg.validation_fraction, cfg.seed)
        if cfg.test:
            splits["test"] = read(cfg.test, cfg.test_where)
    return limit_splits(splits, cfg.max_train_examples, cfg.max_eval_examples), skipped


class PairDataset(torch.utils.data.Dataset):
    """Token ids of documents (truncated to max_source_length) and summaries (max_target_length, then EOS)."""

    def __init__(self, pairs: list[Pair], tokenizer, max_source_length: int, max_target_length: int):
        self.pairs = pairs
        encode = dict(truncation=True, add_special_tokens=False)
        # documents with the tokenizer's own special tokens (none for a trained one; [CLS] ... [SEP] for a BERT's,
        # which a `convert-bert` encoder was trained to read); summaries without, EOS appended below
        self.input_ids = tokenizer([p.source for p in pairs], max_length=max_source_length, truncation=True)[
            "input_ids"
        ]
        targets = tokenizer([p.target for p in pairs], max_length=max_target_length - 1, **encode)["input_ids"]
        self.labels = [t + [tokenizer.sep_token_id] for t in targets]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids[i], "labels": self.labels[i]}

    def num_tokens(self) -> tuple[int, int]:
        """(source tokens, target tokens) of one pass over the data."""
        return sum(map(len, self.input_ids)), sum(map(len, self.labels))


def generate_kwargs(model, cfg: SummarizationConfig, **overrides) -> dict[str, Any]:
    """generate()'s arguments for summaries with the settings of `cfg` (`overrides` win), as `summarize` and
    `fastformer explain` use them."""
    settings = dict(
        num_beams=cfg.num_beams,
        length_penalty=cfg.length_penalty,
        no_repeat_ngram_size=cfg.no_repeat_ngram_size,
        min_new_tokens=cfg.min_new_tokens,
        max_new_tokens=model.config.max_target_positions - 1,
    )
    settings.update(overrides)
    if settings["num_beams"] > 1:
        settings.setdefault("early_stopping", True)  # a beam is done at EOS
    return settings


@torch.no_grad()
def source_length(model, cfg: SummarizationConfig) -> int:
    """Document tokens read, as the run read its documents: its --max-source-length (an --init-from encoder may have
    more positions), at most the encoder's positions."""
    return min(cfg.max_source_length, model.config.max_position_embeddings)


def summarize(model, tokenizer, documents: list[str], cfg: SummarizationConfig | None = None, **gen) -> list[str]:
    """Summaries of `documents` with the generation settings of `cfg` (beam search by default; `gen` overrides
    them, e.g. num_beams=1 for greedy), in batches of documents of similar length."""
    cfg = cfg or SummarizationConfig()  # the generation defaults
    settings = generate_kwargs(model, cfg, **gen)
    max_source = source_length(model, cfg)
    model.eval()
    device = next(model.parameters()).device
    ids = tokenizer(documents, truncation=True, max_length=max_source)["input_ids"]  # as PairDataset reads them
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[str] = [""] * len(ids)
    for start in range(0, len(order), cfg.eval_batch_size):
        chunk = order[start : start + cfg.eval_batch_size]
        batch = tokenizer.pad({"input_ids": [ids[i] for i in chunk]}, return_tensors="pt")
        generated = model.generate(
            input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device), **settings
        )
        for i, text in zip(chunk, tokenizer.batch_decode(generated, skip_special_tokens=True), strict=True):
            out[i] = text.strip()
        release_freed_memory()  # (batches grow in length: glibc would keep each smaller one's freed fragments)
    return out


def evaluate_pairs(pairs: list[Pair], predictions: list[str], cfg: SummarizationConfig, seconds: float):
    """ROUGE with confidence intervals, and per-pair rows for the summaries file."""
    scores = rouge(predictions, [p.target for p in pairs], bootstrap_samples=cfg.bootstrap_samples, seed=cfg.seed)
    # beside ROUGE, whether the output is degenerate (repeats), and the same counts of the references for scale
    metrics = dict(
        rouge=scores,
        repetition=repetition(predictions),
        reference_repetition=repetition([p.target for p in pairs]),
        examples=len(pairs),
        seconds=round(seconds, 2),
    )
    rows = [dict(source=p.origin, summary=s, reference=p.target) for p, s in zip(pairs, predictions, strict=True)]
    return metrics, rows


def run_lead3(cfg: SummarizationConfig, splits: dict[str, list[Pair]], out: Path, skipped) -> dict[str, Any]:
    """The Lead-3 baseline: the first three sentences of each document, scored as the models are."""
    metrics: dict[str, Any] = dict(architecture="lead3", skipped_empty_rows={p: len(r) for p, r in skipped.items()})
    for name in ("validation", "test"):
        if name in splits:
            start = time.perf_counter()
            predictions = [lead(p, 3) for p in splits[name]]
            metrics[name], rows = evaluate_pairs(splits[name], predictions, cfg, time.perf_counter() - start)
            write_jsonl(out / f"summaries_{name}.jsonl", rows)
    return metrics


def summarizer_head_fields(cfg: SummarizationConfig, tokenizer=None) -> dict[str, Any]:
    """The encoder-decoder's own config fields (beside the encoder's): the summary's positions and its special ids
    (the ids from `tokenizer`; without it, only what the checks before training need)."""
    fields: dict[str, Any] = dict(max_target_positions=cfg.max_target_length)
    if tokenizer is not None:
        fields.update(
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            decoder_start_token_id=tokenizer.cls_token_id,
        )
    return fields


def load_model(model_dir: str | Path):
    """(model, tokenizer) of a folder written by `fastformer train summarize`."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)

    model = AutoModelForSeq2SeqLM.from_pretrained(str(model_dir)).eval()
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def generation_settings(model_dir: str | Path) -> SummarizationConfig:
    """The run's settings (document length, beam size, length penalty, ...) from its run_config.json (a
    checkpoint's: its run's), or the defaults."""
    from fastformer.engine.folder import run_settings

    values = run_settings(model_dir)
    known = SummarizationConfig.__dataclass_fields__
    # only how the run read documents and generated is needed: the data paths of the run may be gone
    keep = (
        "max_source_length",
        "num_beams",
        "length_penalty",
        "no_repeat_ngram_size",
        "min_new_tokens",
        "eval_batch_size",
        "bootstrap_samples",
        "seed",
    )
    return SummarizationConfig(**{k: values[k] for k in keep if k in values and k in known})
