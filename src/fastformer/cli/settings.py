"""A command-line parser derived from a config dataclass (engine/settings.py): one flag per field, its help, choices and
default from the field, so each setting is written once.

Why not transformers' HfArgumentParser, which does the same: a config file (--config) sits between the defaults and
the flags, so the parser must report which flags were given (every default here is argparse.SUPPRESS), two kinds of
settings are mappings (`--model FIELD=VALUE`, `--where SPLIT:KEY=VALUE`), and `fastformer train --help` must not
import transformers. Values are range-checked by the config (`RunConfig.check`), not here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import typing
from typing import Any, NamedTuple

from fastformer.engine.init_from import InitFromError, fine_tuning_defaults
from fastformer.engine.settings import (
    SettingError,
    base_type,
    field_types,
    load_config_file,
    meant,
    unknown_setting,
)


class OneLineParser(argparse.ArgumentParser):
    """A parser whose errors are one line (the usage is for --help), exit code 2, and that takes no abbreviated
    flag: argparse's default reads `--epoch 3` as `--epochs 3` and `--max-len` as `--max-length`, so a misspelt flag
    changes a run silently, and a flag added later can turn a working abbreviation into an error or another flag."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        import difflib
        import re

        message = re.sub(r"^argument (-[^:/ ]+)(/-[^: ]+)?: ", r"\1: ", message)  # "--heads: ...", as settings say it
        required = "the following arguments are required: "
        if message.startswith(required):  # parse_intermixed_args also lists a positional that may be empty (texts)
            optional = {a.dest for a in self._actions if not a.option_strings and a.nargs in ("*", "?")}
            message = required + ", ".join(n for n in message[len(required) :].split(", ") if n not in optional)
        choice = re.match(r"(?:argument )?[^:]+: invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:  # a misspelt command, task or choice (`trian`, `convert_bert`): the one it most likely meant
            message += meant(choice[1], re.findall(r"'([^']*)'", choice[2]))
        if message.startswith("unrecognized arguments: "):  # a misspelt flag: the one it most likely meant
            flags = re.findall(r"(?<!\S)--?[A-Za-z][\w-]*", message)
            if flags:  # the unknown flags alone: argparse joins their values and the texts after them into the list
                message = "unrecognized arguments: " + " ".join(flags)
            # `--model DIR` as other tools spell it: DIR was read as the positional model_dir already
            spelt = {f: self._positional_spelt_by(f) for f in flags}
            by_position = list(dict.fromkeys(p for p in spelt.values() if p))
            if by_position:
                verb = "is" if len(by_position) == 1 else "are"
                message += f"; {', '.join(by_position)} {verb} given by position, without a flag"
            close = [
                m
                for f, positional in spelt.items()
                if not positional
                for m in difflib.get_close_matches(f, self._option_string_actions, n=1)
            ]
            if close:
                message += f"; did you mean {', '.join(dict.fromkeys(close))}?"
        raise SystemExit(f"{self.prog}: {message} (--help lists the options)")

    def _positional_spelt_by(self, flag: str) -> str | None:
        """The positional argument a flag spells (`--model` or `--model-dir` for model_dir, `--text` for texts), by
        its name in the usage line, or None."""
        stem = flag.lstrip("-").replace("-", "_").lower()
        for action in self._actions:
            if action.option_strings or action.dest == argparse.SUPPRESS:
                continue
            if stem in (action.dest, action.dest.removesuffix("s"), action.dest.split("_")[0]):
                return action.dest
        return None


def bounded(minimum: float, kind: type = int, above: bool = False):
    """An argparse `type`: a finite `kind` >= minimum (> minimum when `above`), refused in one line through
    OneLineParser ("--heads: must be >= 1, got 0") before anything runs; the verbs whose flags are not a settings
    dataclass (bench, demo) use it where 0 or a negative value was a traceback deep inside."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            expected = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < minimum or (above and value == minimum):
            raise argparse.ArgumentTypeError(f"must be {'>' if above else '>='} {minimum:g}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


# fields read from a repeatable flag of their own (FIELD=VALUE items), not from add_field_argument's one flag per field
REPEATED_FLAGS: dict[str, tuple[str, dict[str, str]]] = {
    "model": (
        "--model",
        dict(
            metavar="FIELD=VALUE",
            dest="model_overrides",
            help="model config override, e.g. hidden_size=128 (a FastformerConfig field; the value is read as JSON "
            "when it can be)",
        ),
    ),
    "train_where": (
        "--where",
        dict(metavar="SPLIT:KEY=VALUE", help="JSON Lines filter, e.g. train:split=train test:split=test (repeatable)"),
    ),
}


def add_config_arguments(parser: argparse.ArgumentParser, cls: type, config_file: bool = True) -> None:
    """One flag per field of `cls` that has one (metadata flag=True); `config_file`: also --config FILE."""
    types = field_types(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("flag", True):
            add_field_argument(parser, f, types[f.name], f.metadata.get("help", ""))
    names = {f.name for f in dataclasses.fields(cls)}
    for name, (flag, options) in REPEATED_FLAGS.items():
        if name in names:
            parser.add_argument(flag, action="append", default=argparse.SUPPRESS, **options)
    if config_file:
        help_text = "YAML or JSON file of settings (flags override)"
        parser.add_argument("--config", default=argparse.SUPPRESS, help=help_text)


def add_field_argument(parser: argparse.ArgumentParser, f: dataclasses.Field, annotation: Any, help_text: str) -> None:
    """The flag of one settings field: its type, choices and default from the field (never set unless given)."""
    kind, _ = base_type(annotation)
    origin = typing.get_origin(kind) or kind
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    if default is not None and origin is not bool:
        help_text += f" (default: {','.join(map(str, default)) if isinstance(default, list) else default})"
    common = dict(dest=f.name, default=argparse.SUPPRESS, help=help_text)
    if origin is bool and f.name == "has_header":
        parser.add_argument(flag_name(f.name), choices=["yes", "no"], type=str, **common)
    elif origin is bool and default is True:  # progress: --no-progress turns it off
        parser.add_argument("--no-" + f.name.replace("_", "-"), action="store_false", **common)
    elif origin is bool:
        parser.add_argument(flag_name(f.name), action="store_true", **common)
    elif origin is list:
        item = (typing.get_args(kind) or (str,))[0]
        if f.name == "split":
            parser.add_argument(flag_name(f.name), type=int, nargs=3, metavar=("TRAIN", "VALIDATION", "TEST"), **common)
        else:  # comma-separated or space-separated
            parser.add_argument(flag_name(f.name), type=str, nargs="+", metavar=item.__name__.upper(), **common)
    else:
        converter = {int: int, float: float}.get(origin, str)
        choices = f.metadata.get("choices")
        parser.add_argument(flag_name(f.name), type=converter, metavar=_metavar(choices, origin), **common)


def _metavar(choices, origin) -> str | None:
    if choices:
        return "{" + ",".join(map(str, choices)) + "}"
    return {int: "N", float: "X"}.get(origin)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def resolve_settings(cls: type, namespace: argparse.Namespace, defaults: dict[str, Any] | None = None):
    """The config: the field defaults, then `defaults` (the built-in task's), then the --config file, then the flags
    given. Raises SettingError / ValueError naming the setting."""
    given = dict(vars(namespace))
    values: dict[str, Any] = dict(defaults or {})
    if "config" in given:
        path = given.pop("config")
        from_file = load_config_file(path)
        known = {f.name for f in dataclasses.fields(cls)}
        for key in from_file:
            if key not in known:  # named with its file, where it is to be mended (the flag's name is no help there)
                raise SettingError("config", f"{path}: {key}: {unknown_setting(str(key), known)}")
        if not isinstance(from_file.get("model") or {}, dict):
            raise SettingError(
                "config",
                f"{path}: model: {from_file['model']!r} is not a mapping of FastformerConfig fields (model: "
                "{hidden_size: 128, ...})",
            )
        values = {**values, **from_file, "model": {**values.get("model", {}), **(from_file.get("model") or {})}}
    for key, text in [item.partition("=")[::2] for item in given.pop("model_overrides", [])]:
        if not key:
            raise ValueError(f"--model {key}={text}: expected FIELD=VALUE")
        values.setdefault("model", {})
        values["model"] = {**values["model"], key: _value(text)}
    for item in given.pop("where", []):
        split, _, condition = item.partition(":")
        key, _, value = condition.partition("=")
        splits = [f.name[: -len("_where")] for f in dataclasses.fields(cls) if f.name.endswith("_where")]
        if split not in splits or not key:
            raise ValueError(f"--where {item!r}: expected SPLIT:KEY=VALUE with SPLIT {', '.join(splits)}")
        values.setdefault(f"{split}_where", {})
        values[f"{split}_where"] = {**(values[f"{split}_where"] or {}), key: value}
    if "has_header" in given:
        given["has_header"] = given["has_header"] == "yes"
    folder = given.get("init_from") or values.get("init_from")
    if folder and getattr(cls, "FINE_TUNES_FROM_FOLDER", False):  # its own recipe, under --config and the flags
        values = {**from_folder(cls, folder, values, given), **values}
    values.update(given)
    return cls.from_dict(values)


def from_folder(cls: type, folder: str, values: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The --init-from folder's fine_tuning.json settings that neither --config nor a flag sets, said in one line on
    standard error (fastformer.engine.init_from.fine_tuning_defaults; a field `cls` has not is left out)."""
    try:
        recipe = fine_tuning_defaults(folder, {f.name for f in dataclasses.fields(cls)})
    except InitFromError as error:
        raise ValueError(str(error)) from None
    taken = {k: v for k, v in recipe.items() if k not in values and k not in given}
    if taken:
        flags = " ".join(flag_name(k) if v is True else f"{flag_name(k)} {v}" for k, v in taken.items())
        print(f"--init-from {folder}: its fine-tuning settings: {flags} (a flag given wins)", file=sys.stderr)
    return taken


def verb_classes(verb: str) -> dict[str, type]:
    """{task: the settings class of `verb`} for every task that declares the verb with settings (TASKS)."""
    from fastformer.tasks.registry import TASKS

    return {name: entry.verbs[verb] for name, entry in TASKS.items() if entry.verbs.get(verb) is not None}


def add_verb_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """The flags of `fastformer VERB DIR`: the union of every task's settings for the verb, each field once. A field
    only some tasks read says which ("[lm]"); one whose help differs between tasks gives each task's."""
    classes = verb_classes(verb)
    fields: dict[str, tuple[dataclasses.Field, Any, dict[str, list[str]]]] = {}
    for task, cls in classes.items():
        types = field_types(cls)
        for f in dataclasses.fields(cls):
            helps = fields.setdefault(f.name, (f, types[f.name], {}))[2]
            helps.setdefault(f.metadata.get("help", ""), []).append(task)
    for f, annotation, helps in fields.values():
        if not f.metadata.get("flag", True):
            continue
        readers = [task for tasks in helps.values() for task in tasks]
        if len(helps) == 1:
            help_text = next(iter(helps))
            if len(readers) < len(classes):
                help_text += f" [{', '.join(readers)}]"
        else:
            help_text = "; ".join(f"{', '.join(tasks)}: {text}" for text, tasks in helps.items())
        add_field_argument(parser, f, annotation, help_text)
    if "where" in fields:  # a mapping, given KEY=VALUE at a time (the verb reads the items into the field)
        readers = [task for tasks in fields["where"][2].values() for task in tasks]
        help_text = f"JSON Lines filter, repeatable [{', '.join(readers)}]"
        parser.add_argument("--where", action="append", default=argparse.SUPPRESS, metavar="KEY=VALUE", help=help_text)


def where_filter(verb: str, args: argparse.Namespace) -> tuple[argparse.Namespace, dict[str, str] | None]:
    """(the flags but --where, the --where items as a filter) of `fastformer VERB`, or a one-line exit."""
    where = getattr(args, "where", [])
    bad = [item for item in where if "=" not in item]
    if bad:
        raise SystemExit(f"fastformer {verb}: --where {bad[0]!r}: expected KEY=VALUE")
    given = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "where"})
    return given, dict(item.split("=", 1) for item in where) or None


def _given_flags(namespace: argparse.Namespace, positional: tuple[str, ...], values: dict[str, Any]) -> dict[str, Any]:
    """The flags given on a verb's command line (its positional arguments aside), and `values` that are set."""
    given = {k: v for k, v in vars(namespace).items() if k not in ("command", *positional)}
    given.update({k: v for k, v in values.items() if v is not None})
    return given


def _verb_settings_or_exit(verb: str, cls: type, values: dict[str, Any]):
    """`cls.from_dict(values)`, or the one-line exit `fastformer VERB: --flag: what is wrong`."""
    from fastformer.engine.settings import SettingError

    try:
        return cls.from_dict(values)
    except (SettingError, ValueError) as error:
        raise SystemExit(f"fastformer {verb}: {error}") from None


def check_verb_flags(verb: str, namespace: argparse.Namespace, positional: tuple[str, ...], **values: Any) -> None:
    """The flags given, checked (types, ranges, required ones) by every task's settings class that reads them, before
    the folder is looked at: a bad value is named first whatever the folder holds; or the one-line exit."""
    given = _given_flags(namespace, positional, values)
    for cls in dict.fromkeys(verb_classes(verb).values()):  # a class several tasks share, checked once
        names = {f.name for f in dataclasses.fields(cls)}
        _verb_settings_or_exit(verb, cls, {k: v for k, v in given.items() if k in names})


def verb_settings(verb: str, task: str, namespace: argparse.Namespace, positional: tuple[str, ...], **values: Any):
    """(settings, namespace) of `fastformer VERB DIR` on a `task` folder: the flags given (and `values`, where not
    None) read into the task's settings class for the verb (range-checked), and the namespace with every field of it
    set (the defaults where a flag was not given); or the one-line exit `fastformer VERB: --flag: what is wrong`,
    naming any flag the task does not read (ignoring it would be silent)."""
    from fastformer.engine.verbs import GERUNDS

    cls = verb_classes(verb)[task]
    names = [f.name for f in dataclasses.fields(cls)]
    given = _given_flags(namespace, positional, values)
    unread = [name for name in given if name not in names]
    if unread:
        root = cls.__mro__[-3]  # the verb's class in engine/verbs.py (..., root, Settings, object): its fields all read
        own = [n for n in names if n not in {f.name for f in dataclasses.fields(root)}] or names
        flags = ", ".join(flag_name(name) for name in unread)
        reads = ", ".join(flag_name(name) for name in own)
        raise SystemExit(f"fastformer {verb}: {flags}: not read when {GERUNDS[verb]} a {task} run (it reads {reads})")
    settings = _verb_settings_or_exit(verb, cls, given)
    fields = {name: getattr(settings, name) for name in names}
    return settings, argparse.Namespace(**{k: getattr(namespace, k) for k in positional}, **fields)


class RunFolder(NamedTuple):
    """A run folder opened for a verb: the task's object, its name, the folder's architecture, the verb's settings
    and the namespace with every setting's field (`open_run_folder`)."""

    runner: Any
    task: str
    architecture: str | None
    settings: Any
    args: argparse.Namespace


def open_run_folder(verb: str, namespace: argparse.Namespace, positional: tuple[str, ...], **values: Any) -> RunFolder:
    """`fastformer VERB DIR ...` up to the work: the flags checked (`check_verb_flags`, before the folder is looked
    at), the folder's task (a folder no run wrote, or a task without the verb: the one-line exit) and its settings
    (`verb_settings`)."""
    from fastformer.tasks.registry import TASKS, NotARunFolder, task_for_verb

    check_verb_flags(verb, namespace, positional, **values)
    try:
        task, architecture = task_for_verb(namespace.model_dir, verb)
    except NotARunFolder as error:
        raise SystemExit(f"fastformer {verb}: {error}") from None
    settings, args = verb_settings(verb, task, namespace, positional, **values)
    check_positions(verb, namespace.model_dir, settings, architecture)
    return RunFolder(TASKS[task](), task, architecture, settings, args)


def check_positions(verb: str, folder, settings, architecture: str | None) -> None:
    """--max-length (a summarizer's --max-source-length) past the model's positions, or given to a folder with no
    positions (a bag-of-words or Lead-3 baseline reads whole texts; the flag would be ignored): the one-line exit
    naming it, before any text is read (a model would fail on the first long text, deep in its embeddings)."""
    from pathlib import Path

    asked = [(name, value) for name in ("max_length", "max_source_length") if (value := getattr(settings, name, None))]
    if not asked:
        return
    config = Path(folder) / "config.json"
    if not config.is_file():
        flag, baseline = flag_name(asked[0][0]), f"the {architecture} baseline" if architecture else "a baseline"
        raise SystemExit(f"fastformer {verb}: {flag}: {folder} holds {baseline}, which reads whole texts")
    try:
        positions = json.loads(config.read_text()).get("max_position_embeddings")
    except (json.JSONDecodeError, AttributeError):
        return  # (a damaged config.json is the loader's one line)
    for name, value in asked:
        if isinstance(positions, int) and value > positions:
            raise SystemExit(
                f"fastformer {verb}: {flag_name(name)} {value}: the model reads at most {positions} tokens (its "
                "max_position_embeddings)"
            )
