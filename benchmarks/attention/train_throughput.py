"""How fast the whole `fastformer train` path trains, against the bare model step on the same batches.

    OMP_NUM_THREADS=1 python benchmarks/attention/train_throughput.py [--max-train-examples N] [--threads 1] [--out DIR]
    OMP_NUM_THREADS=1 python benchmarks/attention/train_throughput.py --task pretrain [--max-steps 40]   (the
    masked-LM path)

1. The path: `fastformer train` (the classification task, Hugging Face Trainer, length-grouped batches, logging,
   one checkpoint per epoch) for one epoch on Yelp-5's training reviews; its real-token throughput with the
   evaluations excluded, as metrics.json reports it.
2. The bare step: the same model (same config, same initial weights from the run's seed), the same tokenizer and the
   same batches in the same order (the Trainer's own dataloader), in a plain loop of forward, backward, clipping
   and an AdamW step, timed over the same epoch.
3. A profile of bare steps (torch.profiler): the share of CPU time in matrix products and in dropout's random draws.

With `--task pretrain`: `fastformer train pretrain` (masked LM, the shape of the IMDB pretraining run: 16k WordPiece,
512-token pieces, hidden 256, 2 layers, batch 32) for `--max-steps` steps on IMDB's unlabelled reviews, against the
same model, masked batches (the Trainer's dataloader and the task's seeded collator) and steps in a plain loop.

Run it alone on the machine: the numbers are wall-clock. Writes DIR/train_throughput_<machine>.json with a machine
header; the goal (issue "models that learn", item 2) is the path at >= 90 % of the bare step.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import torch

YELP = Path("../shared/data/yelp5")
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::addmm_", "aten::bmm", "aten::baddbmm", "aten::mv", "aten::dot")
DROPOUT_OPS = ("aten::bernoulli_", "aten::native_dropout", "aten::dropout", "aten::uniform_")


def machine() -> dict:
    return dict(
        machine=platform.machine(),
        processor=platform.processor(),
        python=platform.python_version(),
        torch=torch.__version__,
        threads=torch.get_num_threads(),
        date=time.strftime("%Y-%m-%d %H:%M:%S"),
    )


def path_run(args, output_dir: Path) -> dict:
    from fastformer.tasks.classification.config import ClassificationConfig
    from fastformer.tasks.classification.task import ClassificationTask

    cfg = ClassificationConfig(
        train=str(YELP / "yelp_train_small.csv.gz"),
        validation=str(YELP / "yelp_dev.csv.gz"),
        max_train_examples=args.max_train_examples,
        max_eval_examples=500,
        max_length=args.max_length,
        epochs=1,
        seed=1,
        tokenization=args.tokenization,
        word_vectors=args.word_vectors,
        output_dir=str(output_dir),
        progress=False,
    )
    return cfg, ClassificationTask().train(cfg)


IMDB_UNSUP = Path("../shared/data/imdb/imdb_unsup.jsonl.gz")


def pretrain_path_run(args, output_dir: Path):
    from fastformer.tasks.pretrain.config import PretrainingConfig
    from fastformer.tasks.pretrain.task import PretrainingTask

    cfg = PretrainingConfig(
        train=str(IMDB_UNSUP),
        max_train_texts=args.max_train_examples or 4000,
        max_eval_texts=40,
        vocab_size=16000,
        block_size=512,
        model=dict(layer_sharing=False, hidden_dropout_prob=0.1),
        batch_size=32,
        learning_rate=1e-3,
        max_steps=args.max_steps,
        evaluations=1,
        seed=1,
        output_dir=str(output_dir),
        progress=False,
    )
    return cfg, PretrainingTask().train(cfg)


def pretrain_bare_step(cfg, output_dir: Path) -> dict:
    """The masked LM's path against the same model, batches and steps in a plain loop."""
    from transformers import AutoTokenizer, Trainer, set_seed

    from fastformer.engine.training import training_arguments
    from fastformer.tasks.pretrain.corpus import load_texts
    from fastformer.tasks.pretrain.task import PretrainingTask

    set_seed(cfg.seed)
    texts = load_texts(cfg, {})
    tokenizer = AutoTokenizer.from_pretrained(str(output_dir / "tokenizer"))
    cfg.output_dir = str(output_dir / "bare")
    task = PretrainingTask()
    model, _ = task.build_model(cfg, texts, tokenizer)
    prepared = task.prepare(cfg, texts, tokenizer, model, output_dir / "bare")
    arguments = training_arguments(cfg, **prepared.arguments)
    trainer = Trainer(
        model=model,
        args=arguments,
        train_dataset=prepared.train_dataset,
        eval_dataset=prepared.eval_dataset,
        data_collator=prepared.data_collator,
    )
    batches = [b for _, b in zip(range(cfg.max_steps), trainer.get_train_dataloader(), strict=False)]
    return timed_loop(model, batches, cfg)


def bare_step(cfg, output_dir: Path) -> dict:
    """The same model and batches in a plain loop; returns real tokens/s and the profile shares."""
    from transformers import AutoTokenizer, DataCollatorWithPadding, Trainer, set_seed

    from fastformer.data import LabelMap
    from fastformer.engine import inputs
    from fastformer.engine.training import training_arguments
    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification
    from fastformer.tasks.classification.classifier import EncodedDataset
    from fastformer.tasks.classification.data import load_splits

    set_seed(cfg.seed)
    splits = load_splits(cfg)
    labels = LabelMap.from_examples(splits["train"])
    tokenizer = AutoTokenizer.from_pretrained(str(output_dir / "tokenizer"))
    train_set = EncodedDataset(splits["train"], tokenizer, labels, cfg.max_length)
    config = FastformerConfig.from_pretrained(str(output_dir))
    set_seed(cfg.seed)
    model = FastformerForSequenceClassification(config)
    vectors = inputs.vectors_for_tokenizer(cfg, tokenizer)
    if vectors is not None:
        inputs.initialise_embeddings(model, tokenizer, vectors, False, cfg.seed)
    cfg.output_dir = str(output_dir / "bare")
    # the Trainer the path builds (engine/skeleton.py), for its dataloader: the path's batches, in its order
    arguments = training_arguments(
        cfg, train_sampling_strategy=cfg.sampling, eval_strategy="epoch", save_strategy="epoch"
    )
    trainer = Trainer(
        model=model, args=arguments, train_dataset=train_set, data_collator=DataCollatorWithPadding(tokenizer)
    )
    batches = list(trainer.get_train_dataloader())
    return timed_loop(model, batches, cfg)


def timed_loop(model, batches: list, cfg) -> dict:
    """Forward, backward, clipping and AdamW over `batches`, timed; then a profile of 8 of them."""
    real_tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    model.train()

    def step(batch):
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    start = time.perf_counter()
    for batch in batches:
        step(batch)
    seconds = time.perf_counter() - start

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches[:8]:
            step(batch)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    share = lambda names: round(sum(e.self_cpu_time_total for e in events if e.key in names) / total, 3)  # noqa: E731
    top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:8]
    return dict(
        batches=len(batches),
        real_tokens=real_tokens,
        seconds=round(seconds, 2),
        tokens_per_s=round(real_tokens / seconds, 1),
        matmul_share=share(MATMUL_OPS),
        dropout_share=share(DROPOUT_OPS),
        top_ops={e.key: round(e.self_cpu_time_total / total, 3) for e in top},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["classification", "pretrain"], default="classification")
    parser.add_argument("--max-steps", type=int, default=40, help="pretrain: optimisation steps timed")
    parser.add_argument("--max-train-examples", type=int, default=None, help="default: all 10,785 reviews")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--tokenization", default="word")
    parser.add_argument("--word-vectors", default="glove-6b-50d")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/attention/results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        output_dir = Path(tmp) / "run"
        if args.task == "pretrain":
            cfg, metrics = pretrain_path_run(args, output_dir)
            bare = pretrain_bare_step(cfg, output_dir)
        else:
            cfg, metrics = path_run(args, output_dir)
            bare = bare_step(cfg, output_dir)
    path = metrics["train"]
    result = dict(
        machine=machine(),
        settings=vars(args),
        path=dict(
            examples=path.get("examples", path.get("sequences")),
            steps=path["steps"],
            seconds=path["seconds"],
            evaluation_seconds=path["evaluation_seconds"],
            tokens_per_s=path["tokens_per_s"],
        ),
        bare=bare,
        path_over_bare=round(path["tokens_per_s"] / bare["tokens_per_s"], 3),
        goal="path >= 0.90 x bare",
    )
    result["goal_met"] = result["path_over_bare"] >= 0.9
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    task = "" if args.task == "classification" else f"{args.task}_"
    version = torch.__version__.split("+")[0].replace(".", "_")
    file = out / f"train_throughput_{task}cpu{args.threads}t_torch{version}.json"
    file.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    print(f"written: {file}")


if __name__ == "__main__":
    main()
