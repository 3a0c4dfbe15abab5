"""The settings of a run, each written once: a dataclass field with its help, its allowed values and its range.

`RunConfig` holds what every task's run has (output folder, seed, epochs, batch, optimizer and schedule, logging,
resume, progress); each task's config extends it with its own fields (`tasks/NAME/config.py`). The command line is
derived from these fields (`fastformer.cli.settings`), config files are read into them, and `check()` range-checks
every value up front, so a user error is one line naming the setting before anything runs.

Field metadata (set with `setting(...)`):
- help: the flag's help;
- choices: the allowed values; minimum / maximum / above / below: inclusive / exclusive bounds of a number;
- paths: "file" or "folder" (several may be joined by commas), checked to exist when given;
- flag: False for settings with no flag of their own (mappings: `model`, `*_where`);
- shapes_weights: False for settings that do not change the trained weights (output folder, logging, evaluation
  only); the others make up the checkpoint fingerprint that `--resume` compares;
- fingerprint_at_default: False for a setting added after runs were made without it: left out of the fingerprint
  while at its default, so a checkpoint written before it existed still resumes.
Imports the stdlib only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from collections.abc import Iterable
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, ClassVar


class SettingError(ValueError):
    """A setting with a value it cannot take; the message names the setting."""

    def __init__(self, name: str, message: str):
        super().__init__(f"--{name.replace('_', '-')}: {message}")
        self.setting = name


def setting(
    default: Any = MISSING,
    help: str = "",
    *,
    factory: Any = MISSING,
    choices: tuple | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    paths: str | None = None,
    flag: bool = True,
    shapes_weights: bool = True,
    fingerprint_at_default: bool = True,
) -> Any:
    """A config field with what the command line and `check()` need to know of it."""
    metadata = dict(locals())  # every keyword by its name, as the command line and check() read it
    del metadata["default"], metadata["factory"]
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def redefault(base: type, name: str, default: Any = MISSING, *, factory: Any = MISSING, **changes) -> Any:
    """A subclass's field: the base class's `name` setting (help, range, ...) with another default."""
    metadata = {**base.__dataclass_fields__[name].metadata, **changes}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def field_types(cls: type) -> dict[str, Any]:
    """{field name: resolved annotation} of a config dataclass."""
    return typing.get_type_hints(cls)


def base_type(annotation: Any) -> tuple[Any, bool]:
    """(the type without None, whether None is allowed) of an annotation such as `int | None`."""
    args = typing.get_args(annotation)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else annotation), True
    return annotation, False


def _check_type(name: str, value: Any, annotation: Any) -> Any:
    """The value converted to the field's type where that is lossless (an int for a float), else an error."""
    kind, optional = base_type(annotation)
    if value is None:
        if optional:
            return None
        raise SettingError(name, "needs a value")
    origin = typing.get_origin(kind) or kind
    if origin is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if origin is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if origin is bool and isinstance(value, bool):
        return value
    if origin is str and isinstance(value, str):
        return value
    if origin is list and isinstance(value, (list, tuple)):
        item = (typing.get_args(kind) or (Any,))[0]
        if item in (int, float, str) and not all(isinstance(v, item) and not isinstance(v, bool) for v in value):
            raise SettingError(name, f"expected a list of {item.__name__}, got {value!r}")
        return list(value)
    if origin is dict and isinstance(value, dict):
        return dict(value)
    if origin is Any:
        return value
    expected = {float: "a number", int: "an integer", bool: "true or false", str: "a text", list: "a list"}
    raise SettingError(name, f"expected {expected.get(origin, origin)}, got {value!r}")


class Settings:
    """Settings of a command as a dataclass of `setting(...)` fields: built from a dict with type checks, then every
    field's range, choices and paths checked, so a user error is one line naming the setting. `RunConfig` (a training
    run) and the settings of the verbs on a trained folder (`fastformer evaluate`, engine/verbs.py) are ones."""

    # ---- building and checking ----------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, values: dict[str, Any]):
        """An instance from a dict (a config file, run_config.json); unknown fields and bad values are errors."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise SettingError(unknown[0], unknown_setting(unknown[0], known))
        types = field_types(cls)
        cfg = cls(**{name: _check_type(name, value, types[name]) for name, value in values.items()})
        cfg.check()
        return cfg

    def check(self) -> None:
        """Range, choice and path checks of every field; subclasses add checks across fields."""
        for f in dataclasses.fields(self):
            value, meta = getattr(self, f.name), f.metadata
            if value is None:
                continue
            choices = meta.get("choices")
            if choices is not None:
                bad = [v for v in (value if isinstance(value, list) else [value]) if v not in choices]
                if bad:
                    listed = ", ".join(map(str, choices))
                    raise SettingError(f.name, f"{bad[0]!r} is not one of {listed}{meant(bad[0], choices)}")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                _check_range(f.name, value, meta)
            if meta.get("paths") and isinstance(value, str):
                for part in value.split(","):
                    _check_path(f.name, part.strip(), meta["paths"])


@dataclass
class RunConfig(Settings):
    """What every task's run has. Saved as run_config.json beside the model."""

    # architectures of the task that train no model (bag-of-words, Lead-3): nothing to start --init-from
    MODEL_FREE_ARCHITECTURES: ClassVar[tuple[str, ...]] = ()

    output_dir: str = setting("runs/run", "output folder (made by the run; see --overwrite)", shapes_weights=False)
    overwrite: bool = setting(
        False,
        "replace the run in --output-dir (or take over a non-empty folder no run made); only files runs write are "
        "touched",
        shapes_weights=False,
    )
    resume: bool = setting(
        False,
        "continue from the last complete checkpoint (refused if it was trained with other settings)",
        shapes_weights=False,
    )
    seed: int = setting(42, "random seed", minimum=0, maximum=2**32 - 1)
    preset: str = setting("paper", "model preset", choices=("paper", "official"))
    model: dict[str, Any] = setting(factory=dict, help="FastformerConfig overrides (--model FIELD=VALUE)", flag=False)
    epochs: float = setting(3.0, "training epochs", above=0)
    batch_size: int = setting(64, "global batch size (split over torchrun processes)", minimum=1)
    learning_rate: float = setting(1e-3, "Adam learning rate", above=0)
    weight_decay: float = setting(0.0, "weight decay", minimum=0)
    warmup: float = setting(0.0, "warm-up: a fraction of the steps (< 1) or a number of steps", minimum=0)
    scheduler: str = setting(
        "linear",
        "learning-rate schedule",
        choices=("linear", "cosine", "constant", "constant_with_warmup", "cosine_with_restarts", "polynomial"),
    )
    max_grad_norm: float = setting(1.0, "gradient clipping norm", above=0)
    time_limit: float = setting(
        0.0,
        "stop training after this many minutes (0: no limit); the run then saves, evaluates and finishes as at its "
        "last step, with the schedule --epochs/--max-steps set",
        minimum=0,
        shapes_weights=False,
    )
    logging_steps: int = setting(20, "log the training loss every N steps", minimum=1, shapes_weights=False)
    progress: bool = setting(True, "progress bars (--no-progress: none)", shapes_weights=False)

    def check(self) -> None:
        super().check()
        self.check_output_apart()

    def check_output_apart(self) -> None:
        """--output-dir is not an input of the run, nor inside one, nor around an input folder: a run writes its
        folders there (tokenizer/, checkpoints/), and a dataset folder (one sub-folder of texts per label) given as
        --output-dir --overwrite became a class of its own the next time it was read."""
        output = Path(self.output_dir).resolve()
        for f in dataclasses.fields(self):
            value, kind = getattr(self, f.name), f.metadata.get("paths")
            if not kind or value is None or f.name in ("tokenizer", "init_from", "teacher"):  # (models: never written)
                continue
            for part in value if isinstance(value, list) else str(value).split(","):
                if not str(part).strip():
                    continue
                given = Path(str(part).strip()).resolve()
                inside = output == given or given in output.parents
                around = given.is_dir() and output in given.parents
                if inside or around:
                    flag = "--" + f.name.replace("_", "-")
                    where = "is" if output == given else ("lies inside" if inside else "holds")
                    raise SettingError(
                        "output_dir", f"{self.output_dir} {where} the {flag} data {part}; choose a folder of its own"
                    )

    def fingerprint_settings(self) -> dict[str, Any]:
        """The settings that shape the trained weights (what a checkpoint must have been trained with to resume);
        a newer setting at its default is left out (`fingerprint_at_default`)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.metadata.get("shapes_weights", True)
            and (f.metadata.get("fingerprint_at_default", True) or getattr(self, f.name) != f.default)
        }

    def fingerprint(self) -> str:
        return settings_hash(self.fingerprint_settings())

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def builtin_defaults(cls) -> dict[str, Any] | None:
        """The settings of the task's built-in job, which `fastformer train TASK` runs when given no data (no
        --train, no --config); None: the task has none and needs data."""
        return None


@dataclass
class DataSettings(RunConfig):
    """A run that reads its examples from files: a training file and a validation file (default: a held-out
    fraction of the training examples), each with a JSON Lines filter (`--where SPLIT:KEY=VALUE`). A task words the
    help for its data and formats (`redefault(..., help=...)`) and its hold-out default."""

    train: str | None = setting(None, "training file", paths="file")
    validation: str | None = setting(
        None, "validation file; default: hold out --validation-fraction of the training examples", paths="file"
    )
    train_where: dict[str, str] | None = setting(None, "JSON Lines filter of the training file", flag=False)
    validation_where: dict[str, str] | None = setting(None, "JSON Lines filter of the validation file", flag=False)
    validation_fraction: float = setting(0.1, "hold-out fraction when no validation file is given", above=0, below=1)


@dataclass
class LabelledDataSettings(DataSettings):
    """Labelled examples (classification, summarization): a test file too, scored at the end of the run, and caps
    on the examples of each split."""

    test: str | None = setting(None, "test file", paths="file")
    test_where: dict[str, str] | None = setting(None, "JSON Lines filter of the test file", flag=False)
    max_train_examples: int | None = setting(None, "use only the first N training examples", minimum=1)
    max_eval_examples: int | None = setting(None, "use only the first N validation / test examples", minimum=1)


@dataclass
class CorpusSettings(DataSettings):
    """Unlabelled texts (language modelling, pretraining): one text field, and caps on the texts of each split. A
    folder of text files is a corpus too (one document a file, as aclImdb's train/unsup/)."""

    train: str | None = redefault(DataSettings, "train", None, paths="file-or-folder")
    validation: str | None = redefault(DataSettings, "validation", None, paths="file-or-folder")
    text_field: str | None = setting(None, "text column / JSON key (default: 'text')")
    format: str | None = setting(
        None, "file format (default: from the file name)", choices=("jsonl", "csv", "tsv", "txt")
    )
    max_train_texts: int | None = setting(None, "use only the first N training texts", minimum=1)
    max_eval_texts: int | None = setting(None, "use only the first N validation texts", minimum=1)


@dataclass
class DecontaminatedCorpusSettings(CorpusSettings):
    """Unlabelled texts cut into pieces for a long self-supervised run (pretraining, distillation): evaluation files
    whose texts are never trained on (`--exclude`), pieces of `block_size` tokens, a step budget, and held-out
    evaluations that are checkpoints. A task words its own help where it differs (`redefault`)."""

    train: str | None = redefault(
        CorpusSettings,
        "train",
        None,
        help="unlabelled texts: JSON Lines, CSV/TSV or text files (.gz too) or folders of text files (one a "
        "document), several joined by commas",
    )
    validation: str | None = redefault(
        CorpusSettings,
        "validation",
        None,
        help="held-out texts; default: hold out --validation-fraction of the training texts",
    )
    exclude: list[str] = setting(
        factory=list,
        paths="file-or-folder",
        help="evaluation files (or folders: aclImdb/test) whose texts must never be trained on: every training or "
        "validation text that also occurs in one (whitespace and case normalised) is dropped and counted in "
        "metrics.json (--where exclude:KEY=VALUE filters them, e.g. exclude:split=test)",
    )
    exclude_where: dict[str, str] | None = setting(None, "JSON Lines filter of the --exclude files", flag=False)
    validation_fraction: float = redefault(CorpusSettings, "validation_fraction", 0.01)
    block_size: int = setting(256, "tokens per sequence: a longer text is cut into several", minimum=8)
    min_block_tokens: int = setting(16, "drop a text's last piece when it is shorter than this", minimum=1)
    bf16: bool = setting(
        False,
        "bfloat16 autocast on a CPU with bfloat16 dot products (AVX512_BF16 or AMX on x86), else float32 (on a GPU "
        "with bfloat16 it is always on)",
    )
    epochs: float = redefault(RunConfig, "epochs", 1.0)
    max_steps: int = setting(-1, "optimisation steps (> 0 overrides --epochs)", minimum=-1)
    batch_size: int = redefault(RunConfig, "batch_size", 32)
    weight_decay: float = redefault(RunConfig, "weight_decay", 0.01)
    warmup: float = redefault(RunConfig, "warmup", 0.05)
    evaluations: int = setting(
        8, "held-out evaluations during training, each a checkpoint (the best is kept as the model)", minimum=1
    )

    def check(self) -> None:
        super().check()
        for path in self.exclude:
            check_path("exclude", path, "file-or-folder")


def settings_hash(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _check_range(name: str, value: float, meta: dict) -> None:
    if value != value or value in (float("inf"), float("-inf")):
        raise SettingError(name, f"must be a finite number, got {value}")
    if meta.get("minimum") is not None and value < meta["minimum"]:
        raise SettingError(name, f"must be >= {meta['minimum']}, got {value}")
    if meta.get("maximum") is not None and value > meta["maximum"]:
        raise SettingError(name, f"must be <= {meta['maximum']}, got {value}")
    if meta.get("above") is not None and value <= meta["above"]:
        raise SettingError(name, f"must be > {meta['above']}, got {value}")
    if meta.get("below") is not None and value >= meta["below"]:
        raise SettingError(name, f"must be < {meta['below']}, got {value}")


def check_path(name: str, path: str, kind: str) -> None:
    """A path setting's check for settings that hold several (a list): as `check()` does for one."""
    _check_path(name, path, kind)


def _check_path(name: str, path: str, kind: str) -> None:
    target = Path(path)
    if kind == "folder" and not target.is_dir():
        raise SettingError(name, f"{path}: no such folder")
    if name == "tokenizer" and not any((target / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
        raise SettingError(name, f"{path}: holds no tokenizer (no tokenizer.json or tokenizer_config.json)")
    if kind == "file" and not target.is_file():
        raise SettingError(name, f"{path}: no such file")
    if kind == "file-or-folder" and not target.exists():
        raise SettingError(name, f"{path}: no such file or folder")


def changed_settings(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """'name: old -> new' for every setting that differs between two fingerprint dicts."""
    names = sorted(set(before) | set(after))
    return [f"{n}: {before.get(n)!r} -> {after.get(n)!r}" for n in names if before.get(n) != after.get(n)]


def meant(given: Any, offered: Iterable[Any], separator: str = "-") -> str:
    """ "; did you mean X?" for the offered value nearest a misspelt one (`fastformr`, `max-length` for max_length,
    `head_tail` for head+tail), else ""."""
    import difflib

    names = {str(o): str(o) for o in offered}
    names.update({k.replace("+", separator).replace("_", separator): v for k, v in list(names.items())})
    close = difflib.get_close_matches(str(given).replace("_", separator).replace("+", separator), list(names), n=1)
    return f"; did you mean {names[close[0]]}?" if close else ""


def unknown_setting(name: str, known: set[str]) -> str:
    """What to say of a setting no field has: the likeliest meant (a config file's `epoch:` or `max-length:`), then
    every known one."""
    return f"no such setting for this task{meant(name, sorted(known), '_')} (known: {', '.join(sorted(known))})"


def load_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML or JSON config file as a dict of settings."""
    path = Path(path)
    if not path.is_file():
        raise SettingError("config", f"{path}: no such file")
    text = path.read_text()
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            values = yaml.safe_load(text) or {}
        else:
            values = json.loads(text)
    except Exception as error:  # yaml.YAMLError, json.JSONDecodeError: one line, not a traceback
        raise SettingError(
            "config",
            f"{path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'JSON'}: {str(error).splitlines()[0]}",
        ) from None
    if not isinstance(values, dict):
        raise SettingError("config", f"{path}: a config file must hold a mapping of setting: value")
    return values
