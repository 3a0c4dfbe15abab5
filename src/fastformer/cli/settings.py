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
import typing
from typing import Any

from fastformer.engine.settings import base_type, field_types, load_config_file


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_config_arguments(parser: argparse.ArgumentParser, cls: type, config_file: bool = True) -> None:
    """One flag per field of `cls` that has one (metadata flag=True); `config_file`: also --config FILE."""
    types = field_types(cls)
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if not meta.get("flag", True):
            continue
        kind, _ = base_type(types[f.name])
        origin = typing.get_origin(kind) or kind
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        help_text = meta.get("help", "")
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
                parser.add_argument(
                    flag_name(f.name), type=int, nargs=3, metavar=("TRAIN", "VALIDATION", "TEST"), **common
                )
            else:  # comma-separated or space-separated
                parser.add_argument(flag_name(f.name), type=str, nargs="+", metavar=item.__name__.upper(), **common)
        else:
            converter = {int: int, float: float}.get(origin, str)
            choices = meta.get("choices")
            parser.add_argument(flag_name(f.name), type=converter, metavar=_metavar(choices, origin), **common)
    names = {f.name for f in dataclasses.fields(cls)}
    if "model" in names:
        parser.add_argument(
            "--model",
            action="append",
            default=argparse.SUPPRESS,
            metavar="FIELD=VALUE",
            dest="model_overrides",
            help="model config override, e.g. hidden_size=128 (a FastformerConfig field; the value is read as JSON "
            "when it can be)",
        )
    if "train_where" in names:
        parser.add_argument(
            "--where",
            action="append",
            default=argparse.SUPPRESS,
            metavar="SPLIT:KEY=VALUE",
            help="JSON Lines filter, e.g. train:split=train test:split=test (repeatable)",
        )
    if config_file:
        help_text = "YAML or JSON file of settings (flags override)"
        parser.add_argument("--config", default=argparse.SUPPRESS, help=help_text)


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
        from_file = load_config_file(given.pop("config"))
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
    values.update(given)
    return cls.from_dict(values)


def verb_settings(cls: type, namespace: argparse.Namespace, verb: str, positional: tuple[str, ...], **values: Any):
    """(settings, namespace) of a verb on a trained folder: the flags given read into `cls` (range-checked; `values`
    given as they are), and the namespace with every field set (the defaults where a flag was not given), or the
    one-line exit `fastformer VERB: --flag: what is wrong`."""
    from fastformer.engine.settings import SettingError

    given = {k: v for k, v in vars(namespace).items() if k not in ("command", *positional, *values)}
    try:
        settings = cls.from_dict({**given, **values})
    except (SettingError, ValueError) as error:
        raise SystemExit(f"fastformer {verb}: {error}") from None
    fields = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    return settings, argparse.Namespace(**{k: getattr(namespace, k) for k in positional}, **fields)
