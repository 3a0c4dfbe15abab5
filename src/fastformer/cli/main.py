"""The `fastformer` command line: one console script, a subcommand per job."""

from __future__ import annotations

import os
import sys

from fastformer.cli import (
    bench,
    convert,
    convert_bert,
    convert_mindrec,
    demo,
    evaluate,
    explain,
    export,
    generate,
    predict,
    train,
)
from fastformer.cli.settings import OneLineParser
from fastformer.version import __version__

SUBCOMMANDS = {
    "train": train,
    "evaluate": evaluate,
    "predict": predict,
    "explain": explain,
    "generate": generate,
    "export": export,
    "bench": bench,
    "demo": demo,
    "convert-official": convert,
    "convert-mindrec": convert_mindrec,
    "convert-bert": convert_bert,
}


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="fastformer",
        description="Fastformer (Wu et al. 2021, arXiv:2108.09084): additive attention in O(N d).",
    )
    parser.add_argument("--version", action="version", version=f"fastformer {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name, module in SUBCOMMANDS.items():
        module.add_arguments(sub.add_parser(name, help=module.HELP, description=module.__doc__))
    return parser


def verb_parser(name: str) -> OneLineParser:
    """The parser of one subcommand alone, as `fastformer NAME` reads its arguments."""
    module = SUBCOMMANDS[name]
    parser = OneLineParser(prog=f"fastformer {name}", description=module.__doc__)
    module.add_arguments(parser)
    return parser


def quiet_libraries() -> None:
    """The command speaks in its own lines: transformers' load reports ("MISSING ... newly initialized", which read
    like errors on every --init-from) and its "Loading weights" bars are off, unless the user's environment sets
    them (TRANSFORMERS_VERBOSITY, HF_HUB_DISABLE_PROGRESS_BARS). Set before transformers is imported, and applied to
    it too when it already is. The Trainer's own progress bars stay (--no-progress turns them off)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "transformers" in sys.modules:
        from transformers.utils import logging

        if os.environ["TRANSFORMERS_VERBOSITY"] == "error":
            logging.set_verbosity_error()
        if os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1":
            logging.disable_progress_bar()


def main(argv: list[str] | None = None) -> int:
    """Run a command (exit code). A user error raises SystemExit("fastformer COMMAND: what is wrong")."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "train":  # each task has a parser of its own, derived from its config
        return train.main(argv[1:])
    if argv and argv[0] in SUBCOMMANDS:
        # options and texts in any order (`explain DIR --png "a text"`): argparse's parse_args takes a `nargs="*"`
        # positional once, before the options, and called texts after them unrecognized; parse_intermixed_args
        # reads them all, but not through the subparsers of the whole command's parser
        args = verb_parser(argv[0]).parse_intermixed_args(argv[1:])
        args.command = argv[0]
        return SUBCOMMANDS[argv[0]].run(args) or 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return SUBCOMMANDS[args.command].run(args) or 0


def console() -> int:
    """The `fastformer` console script: a user error (a bad argument, a missing or malformed file, a folder that
    cannot be used) is one line on standard error and exit code 2, never a traceback."""
    quiet_libraries()
    try:
        return main()
    except KeyboardInterrupt:  # Ctrl-C: one line, the run folder's lock released on the way out (RunFolder.__exit__)
        command = sys.argv[1] if len(sys.argv) > 1 else "fastformer"
        resume = " (the same command with --resume continues from its last checkpoint)" if command == "train" else ""
        print(f"fastformer {command}: interrupted{resume}", file=sys.stderr)
        return 130
    except SystemExit as exit:
        if isinstance(exit.code, str):
            print(exit.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(console())
