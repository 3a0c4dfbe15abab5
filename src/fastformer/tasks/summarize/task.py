"""Abstractive summarization as one `Task` class: document / summary pairs, a Fastformer encoder-decoder (or the
softmax-encoder and Lead-3 baselines), ROUGE with bootstrap intervals; and the commands on a trained folder
(evaluate, predict, explain, export). The pairs dataset, generation and loading of a trained folder are
summarizer.py's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from fastformer.data.summarization import lead, read_pairs
from fastformer.engine.outputs import write_jsonl
from fastformer.engine.skeleton import Prepared
from fastformer.engine.task import Task
from fastformer.engine.verbs import TEXT_VERBS
from fastformer.tasks.summarize.config import SummarizationConfig, SummarizationEvaluation, SummarizationPrediction


def read_settings(model_dir: str | Path, settings):
    """The run's generation settings (`generation_settings`: its document length, beams, ...) with the verb's
    --max-source-length where given (a Lead-3 folder refuses it before: `cli.settings.check_positions`)."""
    from dataclasses import replace

    from fastformer.tasks.summarize.summarizer import generation_settings

    asked = getattr(settings, "max_source_length", None)
    cfg = generation_settings(model_dir)
    return replace(cfg, max_source_length=asked) if asked else cfg


class SummarizationTask(Task):
    """Abstractive summarization: a Fastformer encoder-decoder (softmax-encoder and Lead-3 baselines)."""

    name = "summarize"
    help = "abstractive summarization (encoder-decoder; softmax encoder and Lead-3 baselines)"
    config_class = SummarizationConfig
    verbs: ClassVar[dict[str, type | None]] = dict(
        TEXT_VERBS, evaluate=SummarizationEvaluation, predict=SummarizationPrediction
    )
    model_class_name = "FastformerForConditionalGeneration"
    evaluation_file = "summaries.jsonl"
    text_field_default = ("source_field", "article")  # (CNN / DailyMail's documents)

    def load_data(self, cfg: SummarizationConfig, report: dict[str, Any]):
        from fastformer.tasks.summarize.summarizer import load_splits

        splits, skipped = load_splits(cfg)
        return dict(splits=splits, skipped=skipped)

    def head_fields(self, cfg: SummarizationConfig, data, tokenizer=None) -> dict[str, Any]:
        # with --init-from, the pretrained encoder reads the documents; the decoder starts fresh
        from fastformer.tasks.summarize.summarizer import summarizer_head_fields

        return summarizer_head_fields(cfg, tokenizer)

    def input_length(self, cfg: SummarizationConfig) -> int:
        return cfg.max_source_length

    def baseline(self, cfg: SummarizationConfig, data, out: Path, report: dict[str, Any]):
        from fastformer.tasks.summarize.summarizer import run_lead3

        return run_lead3(cfg, data["splits"], out, data["skipped"])  # lead3, the one model-free architecture

    def tokenizer_texts(self, cfg: SummarizationConfig, data):
        return (text for p in data["splits"]["train"] for text in (p.source, p.target))

    def prepare(self, cfg: SummarizationConfig, data, tokenizer, model, out: Path) -> Prepared:
        from transformers import DataCollatorForSeq2Seq

        from fastformer.tasks.summarize.summarizer import PairDataset

        splits = data["splits"]
        train_set = PairDataset(splits["train"], tokenizer, cfg.max_source_length, cfg.max_target_length)
        eval_set = PairDataset(splits["validation"], tokenizer, cfg.max_source_length, cfg.max_target_length)
        source_tokens, target_tokens = train_set.num_tokens()
        return Prepared(
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
            ),
            plot={"validation loss": "eval_loss"},
        )

    def evaluate_splits(self, cfg: SummarizationConfig, model, tokenizer, data, prepared: Prepared, out: Path):
        from fastformer.tasks.summarize.summarizer import evaluate_pairs, summarize

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

    @classmethod
    def older_folder_architecture(cls, folder: Path, architecture: str | None) -> str | None:
        # a Lead-3 folder of an earlier version: metrics and summaries, no model
        return "lead3" if architecture == "lead3" else None

    # --- the commands on a trained folder ---

    def export_model(self, model_dir: str | Path, architecture: str | None):
        """The model `fastformer export` traces: the encoder-decoder (None for a Lead-3 folder, which has none)."""
        from fastformer.tasks.summarize.summarizer import load_model

        return None if architecture == "lead3" else load_model(model_dir)[0]

    def generation_export(self, model) -> dict[str, Any]:
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
            state=exportable.summarizer_state_names(exportable.template_cache(model)),
            inputs="(input_ids (B, 1), attention_mask of the document, *state)",
        )

    def evaluate_folder(
        self, model_dir: str | Path, architecture: str | None, settings, output: Path
    ) -> dict[str, Any]:
        """ROUGE-1/2/L/Lsum (bootstrap intervals) of a trained folder's summaries (or Lead-3's) of a file of document /
        summary pairs, generated with the run's settings (`num_beams` overrides its beam size); the summaries go to
        `evaluation_file` beside `output` (metrics.json). `settings`: SummarizationEvaluation."""
        from fastformer.tasks.summarize.summarizer import evaluate_pairs, load_model, summarize

        cfg = read_settings(model_dir, settings)
        pairs = read_pairs(
            settings.data, settings.source_field, settings.target_field, format=settings.format, where=settings.where
        )
        pairs = pairs[: settings.max_examples] if settings.max_examples else pairs
        start = time.perf_counter()
        if architecture == "lead3":
            summaries = [lead(p, 3) for p in pairs]
        else:
            model, tokenizer = load_model(model_dir)
            beams = {"num_beams": settings.num_beams} if settings.num_beams else {}
            summaries = summarize(model, tokenizer, [p.source for p in pairs], cfg, **beams)
        metrics, rows = evaluate_pairs(pairs, summaries, cfg, time.perf_counter() - start)
        write_jsonl(Path(output).with_name(self.evaluation_file), rows)
        return metrics

    def headline(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """The pairs, then each ROUGE F1 with its bootstrap interval."""
        scores = {name: f"{s['f1']:.2f} [{s['low']:.2f}, {s['high']:.2f}]" for name, s in metrics["rouge"].items()}
        return dict(examples=metrics["examples"], **scores)

    def predictor(self, model_dir: str | Path, architecture: str | None, settings):
        """The folder's summarizer (or Lead-3) loaded once: documents -> their summary each."""
        from fastformer.tasks.summarize.summarizer import load_model, summarize

        generation = read_settings(model_dir, settings)
        if architecture == "lead3":
            from fastformer.data.summarization import split_sentences

            return lambda texts: [dict(summary="\n".join(split_sentences(t)[:3])) for t in texts]
        model, tokenizer = load_model(model_dir)
        return lambda texts: [dict(summary=s) for s in summarize(model, tokenizer, texts, generation)]

    def explained_model(self, model_dir: str | Path, architecture: str | None):
        """(model, tokenizer, `explain` settings): `fastformer explain` reads its encoder over the source, cut where
        the run cut it (--max-source-length), and the summary it shows is the one `predict` writes."""
        from fastformer.tasks.summarize.summarizer import (
            generate_kwargs,
            generation_settings,
            load_model,
            source_length,
        )

        if architecture == "lead3":
            raise ValueError(f"{model_dir} holds the lead3 baseline: it has no attention weights to show")
        model, tokenizer = load_model(model_dir)
        settings = generation_settings(model_dir)
        reading = dict(max_length=source_length(model, settings), generation=generate_kwargs(model, settings))
        return model, tokenizer, reading
