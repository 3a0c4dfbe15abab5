"""What every task's run shares below the skeleton (tasks/run.py): Trainer arguments, processes, the run's tokenizer,
splits, the training plot."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fastformer.tasks.run_folder import CHECKPOINTS, TOKENIZER_STAMP, files_in, remove_written


def training_arguments(cfg: Any, **task_fields):
    """Hugging Face TrainingArguments with what every task shares (AdamW, schedule, clipping, seeds, two checkpoints
    kept, the best reloaded at the end, bf16 where the GPU has it, data parallelism), plus `task_fields`
    (evaluation / save strategy, best-model metric, ...). `cfg` has the fields every task config has."""
    import torch
    from transformers import TrainingArguments

    # bf16 autocast where the GPU has it; on CPU where the task asks for it (`bf16` setting: pretraining)
    use_bf16 = (torch.cuda.is_available() and torch.cuda.is_bf16_supported()) or bool(getattr(cfg, "bf16", False))
    return TrainingArguments(
        output_dir=str(Path(cfg.output_dir) / CHECKPOINTS),
        num_train_epochs=cfg.epochs,
        learning_rate=cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        adam_beta1=0.9,
        adam_beta2=0.999,
        optim="adamw_torch",
        lr_scheduler_type=cfg.scheduler,
        warmup_steps=cfg.warmup,
        max_grad_norm=cfg.max_grad_norm,
        seed=cfg.seed,
        data_seed=cfg.seed,
        save_total_limit=2,
        load_best_model_at_end=True,
        logging_steps=cfg.logging_steps,
        logging_nan_inf_filter=False,  # a NaN loss is logged as NaN, and stops the run (tasks/run.py: Divergence)
        report_to="none",
        disable_tqdm=not cfg.progress,
        bf16=use_bf16,
        **data_parallel_arguments(cfg.batch_size),
        **task_fields,
    )


def evaluations_by_steps(cfg: Any, train_examples: int) -> dict[str, Any]:
    """TrainingArguments fields of a run evaluated and saved `cfg.evaluations` times, evenly over its steps
    (`cfg.max_steps`, else `cfg.epochs` of `train_examples` in batches of `cfg.batch_size`), the checkpoint with the
    lowest validation loss kept: the language models' schedule."""
    import math

    steps_per_epoch = math.ceil(train_examples / cfg.batch_size)
    total_steps = cfg.max_steps if cfg.max_steps > 0 else math.ceil(cfg.epochs * steps_per_epoch)
    every = max(1, math.ceil(total_steps / max(1, cfg.evaluations)))
    return dict(
        max_steps=cfg.max_steps,
        eval_strategy="steps",
        eval_steps=every,
        save_strategy="steps",
        save_steps=every,
        metric_for_best_model="loss",
        greater_is_better=False,
    )


def hold_out(items: list, fraction: float, seed: int) -> tuple[list, list]:
    """(held out, rest): a seeded random `fraction` of `items` (at least one), for a validation split."""
    order = _permutation(len(items), seed)
    cut = max(1, int(round(fraction * len(items))))
    return [items[i] for i in order[:cut]], [items[i] for i in order[cut:]]


def limit_splits(
    splits: dict[str, list], max_train: int | None, max_eval: int | None, subset_seed: int | None = None
) -> dict[str, list]:
    """At most `max_train` training items and `max_eval` of every other split (None: all).

    `subset_seed=None` keeps the first items in file order; an integer draws a seeded random subset instead (kept in
    file order), because real files are often sorted by label (IMDB lists its positive reviews first), and their first
    N items would then hold one class only.
    """
    limited = {}
    for name, items in splits.items():
        limit = max_train if name == "train" else max_eval
        if not limit or limit >= len(items):
            limited[name] = items
        elif subset_seed is None:
            limited[name] = items[:limit]
        else:
            limited[name] = [items[i] for i in sorted(_permutation(len(items), subset_seed)[:limit])]
    return limited


def _permutation(n: int, seed: int) -> list[int]:
    import torch

    return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()


def world_size() -> int:
    """Processes of this run (torchrun sets WORLD_SIZE)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def data_parallel_arguments(batch_size: int) -> dict[str, Any]:
    """TrainingArguments fields that make one process and `torchrun --nproc_per_node W` train the same model.

    Every global batch of `batch_size` examples is drawn and collated (padded) once, in the same order as in one
    process, then split between the W processes (accelerate's `split_batches`); DDP averages the gradients, which
    equals the one-process gradient of the whole batch. Without the split, each process would draw and pad batches of
    its own. Gloo on CPU, NCCL on GPUs. On a machine without CUDA, `use_cpu` must be set under torchrun: without it
    accelerate initialises the process group but reports no distributed mode, and the Trainer silently trains
    W independent models without DDP (what an earlier version of this project did).
    """
    import torch

    world = world_size()
    if batch_size % world:
        raise ValueError(f"batch_size {batch_size} is not divisible by the {world} processes")
    return dict(
        per_device_train_batch_size=batch_size,  # with split_batches: the global batch, split W ways
        per_device_eval_batch_size=batch_size,
        accelerator_config=dict(split_batches=True),
        use_cpu=world > 1 and not torch.cuda.is_available(),
        ddp_backend=("gloo" if not torch.cuda.is_available() else "nccl") if world > 1 else None,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),
    )


def tokenizer_files(folder: Path) -> list[str]:
    """The files a run wrote into OUTPUT/tokenizer, from its stamp (an older stamp lists none: the files a saved
    tokenizer has)."""
    try:
        return list(json.loads((folder / TOKENIZER_STAMP).read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError):
        names = [
            "tokenizer.json",
            "tokenizer_config.json",
            "special_tokens_map.json",
            "vocab.txt",
            "added_tokens.json",
            "chat_template.jinja",
            "vocabulary_report.json",
            TOKENIZER_STAMP,
        ]
        return names


def run_tokenizer(cfg: Any, texts: Iterable[str], output_dir: Path):
    """The run's tokenizer (`fastformer.tasks.inputs.make_tokenizer`), made once and kept in OUTPUT/tokenizer.

    WordPiece training breaks frequency ties differently from one process to the next, so a resumed run and every
    torchrun process must load the tokenizer the run started with instead of training their own: the main process
    trains (or copies) it and moves it into place; the others wait for it.
    """
    from transformers import AutoTokenizer

    from fastformer.tasks.inputs import VOCABULARY_REPORT, make_tokenizer

    folder = output_dir / "tokenizer"  # a folder of the user's there was refused by RunFolder before the run began
    if (folder / "tokenizer_config.json").is_file() and (cfg.resume or not is_main_process()):
        return AutoTokenizer.from_pretrained(str(folder))
    if is_main_process():
        tokenizer, report = make_tokenizer(cfg, texts)
        staging = output_dir / ".fastformer-tokenizer-staging"
        shutil.rmtree(staging, ignore_errors=True)
        tokenizer.save_pretrained(staging)
        if report is not None:
            (staging / VOCABULARY_REPORT).write_text(json.dumps(report, indent=2))
        (staging / TOKENIZER_STAMP).write_text(json.dumps(dict(files=[*files_in(staging), TOKENIZER_STAMP])))
        # stamped: this run's (or an earlier run's) own tokenizer; a file of the user's inside it stays
        if remove_written(folder, tokenizer_files(folder)):
            os.replace(staging, folder)
        else:
            for name in files_in(staging):
                os.replace(staging / name, folder / name)
            shutil.rmtree(staging)
        return tokenizer
    deadline = time.monotonic() + 3600
    while not (folder / "tokenizer_config.json").is_file():  # written by the main process, atomically
        if time.monotonic() > deadline:
            raise TimeoutError(f"{folder}: the main process did not write the tokenizer within an hour")
        time.sleep(0.5)
    return AutoTokenizer.from_pretrained(str(folder))


def tokenizer_report(cfg: Any, tokenizer) -> dict[str, Any]:
    """What metrics.json says of the run's vocabulary: where it came from and a fingerprint of it (sha256 of the
    tokens in id order). WordPiece training in `tokenizers` breaks count ties in hash-map order, which changes from
    one process to the next (huggingface/tokenizers#1794, open): the same command trains a slightly different
    vocabulary each time. The fingerprint shows whether two runs share one; `--tokenizer RUN/tokenizer` repeats a
    run with the very same vocabulary."""
    import hashlib

    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    digest = hashlib.sha256("\n".join(tokens).encode()).hexdigest()
    source = getattr(cfg, "init_from", None) or getattr(cfg, "tokenizer", None)
    from fastformer.tasks.inputs import tokenization_of

    trained = source is None and tokenization_of(cfg) == "wordpiece"
    return dict(source=str(source) if source else "trained", size=len(tokens), sha256=digest, reproducible=not trained)


def plot_training(
    log_history: list[dict], path: Path, evaluations: dict[str, str], title: str = "", kept_step: int | None = None
) -> None:
    """training.png: the training loss and every validation loss on one axis, validation scores ({label: log key})
    on a second, the kept checkpoint marked, legends outside the curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    train = [(h["step"], h["loss"]) for h in log_history if "loss" in h]
    if train:
        ax.plot(*zip(*train, strict=True), color="C0", label="training loss")
    twin = None
    for number, (label, key) in enumerate(evaluations.items()):
        points = [(h["step"], h[key]) for h in log_history if key in h]
        if not points:
            continue
        on_loss_axis = "loss" in key
        if not on_loss_axis:
            twin = twin or ax.twinx()
        (ax if on_loss_axis else twin).plot(
            *zip(*points, strict=True), "os^v"[number % 4] + "-", color=f"C{number + 1}", label=label
        )
    if kept_step is not None:
        ax.axvline(kept_step, color="grey", linestyle=":", label=f"kept (step {kept_step})")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    handles, labels = ax.get_legend_handles_labels()
    if twin is not None:
        twin.set_ylabel("validation score")
        more = twin.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.12 if twin else 1.02, 1), fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    """One JSON object a line."""
    with Path(path).open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
