"""The `fastformer` command line: one console script, a subcommand per job."""

from __future__ import annotations

import argparse
import sys

from fastformer.cli import bench, convert, convert_mindrec, demo, evaluate, generate, predict, train

SUBCOMMANDS = {
    "train": train,
    "evaluate": evaluate,
    "predict": predict,
    "generate": generate,
    "bench": bench,
    "demo": demo,
    "convert-official": convert,
    "convert-mindrec": convert_mindrec,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastformer",
        description="Fastformer (Wu et al. 2021, arXiv:2108.09084): additive attention in O(N d).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in SUBCOMMANDS.items():
        module.add_arguments(sub.add_parser(name, help=module.HELP, description=module.__doc__))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return SUBCOMMANDS[args.command].run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
