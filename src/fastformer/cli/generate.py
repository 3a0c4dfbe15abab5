"""Continue prompts with a trained causal language model folder (`fastformer train lm`), through `generate()`:
greedy by default, beam search with --num-beams, sampling with --do-sample. Prompts are given here or in a file (one
a line, or a JSON Lines / CSV / TSV file's --text-field) or a folder of text files (one prompt each, by name); each
result is printed as a JSON line (or written to --output).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

HELP = "continue prompts with a trained language model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `fastformer train lm` (any AutoModelForCausalLM)")
    parser.add_argument("prompts", nargs="*", help="prompts to continue")
    parser.add_argument(
        "--file",
        help="a file of prompts: one a line, or by its name a JSON Lines / CSV / TSV file's --text-field; or a folder "
        "of text files, one prompt each (by name)",
    )
    parser.add_argument("--text-field", help="JSON key or CSV / TSV column of a --file's prompts (default: text)")
    parser.add_argument("--output", help="write JSON Lines here instead of printing")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--num-beams", type=int, default=1)
    parser.add_argument("--do-sample", action="store_true", help="sample instead of greedy / beam search")
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--top-k", type=int, default=None)
    parser.add_argument("--top-p", type=float, default=None)
    parser.add_argument("--no-repeat-ngram-size", type=int, default=None)
    parser.add_argument("--repetition-penalty", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0, help="random seed for sampling")


# each decoding flag's valid values, checked before any file is read or model loaded: transformers' own checks are
# worded in its argument names, let --top-p 2 through, and --num-beams 0 was a ZeroDivisionError traceback
LIMITS = {
    "max_new_tokens": (lambda v: v >= 1, ">= 1"),
    "num_beams": (lambda v: v >= 1, ">= 1"),
    "temperature": (lambda v: math.isfinite(v) and v > 0, "> 0 (greedy decoding is the default, without --do-sample)"),
    "top_k": (lambda v: v >= 0, ">= 0 (0: no top-k cut)"),
    "top_p": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "no_repeat_ngram_size": (lambda v: v >= 1, ">= 1"),
    "repetition_penalty": (lambda v: math.isfinite(v) and v > 0, "> 0 (1: none)"),
    "seed": (lambda v: v >= 0, ">= 0"),
}
SAMPLING_ONLY = ("temperature", "top_k", "top_p")  # what greedy decoding and beam search ignore


def check_decoding_flags(args: argparse.Namespace) -> None:
    """A decoding flag out of its range, or a sampling flag without --do-sample (it would be ignored): one line."""
    for name, (valid, what) in LIMITS.items():
        value = getattr(args, name)
        if value is not None and not valid(value):
            raise SystemExit(f"fastformer generate: --{name.replace('_', '-')}: must be {what}, got {value:g}")
    given = [f"--{n.replace('_', '-')}" for n in SAMPLING_ONLY if getattr(args, n) is not None]
    if given and not args.do_sample:
        acts, them = ("acts", "it") if len(given) == 1 else ("act", "them")
        raise SystemExit(
            f"fastformer generate: {' and '.join(given)} only {acts} when sampling: add --do-sample (greedy decoding "
            f"and beam search would ignore {them})"
        )


def run(args: argparse.Namespace) -> int:
    import torch

    from fastformer.cli.inputs import texts_from, write_lines

    check_decoding_flags(args)

    if args.output:
        from fastformer.cli.outputs import OutputRefused, check_output

        try:
            check_output(
                args.output, inputs=(args.file,), folders=(args.model_dir, args.file), overwrite=args.overwrite
            )
        except OutputRefused as error:
            raise SystemExit(f"fastformer generate: {error}") from None
    prompts = texts_from(args.prompts, args.file, "generate", "prompts", args.text_field)
    from fastformer.tasks.registry import TASKS, NotARunFolder, VerbNotSupported, task_for_verb

    try:  # a run folder of a task that does not generate is refused here
        task, _ = task_for_verb(args.model_dir, "generate")
    except VerbNotSupported as error:
        raise SystemExit(f"fastformer generate: {error}") from None
    except NotARunFolder:
        task = "lm"  # any saved causal LM folder (a Hugging Face one too) is read as the lm task reads its own
    if not Path(args.model_dir, "config.json").is_file():
        raise SystemExit(f"fastformer generate: {args.model_dir}: not a saved model folder (no config.json)")
    options = dict(max_new_tokens=args.max_new_tokens, num_beams=args.num_beams, do_sample=args.do_sample)
    for name in ("temperature", "top_k", "top_p", "no_repeat_ngram_size", "repetition_penalty"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    torch.manual_seed(args.seed)
    try:
        continuations = TASKS[task]().generate_texts(args.model_dir, prompts, **options)
    except ValueError as error:
        raise SystemExit(f"fastformer generate: {error}") from None
    lines = [json.dumps(dict(prompt=p, continuation=c)) for p, c in zip(prompts, continuations, strict=True)]
    write_lines(lines, args.output)
    return 0
