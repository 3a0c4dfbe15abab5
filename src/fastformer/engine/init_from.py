"""Fine-tuning from a pretrained folder (`--init-from DIR`): its tokenizer, its encoder weights, a fresh head.

A folder of any `fastformer` head serves (a `fastformer train pretrain` masked LM, a causal LM, a classifier): every
head keeps its encoder under the `fastformer.` prefix, so `from_pretrained` of another head copies the encoder and
initialises the rest. What would make the copy wrong is refused before anything is built, in one line naming both
values: a different size, attention type or vocabulary, or more positions than the folder has.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from fastformer.presets import mixer_of

# Config fields that give the encoder's tensors their shapes or their meaning: a fine-tuning run may not change them
# (dropouts, the head and the attention implementation it may).
ENCODER_FIELDS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "vocab_size",
    "embedding_size",
    "max_position_embeddings",
    "position_embedding_type",
    "embedding_layer_norm",
    "norm_position",
    "hidden_act",
    "attention_type",
    "interaction",
    "query_value_sharing",
    "layer_sharing",
    "head_sharing",
    "scoring",
    "transform",
    "attention_output_dense",
    "query_residual",
    "causal",
    "pad_token_id",
)


LOCAL_MIXING = re.compile(r"\.attention\.(query|key|value)_conv\.weight$")


class InitFromError(ValueError):
    """A pretrained folder that cannot start this run; the message names the setting and both values."""


# A pretrained folder may say how it is best fine-tuned (fine_tuning.json: the settings its fine-tuning runs used and
# were measured with, e.g. the shipped student's learning rate chosen on validation): `--init-from` takes them where
# the command line and --config do not set them, so `fastformer train --train my.csv --init-from DIR` needs no
# recipe of its own. Only settings that shape the optimisation, not the data or the model.
FINE_TUNING_FILE = "fine_tuning.json"
FINE_TUNING_FIELDS = {
    "learning_rate": float,
    "warmup": float,
    "batch_size": int,
    "epochs": float,
    "scheduler": str,
    "weight_decay": float,
    "bf16": bool,
}


def fine_tuning_defaults(folder: str | Path, fields: set[str]) -> dict[str, Any]:
    """The folder's fine_tuning.json settings that a run with these config `fields` takes ({} when there is no
    file); a damaged file, an unknown setting or a value of the wrong type is an InitFromError naming the file."""
    path = Path(folder) / FINE_TUNING_FILE
    if not path.is_file():
        return {}
    try:
        recipe = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InitFromError(f"--init-from {path}: not valid JSON ({error})") from None
    if not isinstance(recipe, dict):
        raise InitFromError(f"--init-from {path}: expected a JSON object of settings")
    chosen = {}
    for key, value in recipe.items():
        if key.startswith("_"):  # "_measured": why these values, for the reader
            continue
        kind = FINE_TUNING_FIELDS.get(key)
        if kind is None:
            raise InitFromError(
                f"--init-from {path}: {key!r} is not a fine-tuning setting ({', '.join(FINE_TUNING_FIELDS)})"
            )
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, (int, float) if kind is float else kind):
            raise InitFromError(f"--init-from {path}: {key}: {value!r} must be of type {kind.__name__}")
        if key in fields:
            chosen[key] = kind(value)
    return chosen


def pretrained_config(folder: str | Path):
    """The FastformerConfig of a pretrained folder (one line naming the folder when it has none)."""
    from fastformer.models.fastformer import FastformerConfig

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise InitFromError(f"--init-from {folder}: no config.json (not a saved fastformer model)")
    try:
        config = FastformerConfig.from_pretrained(str(folder))
    except (OSError, ValueError) as error:
        raise InitFromError(f"--init-from {folder}: {str(error).splitlines()[0]}") from None
    if getattr(config, "model_type", None) != "fastformer":
        raise InitFromError(f"--init-from {folder}: model type {config.model_type!r}, not fastformer")
    return config


def pretrained_tokenizer(folder: str | Path, given: str | None = None):
    """The folder's tokenizer; `given` (--tokenizer) must hold the same vocabulary. A folder that is no saved model
    (its parent, a checkpoint's folder) or holds no tokenizer is one line naming it: transformers' own message is five
    lines about sentencepiece."""
    from transformers import AutoTokenizer

    pretrained_config(folder)  # first: "no config.json (not a saved fastformer model)" says what the folder is not
    folder = Path(folder)
    if not any((folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        raise InitFromError(f"--init-from {folder}: holds no tokenizer (no tokenizer.json or tokenizer_config.json)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except (OSError, ValueError) as error:
        first_line = str(error).splitlines()[0]
        raise InitFromError(f"--init-from {folder}: its tokenizer does not load: {first_line}") from None
    if given:
        other = AutoTokenizer.from_pretrained(str(given))
        if other.get_vocab() != tokenizer.get_vocab():
            raise InitFromError(
                f"--tokenizer {given}: its vocabulary ({len(other)} tokens) differs from the one "
                f"--init-from {folder} was trained with ({len(tokenizer)} tokens)"
            )
    return tokenizer


def fine_tuning_config(
    folder: str | Path,
    head_fields: dict[str, Any],
    overrides: dict[str, Any],
    architecture: str,
    tokenizer,
    max_length: int,
    length_flag: str = "--max-length",
):
    """The pretrained config with the new head's fields (labels, ...) and `overrides` (--model) that leave the
    encoder as it is; every mismatch is an InitFromError naming both values (`length_flag`: the option that set
    `max_length`)."""
    config = pretrained_config(folder)
    wanted = mixer_of(architecture) or "fastformer"
    if config.attention_type != wanted:
        raise InitFromError(
            f"--architecture {architecture}: --init-from {folder} was trained with "
            f"attention_type {config.attention_type!r}"
        )
    for key, value in overrides.items():
        if key in ENCODER_FIELDS and getattr(config, key, None) != value:
            pretrained = getattr(config, key, None)
            raise InitFromError(
                f"--model {key}={value!r}: --init-from {folder} has {key}={pretrained!r} (the "
                "encoder's weights keep its shapes)"
            )
    if len(tokenizer) != config.vocab_size:
        raise InitFromError(
            f"--init-from {folder}: its tokenizer has {len(tokenizer)} tokens, its model vocab_size {config.vocab_size}"
        )
    if max_length > config.max_position_embeddings:
        raise InitFromError(
            f"{length_flag} {max_length}: --init-from {folder} has max_position_embeddings "
            f"{config.max_position_embeddings}"
        )
    config.update({**head_fields, **overrides})
    config.architectures = None
    return config


def load_encoder(model_class, folder: str | Path, config):
    """`model_class` with the folder's encoder tensors (`fastformer.*`) and a fresh head. Tensors that are neither
    copied nor the head's own are refused: a renamed or missing encoder tensor would otherwise start random."""
    # a head of another size (a 5-class classifier's folder starting a binary one) starts fresh like a missing one;
    # transformers would raise on it, so sizes are compared here: the encoder's must match (refused below)
    import torch

    # float32 whatever the folder's dtype: transformers' default ("auto") would train a bf16 checkpoint (the shipped
    # student) in bf16 weights, where small updates round away; --bf16 autocasts the arithmetic instead
    model, info = model_class.from_pretrained(
        str(folder), config=config, output_loading_info=True, ignore_mismatched_sizes=True, dtype=torch.float32
    )
    mismatched_names = {
        entry[0] if isinstance(entry, (tuple, list)) else entry for entry in info.get("mismatched_keys") or []
    }
    encoder_mismatched = sorted(k for k in mismatched_names if encoder_depth(k) is not None)
    if encoder_mismatched:
        raise InitFromError(f"--init-from {folder}: encoder tensors of another shape: {encoder_mismatched[:3]}")
    fresh = set(info.get("missing_keys", ())) | mismatched_names
    # the local-mixing convolutions a run switches on (--model local_mixing=K) start as the identity: the encoder's
    # outputs are the folder's until they learn
    encoder_missing = sorted(
        k
        for k in fresh
        if k.startswith("fastformer.") and not k.startswith("fastformer.pooler.") and not LOCAL_MIXING.search(k)
    )
    if encoder_missing:
        raise InitFromError(
            f"--init-from {folder}: the folder lacks encoder tensors {', '.join(encoder_missing[:5])}"
            f"{' ...' if len(encoder_missing) > 5 else ''}"
        )
    if model.can_generate():  # decoding settings come from this run's config, not the pretrained folder's
        from transformers import GenerationConfig

        model.generation_config = GenerationConfig.from_model_config(model.config)
    return model, sorted(fresh)


def continuing_config(folder: str | Path, overrides: dict[str, Any], architecture: str, tokenizer, block_size: int):
    """The config of a saved causal language model that `train lm --init-from` trains on (continued pretraining):
    the folder must hold a causal LM, since its next-token head is kept too, and every `fine_tuning_config` check
    holds (same attention type and sizes, `block_size` within its positions)."""
    saved = pretrained_config(folder).architectures or []
    if not any(name.endswith("ForCausalLM") for name in saved):
        held = f"a {saved[0]}" if saved else "a model with no head named in its config.json"
        raise InitFromError(
            f"--init-from {folder}: holds {held}, not a causal language model (its next-token head would start "
            "random; `fastformer train lm` trains one)"
        )
    return fine_tuning_config(folder, {}, overrides, architecture, tokenizer, block_size, "--block-size")


def load_whole(model_class, folder: str | Path, config):
    """`model_class` with every tensor from the folder, its head included; a tensor the folder lacks is refused (it
    would start random in a run that claims to continue)."""
    model, fresh = load_encoder(model_class, folder, config)
    if fresh:
        raise InitFromError(f"--init-from {folder}: the folder lacks tensors {fresh[:5]}")
    return model


def origin_report(folder: str | Path, fresh: list[str]) -> dict[str, Any]:
    """What metrics.json says of the starting point."""
    folder = Path(folder)
    report: dict[str, Any] = dict(folder=str(folder), newly_initialised=fresh)
    config = json.loads((folder / "config.json").read_text())
    report["architectures"] = config.get("architectures")
    metrics = folder / "metrics.json"
    if metrics.is_file():
        pretraining = json.loads(metrics.read_text())
        train = pretraining.get("train") or {}
        report["pretraining"] = dict(
            steps=train.get("steps"), tokens=train.get("tokens"), validation=pretraining.get("validation")
        )
    return report


def start_from(model_class, cfg, head_fields: dict[str, Any], tokenizer, max_length: int):
    """(model, origin report for metrics.json): `model_class` with cfg.init_from's encoder and a fresh head whose
    fields are `head_fields`; every mismatch refused (`fine_tuning_config`)."""
    config = fine_tuning_config(cfg.init_from, head_fields, cfg.model, cfg.architecture, tokenizer, max_length)
    model, fresh = load_encoder(model_class, cfg.init_from, config)
    report_start(cfg.init_from, model, fresh)
    return model, origin_report(cfg.init_from, fresh)


def report_start(folder, model, fresh: list[str]) -> None:
    """One line on standard error: what --init-from copied and what starts new (in place of transformers' report)."""
    copied = sum(1 for name in model.state_dict() if name not in set(fresh))
    parts = sorted({name.rsplit(".", 1)[0] for name in fresh})
    new = ", ".join(parts[:4]) + (f" and {len(parts) - 4} more" if len(parts) > 4 else "") if parts else "nothing"
    print(f"--init-from {folder}: {copied} tensors copied; new: {new}", file=sys.stderr)


def check_folder_files(folder: str | Path) -> None:
    """A damaged --init-from folder is one line naming the file, before anything loads it: config.json that is not
    JSON, no weights, a model.safetensors whose header cannot be read (truncated, garbage)."""
    from fastformer.engine.folder import model_files_problem

    problem = model_files_problem(Path(folder))
    if problem:
        raise InitFromError(f"--init-from {problem}")


def check_tensor_shapes(folder: str | Path, config) -> None:
    """Every encoder tensor of the folder has the shape its config.json gives it (a file edited or mixed up with
    another model's): one line naming the first that does not, before anything is built. The expected shapes come
    from the encoder built on the meta device (no memory, no time)."""
    import torch
    from safetensors import safe_open

    from fastformer.engine.folder import weight_files
    from fastformer.models.fastformer import FastformerModel

    with torch.device("meta"):
        expected = {name: tuple(t.shape) for name, t in FastformerModel(config).state_dict().items()}
    for weights in weight_files(Path(folder)):  # model.safetensors, or every shard of a sharded folder
        with safe_open(str(weights), framework="pt") as f:
            for key in f.keys():
                name = key.removeprefix("fastformer.")
                if name in expected and tuple(f.get_slice(key).get_shape()) != expected[name]:
                    raise InitFromError(
                        f"--init-from {weights}: {key} has shape {tuple(f.get_slice(key).get_shape())}, its "
                        f"config.json gives {expected[name]} (damaged or mixed up with another model's weights)"
                    )


def check_start(cfg, head_fields: dict[str, Any], max_length: int) -> None:
    """Refuses a --init-from folder that cannot start this run, before the run folder is touched."""
    if cfg.init_from:
        check_folder_files(cfg.init_from)
        tokenizer = pretrained_tokenizer(cfg.init_from, cfg.tokenizer)
        config = fine_tuning_config(cfg.init_from, head_fields, cfg.model, cfg.architecture, tokenizer, max_length)
        check_tensor_shapes(cfg.init_from, pretrained_config(cfg.init_from))
        if getattr(cfg, "layer_lr_decay", 1.0) != 1.0 and config.layer_sharing:
            raise InitFromError(
                f"--layer-lr-decay {cfg.layer_lr_decay}: --init-from {cfg.init_from} shares one layer across its "
                f"{config.num_hidden_layers} depths (layer_sharing=true), so its layers have no rates of their own"
            )


def encoder_depth(name: str) -> int | None:
    """Where a parameter sits in the pretrained encoder (what `load_encoder` copies: `fastformer.*` but the pooler):
    0 for the embeddings, i + 1 for encoder layer i; None for the rest (head, pooler, decoder, user encoder: fresh).
    A tensor tied to the encoder's (a decoder's word embeddings) is named, and so counted, as the encoder's."""
    if not name.startswith("fastformer.") or name.startswith("fastformer.pooler."):
        return None
    match = re.match(r"fastformer\.encoder\.layers\.(\d+)\.", name)
    return int(match[1]) + 1 if match else 0


def layer_rate_scales(model, decay: float) -> dict[str, float]:
    """{parameter name: its learning rate / --learning-rate} for discriminative fine-tuning: the pretrained encoder's
    layer i of L at decay ** (L - i), its embeddings at decay ** (L + 1), every fresh parameter at 1."""
    layers = model.config.num_hidden_layers
    scales = {}
    for name, _ in model.named_parameters():
        depth = encoder_depth(name)
        scales[name] = 1.0 if depth is None else decay ** (layers + 1 - depth)
    return scales
