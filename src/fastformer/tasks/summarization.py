"""Abstractive summarization end to end: read document / summary pairs, train FastformerForConditionalGeneration on
the Hugging Face Trainer (checkpoints, resume, torchrun), summarize with `generate()` (beam search), score with
ROUGE and bootstrap confidence intervals, save a `save_pretrained` folder with metrics.json and the summaries.

`architecture`: "fastformer" (the Fastformer encoder), "softmax" (the same model with a softmax Transformer encoder;
the paper truncates its input at 512 tokens) or "lead3" (the first three sentences of the document; no training).
The best checkpoint is chosen by validation loss (generating every epoch would cost more than the training on CPU);
ROUGE is computed on the validation and test sets at the end.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from fastformer.data.summarization import Pair, lead, read_pairs
from fastformer.metrics.rouge import rouge
from fastformer.tasks.common import (
    CHECKPOINTS,
    dataclass_from_dict,
    hold_out,
    is_main_process,
    last_complete_checkpoint,
    limit_splits,
    run_tokenizer,
    save_run,
    training_arguments,
)

ARCHITECTURES = ("fastformer", "softmax", "lead3")


@dataclass
class SummarizationConfig:
    """Everything a summarization run depends on; saved as run_config.json beside the model."""

    train: str | None = None
    validation: str | None = None  # None: hold out validation_fraction of train (or use `split`)
    test: str | None = None
    format: str | None = None  # csv, jsonl or cohan (default: from the file)
    source_field: str | None = None  # default: article (csv / jsonl), article_text (cohan)
    target_field: str | None = None  # default: highlights (csv / jsonl), abstract_text (cohan)
    train_where: dict[str, str] | None = None
    validation_where: dict[str, str] | None = None
    test_where: dict[str, str] | None = None
    # [train, validation, test] sizes taken in file order from the one `train` file (SumPubMed: 4000 500 500)
    split: list[int] | None = None
    validation_fraction: float = 0.1
    max_train_examples: int | None = None
    max_eval_examples: int | None = None
    tokenizer: str | None = None
    vocab_size: int = 30000
    max_source_length: int = 2048
    max_target_length: int = 256
    preset: str = "paper"
    architecture: str = "fastformer"
    model: dict[str, Any] = field(default_factory=dict)  # FastformerConfig overrides (encoder and decoder sizes)
    epochs: float = 3
    batch_size: int = 32
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    warmup: float = 0.0
    scheduler: str = "linear"
    max_grad_norm: float = 1.0
    seed: int = 42
    logging_steps: int = 20
    # generation (the paper: beam 5)
    num_beams: int = 5
    length_penalty: float = 1.0
    no_repeat_ngram_size: int = 3
    min_new_tokens: int = 0
    eval_batch_size: int = 16
    bootstrap_samples: int = 1000
    rouge_splits: list[str] = field(default_factory=lambda: ["validation", "test"])  # splits summarized and scored
    output_dir: str = "runs/summarization"
    resume: bool = False
    progress: bool = True

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SummarizationConfig:
        cfg = dataclass_from_dict(cls, values)
        if cfg.train is None and cfg.architecture != "lead3":
            raise ValueError("summarization needs --train: a file of document / summary pairs")
        if cfg.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {cfg.architecture!r}")
        if cfg.split is not None and (len(cfg.split) != 3 or cfg.validation or cfg.test):
            raise ValueError("split takes three sizes [train, validation, test] of the one train file")
        return cfg


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
        self.input_ids = tokenizer([p.source for p in pairs], max_length=max_source_length, **encode)["input_ids"]
        targets = tokenizer([p.target for p in pairs], max_length=max_target_length - 1, **encode)["input_ids"]
        self.labels = [t + [tokenizer.sep_token_id] for t in targets]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids[i], "labels": self.labels[i]}

    def num_tokens(self) -> tuple[int, int]:
        """(source tokens, target tokens) of one pass over the data."""
        return sum(map(len, self.input_ids)), sum(map(len, self.labels))


@torch.no_grad()
def summarize(model, tokenizer, documents: list[str], cfg: SummarizationConfig | None = None, **gen) -> list[str]:
    """Summaries of `documents` with the generation settings of `cfg` (beam search by default; `gen` overrides
    them, e.g. num_beams=1 for greedy), in batches of documents of similar length."""
    cfg = cfg or SummarizationConfig(train="-")
    settings = dict(
        num_beams=cfg.num_beams,
        length_penalty=cfg.length_penalty,
        no_repeat_ngram_size=cfg.no_repeat_ngram_size,
        min_new_tokens=cfg.min_new_tokens,
        max_new_tokens=model.config.max_target_positions - 1,
    )
    settings.update(gen)
    if settings["num_beams"] > 1:
        settings.setdefault("early_stopping", True)  # a beam is done at EOS
    max_source = model.config.max_position_embeddings
    model.eval()
    device = next(model.parameters()).device
    ids = tokenizer(documents, truncation=True, max_length=max_source, add_special_tokens=False)["input_ids"]
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
    return out


def evaluate_pairs(pairs: list[Pair], predictions: list[str], cfg: SummarizationConfig, seconds: float):
    """ROUGE with confidence intervals, and per-pair rows for the summaries file."""
    scores = rouge(predictions, [p.target for p in pairs], bootstrap_samples=cfg.bootstrap_samples, seed=cfg.seed)
    metrics = dict(rouge=scores, examples=len(pairs), seconds=round(seconds, 2))
    rows = [dict(source=p.origin, summary=s, reference=p.target) for p, s in zip(pairs, predictions, strict=True)]
    return metrics, rows


def _write_rows(path: Path, rows: list[dict]) -> None:
    with path.open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def run_lead3(cfg: SummarizationConfig, splits: dict[str, list[Pair]], skipped: dict[str, list[str]]) -> dict:
    output_dir = Path(cfg.output_dir)
    metrics: dict[str, Any] = dict(architecture="lead3", skipped_empty_rows={p: len(r) for p, r in skipped.items()})
    for name in ("validation", "test"):
        if name in splits:
            start = time.perf_counter()
            predictions = [lead(p, 3) for p in splits[name]]
            metrics[name], rows = evaluate_pairs(splits[name], predictions, cfg, time.perf_counter() - start)
            _write_rows(output_dir / f"summaries_{name}.jsonl", rows)
    (output_dir / "run_config.json").write_text(json.dumps(asdict(cfg), indent=2))
    (output_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return metrics


def train(cfg: SummarizationConfig) -> dict[str, Any]:
    """Train, keep the best checkpoint by validation loss, summarize validation and test, score, save."""
    from transformers import DataCollatorForSeq2Seq, Trainer, set_seed

    from fastformer.models.fastformer import FastformerConfig, FastformerForConditionalGeneration

    output_dir = Path(cfg.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    set_seed(cfg.seed)
    splits, skipped = load_splits(cfg)
    if cfg.architecture == "lead3":
        return run_lead3(cfg, splits, skipped)
    texts = (text for p in splits["train"] for text in (p.source, p.target))
    tokenizer = run_tokenizer(cfg, texts, output_dir)
    train_set = PairDataset(splits["train"], tokenizer, cfg.max_source_length, cfg.max_target_length)
    eval_set = PairDataset(splits["validation"], tokenizer, cfg.max_source_length, cfg.max_target_length)

    model_fields = dict(
        vocab_size=len(tokenizer),
        max_position_embeddings=cfg.max_source_length,
        max_target_positions=cfg.max_target_length,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.cls_token_id,
        attention_type="softmax" if cfg.architecture == "softmax" else "fastformer",
    )
    config = FastformerConfig.from_preset(cfg.preset, **{**model_fields, **cfg.model})
    model = FastformerForConditionalGeneration(config)
    if is_main_process():
        (output_dir / "run_config.json").write_text(json.dumps(asdict(cfg), indent=2))
    args = training_arguments(
        cfg, eval_strategy="epoch", save_strategy="epoch", metric_for_best_model="loss", greater_is_better=False
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=eval_set,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100),
        processing_class=tokenizer,
    )
    resume_from = last_complete_checkpoint(output_dir / CHECKPOINTS) if cfg.resume else None
    start = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    seconds = time.perf_counter() - start
    runtime = result.metrics.get("train_runtime")
    source_tokens, target_tokens = train_set.num_tokens()
    metrics: dict[str, Any] = dict(
        architecture=cfg.architecture,
        train=dict(
            examples=len(train_set),
            epochs=cfg.epochs,
            seconds=round(seconds, 2),
            train_runtime=runtime,
            source_tokens_per_s=round(source_tokens * cfg.epochs / runtime, 1) if runtime else None,
            tokens_per_s=round((source_tokens + target_tokens) * cfg.epochs / runtime, 1) if runtime else None,
            final_loss=result.training_loss,
            resumed_from=str(resume_from) if resume_from else None,
            best_checkpoint=trainer.state.best_model_checkpoint,
        ),
        parameters=sum(p.numel() for p in model.parameters()),
        skipped_empty_rows={path: len(rows) for path, rows in skipped.items()},
    )
    if not is_main_process():
        return metrics
    model = trainer.model
    for name in cfg.rouge_splits:
        if name in splits:
            start = time.perf_counter()
            predictions = summarize(model, tokenizer, [p.source for p in splits[name]], cfg)
            metrics[name], rows = evaluate_pairs(splits[name], predictions, cfg, time.perf_counter() - start)
            _write_rows(output_dir / f"summaries_{name}.jsonl", rows)
    save_run(trainer, tokenizer, output_dir, metrics, {"validation loss": "eval_loss"})
    return metrics


def load_model(model_dir: str | Path):
    """(model, tokenizer) of a folder written by `fastformer train summarize`."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)

    model = AutoModelForSeq2SeqLM.from_pretrained(str(model_dir)).eval()
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def generation_settings(model_dir: str | Path) -> SummarizationConfig:
    """The run's settings (beam size, length penalty, ...) from its run_config.json, or the defaults."""
    path = Path(model_dir) / "run_config.json"
    return SummarizationConfig.from_dict(json.loads(path.read_text())) if path.is_file() else SummarizationConfig()
