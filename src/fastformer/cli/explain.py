"""Show what a trained Fastformer read: one self-contained HTML page per input (no network), with each word shaded by
the chosen additive-attention weights (the classifier's pooling, or any layer's alpha / beta, one head or the mean),
the prediction, a per-head view and a faithfulness check (the prediction's fall when the top-weighted words are cut,
against random words). Texts come from the command line and / or --file (one a line, or a JSON Lines / CSV / TSV
file's --text-field); a classifier, a language model (the weights behind its next token) and a summarizer (its
encoder over the source) are explained per text, a news recommender per user (--user ID with --data, a MIND folder).
Pages are written to --output-dir (default MODEL_DIR/explanations), named by input (arg-1.html, line-3.html,
user-ID.html); --png adds a static picture and --json the data."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastformer.cli.settings import RunFolder

HELP = "explain predictions: each word shaded by the model's additive-attention weights (HTML, PNG)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fastformer.cli.settings import add_verb_arguments

    parser.add_argument("model_dir", help="a folder written by `fastformer train`")
    parser.add_argument("texts", nargs="*", help="texts to explain")
    add_verb_arguments(parser, "explain")


def _fail(message: str):
    raise SystemExit(f"fastformer explain: {message}")


def _texts(args: argparse.Namespace, runner) -> list[tuple[str, str]]:
    """(name, text) of each input: arg-N for the N-th argument, line-N for the record of --file at line N (row-N of a
    Parquet file; blank lines and empty texts skipped)."""
    from fastformer.cli.inputs import file_inputs

    if args.file and not Path(args.file).exists():  # (a folder: its files are the texts)
        from fastformer.cli.inputs import not_a_file

        _fail(not_a_file(args.file))
    from fastformer.data import DataError

    named = []
    try:  # a file that is not UTF-8 (or not readable) is one line, as predict says it
        for kind, number, text in file_inputs("explain", args, runner):
            if text.strip():
                named.append((f"{'arg' if kind == 'argument' else kind}-{number}", text))  # line-3, row-3
    except (DataError, OSError) as error:
        _fail(str(error))
    if not named:
        _fail("give texts or --file (with at least one non-blank line)")
    return named


def explain_folder(folder: RunFolder, output: Path) -> int:
    """A task explained per user of a data folder (news): one page for the user's impression."""
    args, task = folder.args, folder.task
    from fastformer.data import DataError

    if not args.user or not args.data:
        _fail(f"a {task} run is explained per user: give --user ID and --data (a MIND folder)")
    if args.texts:
        _fail(f"a {task} run is explained per user (--user), not per text")
    try:
        explanation = folder.runner.explain_folder(args.model_dir, folder.architecture, folder.settings)
    except (DataError, ValueError, OSError) as error:
        _fail(str(error))
    output.mkdir(parents=True, exist_ok=True)
    stem = output / f"user-{args.user}"
    written = [explanation.save_html(stem.with_suffix(".html"))]
    if args.png:
        written.append(explanation.save_png(stem.with_suffix(".png")))
    if args.json:
        written.append(explanation.save_json(stem.with_suffix(".json")))
    print(explanation.summary())
    for path in written:
        print(f"  -> {path}")
    return 0


def run(args: argparse.Namespace) -> int:
    from fastformer.cli.settings import open_run_folder, where_filter
    from fastformer.data import DataError
    from fastformer.interpret import View, explain

    given, where = where_filter("explain", args)
    folder = open_run_folder("explain", given, ("model_dir", "texts"), where=where)
    runner, architecture, args = folder.runner, folder.architecture, folder.args
    output = Path(args.output_dir) if args.output_dir else Path(args.model_dir) / "explanations"
    read = getattr(args, "file", None)  # (a task explained per user, news, reads no --file)
    if read and Path(read).is_dir() and output.resolve().is_relative_to(Path(read).resolve()):
        _fail(f"--output-dir {output}: inside the --file folder {read}, whose files are the texts; choose another")
    if not runner.reads_texts:
        return explain_folder(folder, output)
    named = _texts(args, runner)
    try:
        model, tokenizer, reading = runner.explained_model(args.model_dir, architecture)  # as `predict` reads
    except ValueError as error:
        _fail(str(error))
    layers = model.config.num_hidden_layers
    heads = model.config.num_attention_heads
    if args.layer and args.layer > layers:
        _fail(f"--layer {args.layer}: the model has {layers} layers")
    if args.head and args.head > heads:
        _fail(f"--head {args.head}: the model has {heads} heads")
    explained = []  # every input explained before a page is written: a refusal (any input's) writes nothing
    for name, text in named:
        try:
            explanation = explain(
                model,
                tokenizer,
                text,
                faithfulness_k=args.top_k,
                trials=args.trials,
                **{**reading, **({"max_length": args.max_length} if args.max_length else {})},
            )
            view = explanation.default_view()
            if args.weights or args.layer or args.head:
                kind = args.weights or ("alpha" if view.kind == "pooling" else view.kind)
                layer = None if kind == "pooling" else (args.layer or layers) - 1
                view = View(kind, layer, None if args.head is None else args.head - 1)
                explanation.weights(view)  # a view this model cannot show fails here, before anything is written
        except (DataError, ValueError) as error:
            _fail(f"{name}: {error}")
        explained.append((name, explanation, view))
    output.mkdir(parents=True, exist_ok=True)
    for name, explanation, view in explained:
        written = [explanation.save_html(output / f"{name}.html", view, args.page_words)]
        if args.png:
            written.append(explanation.save_png(output / f"{name}.png", view))
        if args.json:
            written.append(explanation.save_json(output / f"{name}.json"))
        said = explanation.prediction.get("label")
        if said is None and "next_tokens" in explanation.prediction:
            said = repr(explanation.prediction["next_tokens"][0]["token"])
        if said is None:
            said = repr(explanation.prediction.get("summary", "")[:60])
        top = ", ".join(word for word, _ in explanation.top_words(5, view))
        print(f"{name}: {said}; most weight ({view.label()}): {top}")
        for path in written:
            print(f"  -> {path}")
    return 0
