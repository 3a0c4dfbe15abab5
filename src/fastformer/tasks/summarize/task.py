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
from pathlib import Path
from typing import Any

import torch

from fastformer.data.summarization import Pair, lead, read_pairs
from fastformer.engine import inputs
from fastformer.engine.outputs import write_jsonl
from fastformer.engine.skeleton import Prepared, Task, release_freed_memory, run_task
from fastformer.engine.splits import hold_out, limit_splits
from fastformer.metrics.repetition import repetition
from fastformer.metrics.rouge import rouge
from fastformer.presets import mixer_of
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
def summarize(model, tokenizer, documents: list[str], cfg: SummarizationConfig | None = None, **gen) -> list[str]:
    """Summaries of `documents` with the generation settings of `cfg` (beam search by default; `gen` overrides
    them, e.g. num_beams=1 for greedy), in batches of documents of similar length."""
    cfg = cfg or SummarizationConfig()  # the generation defaults
    settings = generate_kwargs(model, cfg, **gen)
    max_source = model.config.max_position_embeddings
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


class SummarizationTask(Task):
    name = "summarize"
    config_class = SummarizationConfig

    def load_data(self, cfg: SummarizationConfig, report: dict[str, Any]):
        splits, skipped = load_splits(cfg)
        from fastformer.engine.init_from import check_start

        check_start(cfg, summarizer_head_fields(cfg), cfg.max_source_length)  # refused before the folder is touched
        return dict(splits=splits, skipped=skipped)

    def baseline(self, cfg: SummarizationConfig, data, out: Path, report: dict[str, Any]):
        return run_lead3(cfg, data["splits"], out, data["skipped"]) if cfg.architecture == "lead3" else None

    def tokenizer_texts(self, cfg: SummarizationConfig, data):
        return (text for p in data["splits"]["train"] for text in (p.source, p.target))

    def prepare(self, cfg: SummarizationConfig, data, tokenizer, out: Path) -> Prepared:
        from transformers import DataCollatorForSeq2Seq

        from fastformer.models.fastformer import FastformerConfig, FastformerForConditionalGeneration

        splits = data["splits"]
        train_set = PairDataset(splits["train"], tokenizer, cfg.max_source_length, cfg.max_target_length)
        eval_set = PairDataset(splits["validation"], tokenizer, cfg.max_source_length, cfg.max_target_length)
        origin = None
        if cfg.init_from:  # the pretrained encoder reads the documents; the decoder starts fresh
            from fastformer.engine.init_from import start_from

            model, origin = start_from(
                FastformerForConditionalGeneration,
                cfg,
                summarizer_head_fields(cfg, tokenizer),
                tokenizer,
                cfg.max_source_length,
            )
        else:
            model_fields = dict(
                vocab_size=len(tokenizer),
                max_position_embeddings=cfg.max_source_length,
                pad_token_id=tokenizer.pad_token_id,
                attention_type=mixer_of(cfg.architecture),  # (lead3 never gets here)
                **summarizer_head_fields(cfg, tokenizer),
            )
            config = FastformerConfig.from_preset(cfg.preset, **{**model_fields, **cfg.model})
            model = FastformerForConditionalGeneration(config)
        # one table for source, target and output layer: the vectors reach all three
        embeddings = inputs.embed_run_vectors(cfg, model, tokenizer)
        source_tokens, target_tokens = train_set.num_tokens()
        return Prepared(
            model=model,
            train_dataset=train_set,
            eval_dataset=eval_set,
            data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100),
            arguments=dict(
                eval_strategy="epoch", save_strategy="epoch", metric_for_best_model="loss", greater_is_better=False
            ),
            train_counts=dict(examples=len(train_set), source_tokens=source_tokens, target_tokens=target_tokens),
            tokens_per_epoch=source_tokens + target_tokens,
            metrics=dict(
                skipped_empty_rows={path: len(rows) for path, rows in data["skipped"].items()},
                inputs=inputs.inputs_report(cfg, tokenizer, Path(cfg.output_dir) / "tokenizer", embeddings),
                **({"init_from": origin} if origin else {}),
            ),
            plot={"validation loss": "eval_loss"},
        )

    def evaluate(self, cfg: SummarizationConfig, model, tokenizer, data, prepared: Prepared, out: Path):
        metrics = {}
        for name in cfg.rouge_splits:
            if name in data["splits"]:
                pairs = data["splits"][name]
                start = time.perf_counter()
                predictions = summarize(model, tokenizer, [p.source for p in pairs], cfg)
                metrics[name], rows = evaluate_pairs(pairs, predictions, cfg, time.perf_counter() - start)
                write_jsonl(out / f"summaries_{name}.jsonl", rows)
        return metrics

    def summary(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {n: {k: v["f1"] for k, v in metrics[n]["rouge"].items()} for n in ("validation", "test") if n in metrics}


TASK = SummarizationTask()


def train(cfg: SummarizationConfig) -> dict[str, Any]:
    """Train, keep the best checkpoint by validation loss, summarize validation and test, score, save."""
    return run_task(TASK, cfg)


def export_model(model_dir: str | Path, architecture: str | None):
    """The model `fastformer export` traces: the encoder-decoder (None for a Lead-3 folder, which has none)."""
    return None if architecture == "lead3" else load_model(model_dir)[0]


def generation_export(model) -> dict[str, Any]:
    """`fastformer export`'s generate-ready pair with the Fastformer decoder (its state has a fixed size); with the
    Transformer decoder, why there is none."""
    from fastformer.models.fastformer import exportable

    if not model._fastformer_decoder:
        return dict(
            reason="not exported: the Transformer decoder's key/value cache grows every step (the teacher-forced "
            "model.pt2 is); a summarizer trained with --model decoder_type=fastformer has them"
        )
    return dict(
        programs=exportable.export_summarizer(model),
        state=exportable.summarizer_state_names(model.decoder.num_layers),
        inputs="(input_ids (B, 1), attention_mask of the document, *state)",
    )


def load_model(model_dir: str | Path):
    """(model, tokenizer) of a folder written by `fastformer train summarize`."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import fastformer.models  # noqa: F401  (registers the Auto classes)

    model = AutoModelForSeq2SeqLM.from_pretrained(str(model_dir)).eval()
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def generation_settings(model_dir: str | Path) -> SummarizationConfig:
    """The run's settings (beam size, length penalty, ...) from its run_config.json, or the defaults."""
    path = Path(model_dir) / "run_config.json"
    if not path.is_file():
        return SummarizationConfig()  # the defaults
    values = json.loads(path.read_text())
    known = SummarizationConfig.__dataclass_fields__
    # only the generation settings are needed: the data paths of the run may be gone
    keep = (
        "num_beams",
        "length_penalty",
        "no_repeat_ngram_size",
        "min_new_tokens",
        "eval_batch_size",
        "bootstrap_samples",
        "seed",
    )
    return SummarizationConfig(**{k: values[k] for k in keep if k in values and k in known})


# --- the commands on a trained folder (engine/verbs.py) ---
EVALUATION_FILE = "summaries.jsonl"


def evaluate_folder(model_dir: str | Path, architecture: str | None, settings, output: Path) -> dict[str, Any]:
    """ROUGE-1/2/L/Lsum (bootstrap intervals) of a trained folder's summaries (or Lead-3's) of a file of document /
    summary pairs, generated with the run's settings (`num_beams` overrides its beam size); the summaries go to
    EVALUATION_FILE beside `output` (metrics.json). `settings`: SummarizationEvaluation."""
    pairs = read_pairs(
        settings.data, settings.source_field, settings.target_field, format=settings.format, where=settings.where
    )
    pairs = pairs[: settings.max_examples] if settings.max_examples else pairs
    cfg = generation_settings(model_dir)
    start = time.perf_counter()
    if architecture == "lead3":
        summaries = [lead(p, 3) for p in pairs]
    else:
        model, tokenizer = load_model(model_dir)
        beams = {"num_beams": settings.num_beams} if settings.num_beams else {}
        summaries = summarize(model, tokenizer, [p.source for p in pairs], cfg, **beams)
    metrics, rows = evaluate_pairs(pairs, summaries, cfg, time.perf_counter() - start)
    write_jsonl(Path(output).with_name(EVALUATION_FILE), rows)
    return metrics


def headline(metrics: dict[str, Any]) -> dict[str, Any]:
    """The pairs, then each ROUGE F1 with its bootstrap interval."""
    scores = {name: f"{s['f1']:.2f} [{s['low']:.2f}, {s['high']:.2f}]" for name, s in metrics["rouge"].items()}
    return dict(examples=metrics["examples"], **scores)


def predictor(model_dir: str | Path, architecture: str | None, settings):
    """The folder's summarizer (or Lead-3) loaded once: documents -> their summary each."""
    if architecture == "lead3":
        from fastformer.data.summarization import split_sentences

        return lambda texts: [dict(summary="\n".join(split_sentences(t)[:3])) for t in texts]
    model, tokenizer = load_model(model_dir)
    generation = generation_settings(model_dir)
    return lambda texts: [dict(summary=s) for s in summarize(model, tokenizer, texts, generation)]


def explained_model(model_dir: str | Path, architecture: str | None):
    """(model, tokenizer, generate settings): `fastformer explain` reads its encoder over the source, and the summary
    it shows is the one `predict` writes."""
    if architecture == "lead3":
        raise ValueError(f"{model_dir} holds the lead3 baseline: it has no attention weights to show")
    model, tokenizer = load_model(model_dir)
    return model, tokenizer, generate_kwargs(model, generation_settings(model_dir))
