"""Train a model: `fastformer train [TASK] [settings]`, TASK one of tasks.registry.TASKS (default classification:
with no data arguments, its built-in generated long-document task, no download).
`fastformer train TASK --help` lists that task's settings, each with its default.

Settings come from the defaults, then a config file (--config, YAML or JSON), then the flags given here; every value
is checked before anything runs. The resolved settings are saved as run_config.json in the output folder, which
becomes a `save_pretrained` folder (config.json, model.safetensors, tokenizer) with metrics.json, predictions,
log_history.json, training.png and run_complete.json (written last). The run owns its folder: it refuses a non-empty
folder it did not make (--overwrite to take it over) and one in use by another run; --resume continues from the last
complete checkpoint trained with the same settings.
Run under `torchrun --nproc_per_node N` for data-parallel training (the global --batch-size is split).
"""

from __future__ import annotations

import argparse
import errno
import json
import sys

from fastformer.config_fields import CONFIG_DEFAULTS
from fastformer.tasks.registry import TASKS

HELP = f"train a model (task: {', '.join(TASKS)})"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Shown in `fastformer --help` only: `fastformer train` parses its own arguments (see `main`)."""
    parser.add_argument("task", nargs="?", choices=list(TASKS), help="default: classification")


def build_parser(task: str) -> argparse.ArgumentParser:
    from fastformer.cli.settings import add_config_arguments

    entry = TASKS[task]
    from fastformer.cli.settings import OneLineParser

    parser = OneLineParser(
        prog=f"fastformer train {task}",
        description=f"{entry.help[0].upper()}{entry.help[1:]}. Settings are saved as run_config.json with the model.",
        epilog="Other tasks: " + ", ".join(t for t in TASKS if t != task) + " (fastformer train TASK --help).",
    )
    add_config_arguments(parser, entry.config_class)
    return parser


def parse_arguments(argv: list[str]) -> tuple[str, argparse.Namespace]:
    """(task, its parsed flags) of `fastformer train [TASK] ...`; a user error is one line and exit code 2."""
    argv = list(argv)
    task = argv.pop(0) if argv and argv[0] in TASKS else "classification"
    if argv and not argv[0].startswith("-"):
        from fastformer.engine.settings import meant

        raise SystemExit(
            f"fastformer train: unknown task {argv[0]!r}; choose from {', '.join(TASKS)}{meant(argv[0], TASKS)}"
        )
    if any(a == "--task" or a.startswith("--task=") for a in argv):  # as other tools spell it
        raise SystemExit(
            f"fastformer train: the task is given by position, first, without a flag: fastformer train TASK ... "
            f"(TASK: {', '.join(TASKS)})"
        )
    return task, build_parser(task).parse_args(argv)


def main(argv: list[str]) -> int:
    """`fastformer train ...`: the task's parser, its config, the run; a user error is one line and exit code 2."""
    from fastformer.cli.settings import resolve_settings
    from fastformer.engine.settings import SettingError

    task, namespace = parse_arguments(argv)
    entry = TASKS[task]
    given = vars(namespace)
    defaults = entry.config_class.builtin_defaults() if "train" not in given and "config" not in given else None
    try:
        if defaults is not None and "output_dir" not in given:
            defaults["overwrite"] = True  # the demo folder: `fastformer train` again replaces the last demo run
        cfg = resolve_settings(entry.config_class, namespace, defaults)
        check_model_overrides(cfg)
    except (SettingError, ValueError) as error:
        raise SystemExit(f"fastformer train {task}: {error}") from None
    return run_training(task, cfg)


def run_training(task: str, cfg) -> int:
    from fastformer.data import DataError
    from fastformer.engine.folder import RunFolderError
    from fastformer.engine.skeleton import TrainingStopped
    from fastformer.engine.training import is_main_process

    runner = TASKS[task]()
    try:
        metrics = runner.train(cfg)
    except TrainingStopped as stopped:  # SIGTERM: 128 + 15, as a process the signal ended
        if is_main_process():  # (under torchrun every process stops at the same step: one line says it)
            print(f"fastformer train {task}: {stopped}", file=sys.stderr)
        return 143
    except (DataError, RunFolderError, ValueError, FileNotFoundError) as error:
        raise SystemExit(f"fastformer train {task}: {error}") from None
    except OSError as error:  # a full disk (ENOSPC), a file-size limit (EFBIG), a folder made read-only
        if error.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EACCES, errno.EROFS):
            raise
        raise SystemExit(
            f"fastformer train {task}: {error.strerror or error} while writing {error.filename or cfg.output_dir}; "
            f"the run stopped (make room, then the same command with --resume continues from its last checkpoint)"
        ) from None
    summary = runner.summary(metrics)
    print(json.dumps(dict(output_dir=cfg.output_dir, **summary, train=metrics.get("train")), indent=2, default=str))
    return 0


# FastformerConfig fields that count something: 0 or less is a user error, said before any data is read
POSITIVE_FIELDS = {
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "vocab_size",
    "embedding_size",
    "decoder_layers",
}


def check_model_overrides(cfg) -> None:
    """--model FIELD=VALUE must name a FastformerConfig field and give a value of its type."""
    if not getattr(cfg, "model", None):
        return
    defaults = CONFIG_DEFAULTS  # torch-free: a bad --model is refused before transformers loads
    accepted = set(defaults)
    for key, value in cfg.model.items():
        if key not in accepted:
            close = sorted(accepted, key=lambda name: (_distance(name, key), name))[:3]
            raise ValueError(f"--model {key}: not a FastformerConfig field (did you mean {', '.join(close)}?)")
        default = defaults.get(key)
        if default is None or value is None:
            continue
        if isinstance(default, bool) or isinstance(value, bool):
            fits = isinstance(default, bool) and isinstance(value, bool)
        elif isinstance(default, float):
            fits = isinstance(value, (int, float))
        else:
            fits = isinstance(value, type(default))
        if not fits:
            raise ValueError(f"--model {key}={value!r}: expected {type(default).__name__}, like {default!r}")
        if key in POSITIVE_FIELDS and isinstance(value, int) and value < 1:
            raise ValueError(f"--model {key}={value}: must be >= 1")
        if key.endswith("dropout_prob") and isinstance(value, (int, float)) and not 0 <= value < 1:
            raise ValueError(f"--model {key}={value}: a dropout probability is in [0, 1)")
    from fastformer.presets import PRESETS

    preset = PRESETS.get(getattr(cfg, "preset", "paper"), {})
    hidden = cfg.model.get("hidden_size", preset.get("hidden_size"))
    heads = cfg.model.get("num_attention_heads", preset.get("num_attention_heads"))
    if isinstance(hidden, int) and isinstance(heads, int) and hidden % heads:
        raise ValueError(f"--model hidden_size={hidden} is not a multiple of num_attention_heads={heads}")


def _distance(a: str, b: str) -> int:
    """Edit distance (for 'did you mean')."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def run(args: argparse.Namespace) -> int:  # pragma: no cover  (main() routes `train` to train.main)
    return main([args.task] if args.task else [])
