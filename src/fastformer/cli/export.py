"""Export a trained classifier, language model or summarizer folder as a `torch.export` program: OUT/model.pt2 takes
`input_ids` and `attention_mask` of any batch size and any length up to the model's positions, and needs neither
fastformer nor transformers to run, only torch. The tokenizer and config.json are copied beside it. With `--onnx`,
an ONNX file too (one self-contained model.onnx, inputs `input_ids` / `attention_mask`, output `logits`), where
`torch.onnx.export(dynamo=True)` succeeds (it needs the onnx and onnxscript packages: `pip install -e ".[onnx]"`).

Serving it:  program = torch.export.load("OUT/model.pt2").module()
             logits = program(input_ids=ids, attention_mask=mask)   # ids, mask: (batch, length) int64
A language model, and a summarizer with the Fastformer decoder, also get OUT/prefill.pt2 and OUT/decode.pt2, which
generate with the fixed-size decoding state as plain tensors (the loop: fastformer.models.fastformer.exportable).
A summarizer's model.pt2 takes `decoder_input_ids` too (the logits of a given summary).
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import shutil
from pathlib import Path

HELP = "export a trained folder as a torch.export program (and ONNX)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a classifier or language-model folder written by `fastformer train`")
    parser.add_argument("output_dir", help="new folder for model.pt2, the tokenizer and config.json")
    parser.add_argument("--onnx", action="store_true", help="also write model.onnx (needs onnx and onnxscript)")


def export_folder(model_dir: str, output_dir: str, onnx: bool = False) -> dict:
    """Export `model_dir` into `output_dir`; returns what was written."""
    from fastformer.tasks.registry import TASKS, task_for_verb

    task, architecture = task_for_verb(model_dir, "export")
    runner = TASKS[task]()
    model = runner.export_model(model_dir, architecture)
    if model is None:
        raise ValueError(
            f"{model_dir}: a {architecture or task} folder; export takes Fastformer classifiers, language models "
            "and summarizers"
        )
    from fastformer.cli.outputs import OutputRefused, check_output_folder, staged_folder

    try:  # never into the model folder, another run's folder or a folder that holds something
        target = check_output_folder(output_dir, flag="OUT", folders=(model_dir,))
    except OutputRefused as error:
        raise ValueError(str(error)) from None
    # a failure (a full disk, an op export cannot trace) leaves no OUT at all, never a truncated model.pt2
    with staged_folder(target) as out:
        return _export_into(out, model, runner, model_dir, task, onnx)


def _export_into(out, model, runner, model_dir: str, task: str, onnx: bool) -> dict:
    """Write the programs, tokenizer, config and export.json of `model` into `out`; returns what was written."""
    import torch
    from torch.export import Dim
    from transformers import AutoTokenizer

    takes = inspect.signature(model.forward).parameters
    extra = dict(use_cache=False) if "use_cache" in takes else {}  # logits only, no decoding state
    teacher_forced = "decoder_input_ids" in takes  # an encoder-decoder: the logits of a given summary

    class Logits(torch.nn.Module):  # plain tensors in and out: what a server feeds and reads
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits

    class TeacherForcedLogits(Logits):  # a summarizer: the logits of every position of a given summary
        def forward(self, input_ids, attention_mask, decoder_input_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids, **extra
            ).logits

    wrapped = (TeacherForcedLogits if teacher_forced else Logits)(model.eval())
    positions = model.config.max_position_embeddings
    example = dict(
        input_ids=torch.ones(2, min(8, positions), dtype=torch.long),
        attention_mask=torch.ones(2, min(8, positions), dtype=torch.long),
    )
    batch, length = Dim("batch", min=1, max=4096), Dim("length", min=2, max=positions)
    shapes = dict(input_ids={0: batch, 1: length}, attention_mask={0: batch, 1: length})
    if teacher_forced:
        example["decoder_input_ids"] = torch.ones(2, 3, dtype=torch.long)
        shapes["decoder_input_ids"] = {0: batch, 1: Dim("summary", min=1, max=model.config.max_target_positions)}
    with torch.no_grad():
        program = torch.export.export(wrapped, (), example, dynamic_shapes=shapes)
    save_program(program, out / "model.pt2")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.model_max_length > positions:  # a folder of an earlier version: its tokenizer had no limit
        tokenizer.model_max_length = positions
    tokenizer.save_pretrained(out)
    shutil.copy(Path(model_dir) / "config.json", out / "config.json")
    written = dict(
        program="model.pt2",
        task=task,
        inputs=list(example),
        max_length=positions,
        reads=_reads(model_dir, tokenizer.model_max_length),
    )
    written.update(generation_programs(model, runner, out))
    if onnx:
        try:
            # one self-contained file (weights inside, not in a model.onnx.data beside it) whose output is `logits`
            torch.onnx.export(
                wrapped,
                (),
                str(out / "model.onnx"),
                kwargs=example,
                dynamo=True,
                dynamic_shapes=shapes,
                input_names=list(example),
                output_names=["logits"],
                external_data=False,
            )
            written["onnx"] = "model.onnx"
        except Exception as error:  # missing packages or an unsupported op: say so, keep the torch.export program
            written["onnx_skipped"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    (out / "export.json").write_text(json.dumps(written, indent=2))
    return written


def _reads(model_dir: str, max_length: int) -> dict:
    """How the run read a text, which a server should copy: at most `max_length` tokens with the tokenizer's own
    special tokens (the saved tokenizer truncates there: `tokenizer(texts, truncation=True)`), and for a
    classifier its truncation: "head", or "head+tail" (after the opening special tokens, the first `head_tokens`
    of the text and its last ones: `fastformer.data.tokenizer.encode_texts`)."""
    from fastformer.data.tokenizer import HEAD_TOKENS
    from fastformer.engine.folder import run_settings

    reads: dict = dict(max_length=max_length)
    truncation = run_settings(model_dir).get("truncation")
    if truncation:
        reads["truncation"] = truncation
    if truncation == "head+tail":
        reads["head_tokens"] = HEAD_TOKENS
    return reads


def save_program(program, path) -> None:
    """torch.export.save through memory, then one Python write: torch's own zip writer aborts the whole process
    (std::terminate) when the disk fills under it, where a Python write raises OSError that the command reports."""
    import torch

    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    path.write_bytes(buffer.getbuffer())


def generation_programs(model, task, out) -> dict:
    """Write the task's generate-ready programs (prefill + one-token decode, the fixed-size decoding state as plain
    tensors) where it has them; what was written (or why not), for export.json."""

    pair = task.generation_export(model)
    if not pair:
        return {}
    if "programs" not in pair:
        return dict(generation=pair["reason"])
    prefill, decode = pair["programs"]
    save_program(prefill, out / "prefill.pt2")
    save_program(decode, out / "decode.pt2")
    return dict(
        generation=dict(
            prefill="prefill.pt2: (input_ids, attention_mask) -> (next-token logits, *state)",
            decode=f"decode.pt2: {pair['inputs']} -> (next-token logits, *state after the token)",
            state=pair["state"],
            loop="fastformer.models.fastformer.exportable: greedy_decode / greedy_summarize",
        )
    )


def run(args: argparse.Namespace) -> int:
    from fastformer.tasks.registry import NotARunFolder

    try:
        written = export_folder(args.model_dir, args.output_dir, onnx=args.onnx)
    except (NotARunFolder, ValueError, OSError) as error:
        raise SystemExit(f"fastformer export: {error}") from None
    print(json.dumps(written), f"-> {args.output_dir}")
    return 0
