"""Rebuild the tables of docs/RESULTS.md from the committed results, or check that they are what the results give.

A table built from committed files sits between two markers in the page:

    <!-- table: python benchmarks/distill/summarize.py -->
    | ... the script's output ... |
    <!-- /table -->

and, for a script that prints several sections (`### imdb2`, `### yelp5`, ...), `<!-- table: COMMAND ## imdb2 -->`
takes the one section under that heading (the heading line itself left out). The command runs from the repository
root with this interpreter; it must read committed files only (benchmarks/*/results/), never runs/.

    python benchmarks/rebuild_tables.py            # rewrite every marked table of docs/RESULTS.md
    python benchmarks/rebuild_tables.py --check    # exit 1 naming each table that differs (a test runs it)
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "RESULTS.md"
MARKED = re.compile(r"<!-- table: (?P<command>.+?)(?: ## (?P<section>\S+))? -->\n(?P<body>.*?)<!-- /table -->", re.S)


@dataclass
class Table:
    command: str
    section: str | None
    body: str  # as committed, between the markers
    start: int  # of the body in the page
    end: int


def marked_tables(text: str) -> list[Table]:
    """Every marked table of a page, in order."""
    return [Table(m["command"], m["section"], m["body"], m.start("body"), m.end("body")) for m in MARKED.finditer(text)]


def render(command: str, section: str | None) -> str:
    """What the command prints (its `### section` only, when one is named), as the page holds it between its markers:
    stripped, with a blank line before and after."""
    words = shlex.split(command)
    if words[0] == "python":
        words[0] = sys.executable
    done = subprocess.run(words, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{command}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    out = done.stdout
    if section is not None:
        parts = re.split(r"^#+ (\S+)\n", out, flags=re.M)
        found = dict(zip(parts[1::2], parts[2::2], strict=True))
        if section not in found:
            raise RuntimeError(f"{command}: no section {section!r} in its output (it has {', '.join(found)})")
        out = found[section]
    return f"\n{out.strip()}\n\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing: exit 1 if a table differs")
    parser.add_argument("--page", default=str(PAGE))
    args = parser.parse_args(argv)
    page = Path(args.page)
    text = page.read_text()
    tables = marked_tables(text)
    differing, rebuilt = [], text
    for table in reversed(tables):  # from the end, so the earlier offsets stay right
        fresh = render(table.command, table.section)
        if fresh != table.body:
            differing.append(f"{table.command}{' ## ' + table.section if table.section else ''}")
            rebuilt = rebuilt[: table.start] + fresh + rebuilt[table.end :]
    if args.check:
        for name in reversed(differing):
            print(f"differs from its results: {name}")
        print(f"{len(tables)} tables, {len(differing)} differing")
        return 1 if differing else 0
    if differing:
        page.write_text(rebuilt)
    print(f"{len(tables)} tables, {len(differing)} rebuilt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
