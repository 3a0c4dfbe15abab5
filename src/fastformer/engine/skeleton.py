"""One run skeleton for every task: folder -> seed -> data -> tokenizer -> model -> Trainer -> resume -> evaluate
splits -> save. A task supplies only what is its own, as the methods of its `engine.task.Task` class (load_data,
tokenizer_texts, baseline, prepare, evaluate_splits, summary, describe).

The skeleton owns the rest, once: the run folder (engine/folder.py: ownership, lock, fingerprinted checkpoints,
atomic final save), seeding, the run's tokenizer, run_config.json, the Trainer with the shared arguments, resume,
timing, the whole-run training loss, log_history.json, training.png and metrics.json.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastformer.engine.folder import RunFolder, checkpoint_step, data_digests
from fastformer.engine.init_from import layer_rate_scales
from fastformer.engine.inputs import add_vocabulary_report, keep_tokenizer, run_tokenizer, tokenizer_report
from fastformer.engine.outputs import plot_training
from fastformer.engine.training import is_main_process, layerwise_optimizer, training_arguments

if TYPE_CHECKING:
    from fastformer.engine.task import Task


@dataclass
class Prepared:
    """What a task builds for training around the model the engine built (engine/start.py)."""

    train_dataset: Any
    eval_dataset: Any
    data_collator: Any
    arguments: dict[str, Any]  # TrainingArguments fields of the task (evaluation / save strategy, best metric, ...)
    train_counts: dict[str, Any] = field(default_factory=dict)  # metrics["train"] entries (examples, rows, ...)
    tokens_per_epoch: int | None = None  # real tokens of one pass: tokens/s of training
    metrics: dict[str, Any] = field(default_factory=dict)  # top-level metrics entries (inputs, ...)
    plot: dict[str, str] | None = None  # training.png: {label: log key} of validation metrics
    trainer_class: Any = None  # default transformers.Trainer
    trainer_kwargs: dict[str, Any] = field(default_factory=dict)  # compute_metrics, callbacks, ...
    state: dict[str, Any] = field(default_factory=dict)  # anything evaluate() needs back


def whole_run_loss(log_history: list[dict], training_loss: float, first_step: int, last_step: int) -> float | None:
    """The mean training loss over every step of the run, also after a resume (the Trainer's own `training_loss`
    covers the steps of the last process only). Each logged loss is the mean over the steps since the previous log of
    its process; a resumed log_history holds those of the earlier processes, and ends at the checkpoint's step
    (`fingerprint_callback` logs at every save). The steps after the last log come from `training_loss`, the mean
    over steps first_step..last_step of this process."""
    if last_step <= 0:
        return training_loss
    total, previous, logged_here = 0.0, 0, 0.0
    for entry in log_history:
        if "loss" in entry and "step" in entry:
            if entry["step"] > first_step:
                previous = max(previous, first_step)  # a resumed process logs from its first step on
            part = entry["loss"] * (entry["step"] - previous)
            total += part
            if entry["step"] > first_step:
                logged_here += part
            previous = entry["step"]
    tail = training_loss * (last_step - first_step) - logged_here
    return (total + tail) / last_step


def fingerprint_callback(folder: RunFolder, earlier_seconds: float | None = 0.0):
    """Stamps each checkpoint folder with the run's fingerprint as the Trainer decides to save it, and has the loss
    logged at that step (so the checkpoint's log covers every step before it: `whole_run_loss`). Each saved
    checkpoint records the run's training seconds so far: `earlier_seconds` (the processes before a resume) plus this
    process's since training began; none when the earlier ones are unknown (None), so a later resume does not report
    a part of the run as the whole."""
    from transformers import TrainerCallback

    class Fingerprint(TrainerCallback):
        start = time.perf_counter()

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def _stamp(self, args, state, control):
            if control.should_save:
                control.should_log = True
                if state.is_world_process_zero:
                    folder.write_fingerprint(Path(args.output_dir) / f"checkpoint-{state.global_step}")

        def on_step_end(self, args, state, control, **kwargs):
            self._stamp(args, state, control)

        def on_epoch_end(self, args, state, control, **kwargs):
            self._stamp(args, state, control)

        def on_save(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                seconds = None if earlier_seconds is None else earlier_seconds + time.perf_counter() - self.start
                folder.record_checkpoint_files(Path(args.output_dir) / f"checkpoint-{state.global_step}", seconds)

    return Fingerprint()


def release_freed_memory() -> bool:
    """Hand the memory the allocator holds free back to the system (glibc's malloc_trim; False where there is none).

    Why: a CPU training step's large temporaries change size with every batch's padded length, and glibc keeps what
    they free in fragments it cannot reuse for the next, other-sized ones; a process's memory then grows step after
    step (a causal classifier at 32 x 512: ~2 GB after one step, ~12 GB after 1,000). Trimming after each step keeps it
    flat at no measurable cost (benchmarks/attention/memory_over_steps.py)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache
def _malloc_trim():
    """glibc's malloc_trim, looked up once; None off glibc (macOS, musl)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def memory_release_callback():
    """Releases freed memory after every training step, evaluation batch and evaluation (release_freed_memory)."""
    from transformers import TrainerCallback

    class MemoryRelease(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            release_freed_memory()

        def on_prediction_step(self, args, state, control, **kwargs):
            release_freed_memory()

        def on_evaluate(self, args, state, control, **kwargs):
            release_freed_memory()

    return MemoryRelease()


def estimate_callback(task: str, after_seconds: float = 30.0, after_steps: int = 10):
    """One line on standard error once training has run `after_steps` steps and `after_seconds` seconds: how long the
    rest will take at the rate so far (evaluations and the final test not counted), so a user sees early whether a
    run on their data takes minutes or a day."""
    from transformers import TrainerCallback

    class Estimate(TrainerCallback):
        start_time = start_step = None
        said = False

        def on_train_begin(self, args, state, control, **kwargs):
            self.start_time, self.start_step = time.perf_counter(), state.global_step

        def on_step_end(self, args, state, control, **kwargs):
            if self.said or self.start_time is None or not state.is_world_process_zero:
                return
            seconds, steps = time.perf_counter() - self.start_time, state.global_step - self.start_step
            if steps >= after_steps and seconds >= after_seconds and state.max_steps > state.global_step:
                left = (state.max_steps - state.global_step) * seconds / steps
                print(
                    f"{task}: step {state.global_step} of {state.max_steps}, {seconds / steps:.2f} s a step: about "
                    f"{_duration(left)} of training left (evaluations not counted)",
                    file=sys.stderr,
                )
                self.said = True

    return Estimate()


def time_limit_callback(minutes: float):
    """Stops training once this process has trained for `minutes` (wall clock, evaluations included): the step that
    passes the limit is saved and evaluated as a last step is, so the run finishes as usual (the best checkpoint
    reloaded, the test, metrics.json) instead of being killed. The schedule stays the one --epochs/--max-steps set.
    The stop is written into the log history (`time_limit_stop`), which metrics.json's "train" reports. Under
    torchrun the processes agree on the stop (the first process's clock decides), so none waits on another."""
    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):
        start_time: float | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.start_time = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if self.start_time is None or state.global_step >= state.max_steps:
                return
            if not agreed(time.perf_counter() - self.start_time >= minutes * 60):
                return
            control.should_training_stop = control.should_save = control.should_evaluate = True
            state.log_history.append(dict(step=state.global_step, time_limit_stop=minutes))
            if state.is_world_process_zero:
                print(f"time limit of {minutes:g} min reached at step {state.global_step}", file=sys.stderr)

    return TimeLimit()


class TrainingStopped(Exception):
    """Training stopped on SIGTERM, resumably: `step` is where it stopped, `saved` whether its checkpoint is there."""

    def __init__(self, step: int, max_steps: int, saved: bool):
        self.step, self.max_steps, self.saved = step, max_steps, saved
        where = "its checkpoint is written" if saved else "no checkpoint could be written there"
        super().__init__(
            f"stopped by SIGTERM at step {step} of {max_steps}, {where} (the same command with --resume continues "
            f"from {'it' if saved else 'the last checkpoint'})"
        )


def stop_signal_callback():
    """SIGTERM during training (a scheduler pre-empting the job, `kill`, a machine going down) stops the run
    resumably instead of at once: the step in flight finishes, a checkpoint is written at it and `run_task` raises
    TrainingStopped (the command line: one line, exit code 143), so what is lost is one step, not every step since the
    last checkpoint. The step is evaluated only if it was due an evaluation anyway, so the resumed run evaluates, picks
    its best checkpoint and ends as one never stopped. A second SIGTERM ends the process at once, as does one outside
    training (reading data, evaluating the test split). Under torchrun the processes agree on the stop (the first
    process's signal decides), so none waits on another."""
    import signal
    import threading

    from transformers import TrainerCallback

    class StopSignal(TrainerCallback):
        received = installed = False
        stopped_at: int | None = None
        previous: Any = None

        def on_train_begin(self, args, state, control, **kwargs):
            if threading.current_thread() is threading.main_thread():  # (only the main thread may set a handler)
                self.previous, self.installed = signal.signal(signal.SIGTERM, self._receive), True

        def _receive(self, signum, frame):
            self.received = True
            self._restore()  # a second SIGTERM acts at once

        def _restore(self):
            if self.installed:  # (None: a handler not set from Python, which cannot be put back: the default)
                signal.signal(signal.SIGTERM, signal.SIG_DFL if self.previous is None else self.previous)
                self.installed = False

        def on_step_end(self, args, state, control, **kwargs):
            if self.stopped_at is None and agreed(self.received):
                control.should_training_stop = control.should_save = True
                self.stopped_at = state.global_step

        def on_epoch_end(self, args, state, control, **kwargs):
            # the stop cut the epoch short (its checkpoint is written): the epoch's end-of-epoch evaluation and save
            # belong to its real end, which the resumed run reaches (evaluated here, it would enter the choice of
            # the best checkpoint that an unstopped run never makes). At the last step the run ends here anyway.
            cut = abs(state.epoch - round(state.epoch)) > 1e-6 and state.global_step < state.max_steps
            if self.stopped_at == state.global_step and cut:
                control.should_evaluate = control.should_save = False

        def on_train_end(self, args, state, control, **kwargs):
            self._restore()

    return StopSignal()


def agreed(flag: bool) -> bool:
    """The first process's `flag` on every process of a torchrun run; `flag` itself in a single process."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return flag
    import torch

    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    value = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.broadcast(value, src=0)
    return bool(value.item())


def time_limit_stop(log_history: list[dict]) -> int | None:
    """The step a time limit stopped the run at, from its log history; None when none did."""
    return next((h["step"] for h in log_history if "time_limit_stop" in h), None)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def checkpoint_bytes(model, checkpoints: Path, step: int) -> int:
    """What the checkpoint of `step` will take on disk: the size of the last one written before it, else the
    weights and Adam's two moments (three copies of the parameters) and 16 MB for the rest (scheduler, RNG,
    tokenizer, state). (The folder of `step` itself may exist already, holding only its fingerprint.)"""
    earlier = [p for p in checkpoints.glob("checkpoint-*") if (checkpoint_step(p) or 0) < step]
    if earlier:
        last = max(earlier, key=lambda p: checkpoint_step(p) or 0)
        return sum(f.stat().st_size for f in last.rglob("*") if f.is_file())
    return 3 * sum(p.numel() * p.element_size() for p in model.parameters()) + 16 * 2**20


def disk_room_callback(model):
    """Stops the run, as a full disk would (ENOSPC: one line, resumable), before a checkpoint that does not fit is
    begun: torch's writer aborts the whole process (std::terminate) when the disk fills inside a save."""
    from transformers import TrainerCallback

    class DiskRoom(TrainerCallback):
        def _check(self, args, state, control):
            if not (control.should_save and state.is_world_process_zero):
                return
            checkpoints = Path(args.output_dir)
            checkpoints.mkdir(parents=True, exist_ok=True)
            need = checkpoint_bytes(model, checkpoints, state.global_step)
            free = shutil.disk_usage(checkpoints).free
            if free < need:
                raise OSError(
                    errno.ENOSPC,
                    f"No space left for the checkpoint of step {state.global_step}: it needs about "
                    f"{need / 2**20:.0f} MB, {free / 2**20:.0f} MB are free",
                    str(checkpoints),
                )

        def on_step_end(self, args, state, control, **kwargs):
            self._check(args, state, control)

        def on_epoch_end(self, args, state, control, **kwargs):
            self._check(args, state, control)

    return DiskRoom()


class TrainingDiverged(ValueError):
    """A non-finite loss or weights: the run stops, and is never reported as complete."""


def divergence_callback():
    """Stops the run at the first logged non-finite training loss (the Trainer's NaN filter is off, so a NaN step
    shows in the logged mean instead of being replaced by it)."""
    from transformers import TrainerCallback

    class Divergence(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            loss = (logs or {}).get("loss")
            if loss is not None and not math.isfinite(loss):
                raise TrainingDiverged(
                    f"training diverged: the loss is {loss} at step {state.global_step} (a lower "
                    "--learning-rate, or check the data and word vectors)"
                )

    return Divergence()


def check_finite(model) -> None:
    """Every weight finite, else TrainingDiverged naming the first that is not."""
    import torch

    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise TrainingDiverged(f"training diverged: the weights {name} hold non-finite values")


def best_epoch(state) -> float | None:
    """The epoch of the checkpoint the Trainer kept as best, from its log."""
    best = state.best_model_checkpoint
    if not best:
        return None
    step = checkpoint_step(best)
    return next((h["epoch"] for h in state.log_history if h.get("step") == step and "epoch" in h), None)


def run_task(task: Task, cfg) -> dict[str, Any]:
    """Run one task end to end as `cfg` says; returns the metrics (also in OUTPUT/metrics.json). The steps: open the
    run folder; read and check the data, make the tokenizer, build the model and prepare its data (everything that
    can refuse); begin; train, measure, evaluate and save."""
    main = is_main_process()
    folder = open_folder(task, cfg, main)
    with folder:
        report: dict[str, Any] = {}
        data = read_and_check(task, cfg, report)
        # every check that can refuse runs before the first byte is written or deleted (begin): the tokenizer is made
        # in memory first, so that a start the tokenized data refuses leaves the previous run whole
        made = None
        # one decision, the config's: an architecture with no model (a baseline) trains no tokenizer and no network
        model_free = getattr(cfg, "architecture", None) in cfg.MODEL_FREE_ARCHITECTURES
        if not model_free:
            made = run_tokenizer(cfg, task.tokenizer_texts(cfg, data), folder.path)
        resume_from = folder.resume_checkpoint() if cfg.resume else None
        out = folder.staging if main else Path(cfg.output_dir)
        if model_free:
            _begin(folder, cfg)
            metrics = task.baseline(cfg, data, out, report)
            _finish(folder, out, cfg, metrics)
            return metrics
        # the main process builds the model and prepares its data (either can refuse: an --init-from encoder of
        # another shape, word vectors of none of its words) before the run begins and the previous run's files go;
        # the others wait for the main's tokenizer, written once it has begun
        tokenizer = made.tokenizer if made is not None else keep_tokenizer(None, folder.path, cfg.resume)
        model, model_metrics = task.build_model(cfg, data, tokenizer)
        prepared = task.prepare(cfg, data, tokenizer, model, out)
        prepared.metrics = {**model_metrics, **prepared.metrics}
        _begin(folder, cfg)
        if made is not None:
            keep_tokenizer(made, folder.path)
        add_vocabulary_report(prepared.metrics, made, folder.path / "tokenizer")
        vocabulary = tokenizer_report(cfg, tokenizer)
        if main:
            announce(task, cfg, data, tokenizer, model, prepared, vocabulary)
        # training seconds of the processes before this one, up to the checkpoint it resumes from (None: not recorded)
        earlier_seconds = folder.checkpoint_seconds(resume_from) if resume_from else 0.0
        stop = stop_signal_callback()
        trainer = build_trainer(task, cfg, folder, model, prepared, tokenizer, earlier_seconds, stop)
        start = time.perf_counter()
        result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
        if stop.stopped_at is not None:  # SIGTERM: the checkpoint of that step is what a resume continues from
            saved = any(checkpoint_step(p) == stop.stopped_at for p in folder.checkpoints())
            raise TrainingStopped(stop.stopped_at, trainer.state.max_steps, saved)
        run = dict(seconds=time.perf_counter() - start, earlier_seconds=earlier_seconds, resumed_from=resume_from)
        run["bf16_autocast"] = bool(trainer.args.bf16)  # what ran (--bf16 asks; precision.py decides on CPU)
        metrics = dict(
            architecture=getattr(cfg, "architecture", None),  # (a task with one model has no --architecture)
            train=training_report(cfg, prepared, trainer.state, result, **run),
            parameters=sum(p.numel() for p in model.parameters()),
            **prepared.metrics,
            tokenizer=vocabulary,
        )
        if report:
            metrics["data"] = report
        if not main:
            return metrics
        check_finite(trainer.model)
        # a --bf16 run's forward is wrapped in autocast by accelerate: take it off, so the splits are scored as
        # `fastformer evaluate` scores the saved folder (a task that evaluates under bf16 says so itself)
        trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
        scoring = time.perf_counter()
        metrics.update(task.evaluate_splits(cfg, trainer.model, tokenizer, data, prepared, out))
        # the kept model scored on every split after training, prediction files included: on a large test split the
        # run's last hour, which "train" (training and its evaluations) does not count
        metrics["closing_evaluation_seconds"] = round(time.perf_counter() - scoring, 2)
        save_run(task, cfg, trainer, tokenizer, prepared, out)
        _finish(folder, out, cfg, metrics)
        return metrics


def open_folder(task: Task, cfg, main: bool) -> RunFolder:
    """The run folder (engine/folder.py), refusing one owned by another run, locked, or changed under --resume."""
    return RunFolder(
        cfg.output_dir,
        task.name,
        cfg.fingerprint_settings(),
        overwrite=cfg.overwrite,
        resume=cfg.resume,
        main_process=main,
        data=data_digests(cfg) if main else None,
    )


def read_and_check(task: Task, cfg, report: dict[str, Any]):
    """The task's data and its start checks, then the global seeds. The data first: a malformed file is refused
    before torch and transformers load (seconds); the readers draw from their own seeded generators (cfg.seed),
    never the global ones set_seed seeds."""
    data = task.load_data(cfg, report)
    task.check_start(cfg, data)
    from transformers import set_seed

    set_seed(cfg.seed)
    return data


def build_trainer(
    task: Task, cfg, folder: RunFolder, model, prepared: Prepared, tokenizer, earlier_seconds: float | None, stop=None
):
    """The task's Trainer (transformers' own unless it brings one) with the run's arguments and the engine's
    callbacks: the stop on SIGTERM (`stop`), checkpoint fingerprints, divergence, memory release, the time estimate;
    discriminative rates."""
    from transformers import Trainer

    kwargs = dict(prepared.trainer_kwargs)
    kwargs["callbacks"] = [
        *([stop] if stop is not None else []),  # before the disk check, which then sees the checkpoint it asks for
        disk_room_callback(model),  # before the stamp: a checkpoint that does not fit is not begun, not even stamped
        fingerprint_callback(folder, earlier_seconds),
        divergence_callback(),
        memory_release_callback(),
        estimate_callback(task.name),
        *([time_limit_callback(cfg.time_limit)] if cfg.time_limit > 0 else []),  # every task config is a RunConfig
        *kwargs.get("callbacks", []),
    ]
    args = training_arguments(cfg, **prepared.arguments)
    if getattr(cfg, "layer_lr_decay", 1.0) != 1.0:  # discriminative fine-tuning of an --init-from encoder
        scales = layer_rate_scales(model, cfg.layer_lr_decay)
        kwargs["optimizer_cls_and_kwargs"] = layerwise_optimizer(args, model, scales)
    return (prepared.trainer_class or Trainer)(
        model=model,
        args=args,
        train_dataset=prepared.train_dataset,
        eval_dataset=prepared.eval_dataset,
        data_collator=prepared.data_collator,
        processing_class=tokenizer,
        **kwargs,
    )


def training_report(
    cfg,
    prepared: Prepared,
    state,
    result,
    seconds: float,
    earlier_seconds: float | None,
    resumed_from,
    bf16_autocast: bool = False,
) -> dict[str, Any]:
    """metrics.json "train": what ran, how long, how fast, the whole run's loss, the kept checkpoint."""
    first_step = checkpoint_step(resumed_from) if resumed_from else 0
    # training alone: the Trainer's runtime less the evaluations it ran during training (this process)
    runtime = result.metrics.get("train_runtime") or 0.0
    eval_seconds = sum(h.get("eval_runtime", 0.0) for h in state.log_history if h.get("step", 0) > first_step)
    train_seconds = runtime - eval_seconds
    # epochs this process trained: its steps at the run's epochs per step (state.num_train_epochs is rounded up to a
    # whole epoch when --max-steps stops a run inside one, and would count tokens never seen)
    epochs_here = (state.global_step - first_step) * float(state.epoch or 0.0) / max(state.global_step, 1)
    tokens = prepared.tokens_per_epoch
    # real (not padding) tokens per second of training in this process, evaluations excluded; None where it trained no
    # step (resumed from the run's last checkpoint, it only evaluates): not a rate of 0
    trained_here = tokens and epochs_here > 0 and train_seconds > 0
    tokens_per_s = round(tokens * epochs_here / train_seconds, 1) if trained_here else None
    return dict(
        **prepared.train_counts,
        epochs=round(float(state.epoch or 0.0), 4),  # what ran (--max-steps may stop before --epochs)
        epochs_requested=cfg.epochs,
        steps=state.global_step,
        bf16_autocast=bf16_autocast,
        seconds=round(seconds, 2),  # this process
        # the whole run: with the processes before a resume (None when a resumed checkpoint did not record them)
        run_seconds=round(earlier_seconds + seconds, 2) if earlier_seconds is not None else None,
        train_runtime=result.metrics.get("train_runtime"),
        evaluation_seconds=round(eval_seconds, 2),
        tokens_per_s=tokens_per_s,
        final_loss=whole_run_loss(state.log_history, result.training_loss, first_step, state.global_step),
        resumed_from=str(resumed_from) if resumed_from else None,
        stopped_by_time_limit_at_step=time_limit_stop(state.log_history),
        best_checkpoint=state.best_model_checkpoint,
        best_epoch=best_epoch(state),
    )


def save_run(task: Task, cfg, trainer, tokenizer, prepared: Prepared, out: Path) -> None:
    """The trained model, its tokenizer (truncating where the run read), the log and its plot, into `out`."""
    trainer.model.save_pretrained(out)
    # Hugging Face clients truncate to it
    tokenizer.model_max_length = task.input_length(cfg) or trainer.model.config.max_position_embeddings
    tokenizer.save_pretrained(out)
    state = trainer.state
    (out / "log_history.json").write_text(json.dumps(state.log_history, indent=1))
    if prepared.plot is not None:
        kept = checkpoint_step(state.best_model_checkpoint) if state.best_model_checkpoint else None
        title = f"{task.name}: {getattr(cfg, 'architecture', None) or ''} -> {cfg.output_dir}"
        plot_training(state.log_history, out / "training.png", prepared.plot, title=title, kept_step=kept)


def announce(task: Task, cfg, data, tokenizer, model, prepared: Prepared, vocabulary: dict[str, Any]) -> None:
    """One line on standard error before training: what was read, the vocabulary, the model's size, where it goes
    (a wrong column or label shows here, before an hour of training)."""
    facts = dict(
        **{**{f"train_{k}": v for k, v in prepared.train_counts.items()}, **task.describe(cfg, data)},
        vocabulary=len(tokenizer),
        parameters=sum(p.numel() for p in model.parameters()),
        output_dir=str(cfg.output_dir),
    )
    print(f"fastformer train {task.name}: {json.dumps(facts, default=str)}", file=sys.stderr)
    if not vocabulary["reproducible"] and not cfg.resume:
        print(
            f"note: a WordPiece vocabulary trained here differs slightly from one trained by another process on the "
            f"same texts (tokenizers#1794); to repeat this run exactly, pass --tokenizer {cfg.output_dir}/tokenizer",
            file=sys.stderr,
        )


def _begin(folder: RunFolder, cfg) -> None:
    """The run begins (main process): from here the previous run's final files are gone (engine/folder.py)."""
    if folder.main:
        folder.begin()
        (folder.path / "run_config.json").write_text(json.dumps(cfg.as_dict(), indent=2))


def _finish(folder: RunFolder, out: Path, cfg, metrics: dict[str, Any]) -> None:
    if not folder.main:
        return
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    (out / "run_config.json").write_text(json.dumps(cfg.as_dict(), indent=2))
    written = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir())
    folder.finish()
    print(f"wrote {cfg.output_dir}: {', '.join(written)}", file=sys.stderr)
