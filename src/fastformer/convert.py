"""Load checkpoints of the authors' notebook (wuch15/Fastformer, `Fastformer.ipynb`) into our models.

The notebook's classifier is `Model(word_embedding, fastformer_model: FastformerEncoder, dense_linear)`; its
state_dict names map one to one onto FastformerForSequenceClassification in the "official" preset. Every size is
read off the tensors. Parity with the notebook is tested against `shared/fixtures/official_fastformer.safetensors`.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification

# notebook name (after the `fastformer_model.` prefix) -> ours (after `fastformer.encoder.`)
_LAYER_RENAMES = {
    "attention.self.query": "attention.query",
    "attention.self.key": "attention.key",
    "attention.self.query_att": "attention.query_att",
    "attention.self.key_att": "attention.key_att",
    "attention.self.transform": "attention.transform",
    "attention.output.dense": "attention.output_dense",
    "attention.output.LayerNorm": "attention_norm",
    "intermediate.dense": "feed_forward.fc_in",
    "output.dense": "feed_forward.fc_out",
    "output.LayerNorm": "feed_forward_norm",
}
_TOP_RENAMES = {
    "word_embedding.weight": "fastformer.word_embeddings.weight",
    "dense_linear.weight": "classifier.weight",
    "dense_linear.bias": "classifier.bias",
    "fastformer_model.position_embeddings.weight": "fastformer.encoder.position_embeddings.weight",
    "fastformer_model.LayerNorm.weight": "fastformer.encoder.embedding_norm.weight",
    "fastformer_model.LayerNorm.bias": "fastformer.encoder.embedding_norm.bias",
    "fastformer_model.poolers.0.att_fc1.weight": "fastformer.pooler.att_fc1.weight",
    "fastformer_model.poolers.0.att_fc1.bias": "fastformer.pooler.att_fc1.bias",
    "fastformer_model.poolers.0.att_fc2.weight": "fastformer.pooler.att_fc2.weight",
    "fastformer_model.poolers.0.att_fc2.bias": "fastformer.pooler.att_fc2.bias",
}
_LAYER_KEY = re.compile(r"^fastformer_model\.encoders\.(\d+)\.(.+)\.(weight|bias)$")


def _strip_wrappers(state_dict: dict) -> dict[str, torch.Tensor]:
    """Unwrap {"state_dict": ...}-style containers and DataParallel / torch.compile prefixes."""
    for key in ("state_dict", "model_state_dict", "model"):
        if key in state_dict and isinstance(state_dict[key], dict):
            state_dict = state_dict[key]
    out = {}
    for name, tensor in state_dict.items():
        if not isinstance(tensor, torch.Tensor):
            continue
        for prefix in ("module.", "_orig_mod."):
            if name.startswith(prefix):
                name = name[len(prefix) :]
        out[name] = tensor
    return out


def rename_official(state_dict: dict) -> dict[str, torch.Tensor]:
    """The notebook's parameter names -> FastformerForSequenceClassification's. Unknown names raise KeyError."""
    renamed, unknown = {}, []
    for name, tensor in _strip_wrappers(state_dict).items():
        if name in _TOP_RENAMES:
            renamed[_TOP_RENAMES[name]] = tensor
            continue
        match = _LAYER_KEY.match(name)
        if match and match.group(2) in _LAYER_RENAMES:
            index, module, kind = match.groups()
            renamed[f"fastformer.encoder.layers.{index}.{_LAYER_RENAMES[module]}.{kind}"] = tensor
        elif name not in ("input_ids", "expected_logits"):  # the fixture file stores these beside the weights
            unknown.append(name)
    if unknown:
        raise KeyError(f"not a parameter of the authors' Fastformer classifier: {', '.join(sorted(unknown))}")
    return renamed


# The official config's sizes: field -> (the notebook's tensor that holds it, which dimension).
_OFFICIAL_SIZES = {
    "vocab_size": ("word_embedding.weight", 0),
    "hidden_size": ("word_embedding.weight", 1),
    "num_labels": ("dense_linear.weight", 0),
    "max_position_embeddings": ("fastformer_model.position_embeddings.weight", 0),
    "num_attention_heads": ("fastformer_model.encoders.0.attention.self.query_att.weight", 0),
    "intermediate_size": ("fastformer_model.encoders.0.intermediate.dense.weight", 0),
}


def official_config(state_dict: dict, **overrides) -> FastformerConfig:
    """The "official" preset config with every size read from the notebook's tensors."""
    sd = _strip_wrappers(state_dict)
    try:
        fields = {name: sd[key].shape[dim] for name, (key, dim) in _OFFICIAL_SIZES.items()}
    except KeyError as missing:
        raise KeyError(f"not a checkpoint of the authors' Fastformer classifier: missing {missing}") from None
    fields["num_hidden_layers"] = 1 + max(int(m.group(1)) for m in map(_LAYER_KEY.match, sd) if m)
    fields["pad_token_id"] = 0  # the notebook's Embedding(padding_idx=0) and mask = input_ids.bool()
    return FastformerConfig.from_preset("official", **{**fields, **overrides})


def from_official(state_dict: dict, **config_overrides) -> FastformerForSequenceClassification:
    """A FastformerForSequenceClassification (official preset) holding the notebook's weights, in eval mode."""
    model = FastformerForSequenceClassification(official_config(state_dict, **config_overrides))
    weights = rename_official(state_dict)
    dtype = next(iter(weights.values())).dtype
    model.to(dtype)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise KeyError(f"checkpoint does not fit the official model: missing {missing}, unexpected {unexpected}")
    return model.eval()


def load_checkpoint(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a .safetensors or a torch (.pt / .bin / .pth) state_dict file, without unpickling arbitrary code."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint file")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except Exception as error:  # SafetensorError / OSError: damaged, whatever the damage
            raise ValueError(f"{path}: damaged ({str(error).splitlines()[0]})") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a pickle of other objects (refused by weights_only), truncation, not a torch file
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"{path}: not a plain state_dict of tensors (read with weights_only, no code is run: {first[:160]})"
        ) from None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: holds a {type(state).__name__}, not a state_dict (a mapping of names to tensors)")
    return state


def convert_official_file(source: str | Path, output_dir: str | Path) -> FastformerForSequenceClassification:
    """Convert a notebook checkpoint file into a `save_pretrained` directory (config.json + model.safetensors)."""
    model = from_official(load_checkpoint(source))
    model.save_pretrained(output_dir)
    return model
