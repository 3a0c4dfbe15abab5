"""The Hugging Face TrainingArguments every run shares, and the processes of a run (torchrun)."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastformer.engine.folder import CHECKPOINTS


def training_arguments(cfg: Any, **task_fields):
    """Hugging Face TrainingArguments with what every task shares (AdamW, schedule, clipping, seeds, two checkpoints
    kept, the best reloaded at the end, bf16 where the GPU has it, data parallelism), plus `task_fields`
    (evaluation / save strategy, best-model metric, ...). `cfg` has the fields every task config has."""
    import torch
    from transformers import TrainingArguments

    from fastformer.precision import cpu_bf16_autocast

    # bf16 autocast where the GPU has it; on CPU where the task asks for it (`bf16` setting) and the CPU multiplies
    # bfloat16 (precision.py: elsewhere ~20x slower than float32)
    asked = bool(getattr(cfg, "bf16", False))
    if torch.cuda.is_available():
        use_bf16 = torch.cuda.is_bf16_supported() or asked
    else:
        use_bf16 = cpu_bf16_autocast(asked)
    parallel = data_parallel_arguments(cfg.batch_size)
    if use_bf16 and not torch.cuda.is_available():
        parallel["use_cpu"] = True  # else transformers refuses bf16 without a GPU ("doesn't support bf16/gpu")
    return TrainingArguments(
        output_dir=str(Path(cfg.output_dir) / CHECKPOINTS),
        num_train_epochs=cfg.epochs,
        learning_rate=cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        adam_beta1=0.9,
        adam_beta2=0.999,
        # torch's fused AdamW (CPU and GPU): one kernel over all parameters, where "adamw_torch" loops over them
        # in Python on the CPU (25.7M parameters: 32-48 ms a step against 165-196, one thread)
        optim="adamw_torch_fused",
        lr_scheduler_type=cfg.scheduler,
        warmup_steps=cfg.warmup,
        max_grad_norm=cfg.max_grad_norm,
        seed=cfg.seed,
        data_seed=cfg.seed,
        save_total_limit=2,
        load_best_model_at_end=True,
        logging_steps=cfg.logging_steps,
        logging_nan_inf_filter=False,  # a NaN loss is logged as NaN, and stops the run (engine/skeleton.py: Divergence)
        report_to="none",
        disable_tqdm=not cfg.progress,
        bf16=use_bf16,
        **parallel,
        **task_fields,
    )


@contextmanager
def own_forward(model):
    """The model's own forward while inside: a --bf16 run's is wrapped in bf16 autocast by accelerate (on `model`
    itself), so a task whose evaluation stays float32 scores its validation split during training as it does at the
    run's end and as `fastformer evaluate` does. Restored on leaving; a model without the wrapper is left alone."""
    wrapped, original = model.__dict__.get("forward"), model.__dict__.get("_original_forward")
    if wrapped is None or original is None:
        yield model
        return
    model.forward = original
    try:
        yield model
    finally:
        model.forward = wrapped


def layerwise_optimizer(args, model, scales: dict[str, float]) -> tuple[type, dict[str, Any]]:
    """The Trainer's `optimizer_cls_and_kwargs` for per-parameter learning rates: the optimizer `args` names (AdamW,
    with the Trainer's own weight-decay groups: none on biases and norms), each group split by `scales` ({parameter
    name: rate / args.learning_rate}), so the schedule scales every rate alike. The full rate's group comes first:
    the Trainer logs the first group's rate as `learning_rate` (the embeddings' d^(L+1) there would read as a bug)."""
    from transformers import Trainer

    optimizer_cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args, model)
    by_tensor = {id(p): scales.get(name, 1.0) for name, p in model.named_parameters()}

    def __init__(self, params, lr, **rest):
        groups = []
        for group in params:  # the Trainer's groups: [with weight decay, without]
            by_scale = defaultdict(list)
            for p in group["params"]:
                by_scale[by_tensor.get(id(p), 1.0)].append(p)
            groups += [{**group, "params": ps, "lr": lr * scale} for scale, ps in by_scale.items()]
        groups.sort(key=lambda group: -group["lr"])  # stable: at one rate, the Trainer's order (decayed first)
        optimizer_cls.__init__(self, groups, lr=lr, **rest)

    layerwise = type(f"Layerwise{optimizer_cls.__name__}", (optimizer_cls,), {"__init__": __init__})
    return layerwise, kwargs


def evaluations_by_steps(cfg: Any, train_examples: int) -> dict[str, Any]:
    """TrainingArguments fields of a run evaluated and saved `cfg.evaluations` times, evenly over its steps
    (`cfg.max_steps`, else `cfg.epochs` of `train_examples` in batches of `cfg.batch_size`), the checkpoint with the
    lowest validation loss kept: the language models' schedule."""
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
