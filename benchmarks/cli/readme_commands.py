"""Run every command of the README and the pages it links (PAGES, in that order) as written, and record how long
each took on this machine.

    python benchmarks/cli/readme_commands.py                  # all of them (hours: the full-data runs are in it)
    python benchmarks/cli/readme_commands.py --only 'lm-tiny|sum-tiny|demo'   # the commands matching a pattern
    python benchmarks/cli/readme_commands.py --list           # what would run, and why the others cannot as written
    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/cli/readme_commands.py   # on one core (the README then says so)

Commands run in a scratch folder (default runs/readme-check/work) beside a link to ../shared, so the README's
relative paths (`../shared/data/...`, `runs/...`) resolve as in a clone and nothing in the clone's own runs/ is
touched. A command cannot run as written when it elides arguments (`...`), names a file of the user's
(`my_reviews.csv`, `MINDsmall_dev/`) that neither exists nor is written by an earlier command, or is the set-up line
(run by CI, `.ci/run`); the list says which and why. Results: benchmarks/cli/results/readme_commands.json (a machine
header, then per command: README line, command, status, seconds, the last output lines when it failed).
`--annotate` writes the durations of that file into the README ("[40 s on 2 cores]" at the end of each measured
command's comment). tests/test_readme.py checks without running
anything that every runnable command parses with the CLI as it is today.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# the pages whose ```bash blocks are run, in the order a reader meets them (a later page reads earlier pages' outputs)
PAGES = (
    "README.md",
    "docs/tasks/classification.md",
    "docs/tasks/pretrain.md",
    "docs/tasks/lm.md",
    "docs/tasks/news.md",
    "docs/tasks/summarize.md",
    "docs/explain.md",
    "docs/api.md",
    "docs/benchmark.md",
    "docs/PRETRAINED-TRANSFORMER.md",
)
RESULTS = ROOT / "benchmarks" / "cli" / "results" / "readme_commands.json"
# flags whose values are input files or folders (comma-joined lists allowed)
INPUT_FLAGS = {
    "--train",
    "--validation",
    "--test",
    "--data",
    "--file",
    "--exclude",
    "--word-vectors",
    "--init-from",
    "--tokenizer",
}
# commands whose positional arguments after the verb are input folders (the first) and outputs (the rest)
OUTPUT_FLAGS = {"--output-dir", "--output"}


@dataclass
class Command:
    line: int  # the page's line where it starts
    text: str  # as written, continuation lines joined
    comment: str  # the README's comment after it
    environment: str = ""  # VAR=value assignments earlier on the same page, one a line, set before it runs
    end: int = 0  # the page's line where it ends (its duration is written in that line's comment)
    page: str = "README.md"  # the page it is written in (PAGES)


DURATION = re.compile(r"\s*\[[0-9.]+ (?:s|min|h) on \d+ cores?\]")  # "[40 s on 2 cores]" in a command's comment


def duration_text(seconds: float, cores: int) -> str:
    """A measured duration as the README writes it: "[40 s on 2 cores]", "[12 min ...]", "[2.5 h ...]"."""
    if seconds < 90:
        amount = f"{max(1, round(seconds))} s"
    elif seconds < 90 * 60:
        amount = f"{round(seconds / 60)} min"
    else:
        amount = f"{seconds / 3600:.1f} h"
    return f"[{amount} on {cores} core{'s' if cores != 1 else ''}]"


def annotate(text: str, rows: dict[str, dict], cores: int) -> str:
    """The README `text` with each measured command's duration at the end of its last line's comment (a comment is
    added where there is none); an earlier duration is replaced, commands without an "ok" row are left alone. A row's
    own "cores" (the CPUs its command could use) wins over `cores`, the machine's."""
    lines = text.split("\n")
    for command in readme_commands(source=text):
        row = rows.get(command.text)
        if not row or row.get("status") != "ok":
            continue
        i = command.end - 1
        code, hash_, comment = _split_comment(lines[i])
        marker = duration_text(row["seconds"], row.get("cores", cores))
        comment = DURATION.sub("", comment).rstrip()
        lines[i] = f"{code}#{comment} {marker}" if hash_ else f"{code.rstrip()}  # {marker}"
    return "\n".join(lines)


def all_commands() -> list[Command]:
    """Every command of every page of PAGES, page after page."""
    return [c for page in PAGES for c in readme_commands(ROOT / page, page=page)]


def readme_commands(readme: Path = README, source: str | None = None, page: str = "README.md") -> list[Command]:
    """Every command in a page's ```bash blocks (or in `source`), in order (continuations joined, comments
    apart)."""
    commands: list[Command] = []
    in_block, pending, start, environment = False, "", 0, []  # assignments hold for the rest of the page
    for number, raw in enumerate((readme.read_text() if source is None else source).splitlines(), 1):
        if raw.startswith("```"):
            in_block, pending = raw.strip() == "```bash", ""
            continue
        if not in_block:
            continue
        code, _, comment = _split_comment(raw)
        if not pending:
            start = number
            if not code.strip():
                continue
        if code.rstrip().endswith("\\"):
            pending += code.rstrip()[:-1] + " "
            continue
        text = " ".join((pending + code).split())
        pending = ""
        if re.fullmatch(r"[A-Z_]+=(\$\(.+\)\S*|\S+)", text):  # VAR=value or VAR=$(command)...
            environment.append(text)
            continue
        commands.append(Command(start, text, DURATION.sub("", comment).strip(), "\n".join(environment), number, page))
    return commands


def _split_comment(line: str) -> tuple[str, str, str]:
    """(code, '#', comment): the first # outside quotes that starts a word."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i], "#", line[i + 1 :]
    return line, "", ""


def arguments(command: Command) -> list[str]:
    """The command's words, with the $VARS its page assigned plain values expanded (as the shell would; one set from
    a command's output, `VAR=$(...)`, stays as written)."""
    assignments = [a.split("=", 1) for a in command.environment.split("\n") if a]
    values = {name: value for name, value in assignments if "$(" not in value}
    text = re.sub(r"\$([A-Z_]+)", lambda m: values.get(m.group(1), m.group(0)), command.text)
    return shlex.split(text)


def inputs_and_outputs(words: list[str]) -> tuple[list[str], list[str]]:
    """The files a command reads and the paths it writes, from its flags and its verb's positional arguments."""
    reads, writes = [], []
    for flag, value in zip(words, words[1:], strict=False):
        if flag in INPUT_FLAGS:
            reads += [v for v in value.split(",") if v and not v.startswith("glove-6b")]
        elif flag in OUTPUT_FLAGS:
            writes.append(value)
    if words[:1] == ["fastformer"] and len(words) > 2 and words[1] != "train":
        after_verb = enumerate(words[2:], 2)
        positional = [w for i, w in after_verb if not w.startswith("-") and not words[i - 1].startswith("--")]
        if words[1] in ("convert-mindrec", "export", "convert-official"):
            reads.append(positional[0])
            writes += positional[1:2]
        elif positional and words[1] in ("evaluate", "predict", "explain", "generate"):
            reads.append(positional[0])  # the run folder
    return reads, writes


def why_not_runnable(command: Command, written: set[str], workdir: Path) -> str | None:
    """None when the command runs as written; otherwise why not."""
    words = arguments(command)
    if "..." in words:
        return "elides arguments (...): a pattern, not a command"
    if words[0] == "python3" and "venv" in words:
        return "the set-up line: CI runs it on a clean clone (.ci/run)"
    if words[0] == "pip":
        return "installs into the environment: part of the set-up line's extras"
    reads, _ = inputs_and_outputs(words)
    for path in reads:
        if path.startswith("$"):  # set by an assignment earlier on the page (the command's environment)
            continue
        if path.rstrip("/") not in written and not (workdir / path).exists():
            return f"reads {path}, a file of the user's that is not in this repository"
    return None


def plan(workdir: Path) -> list[tuple[Command, str | None]]:
    """Every command with None (it runs) or the reason it cannot run as written, outputs of earlier ones counted."""
    written: set[str] = set()
    planned = []
    for command in all_commands():
        reason = why_not_runnable(command, written, workdir)
        planned.append((command, reason))
        if reason is None:
            words = arguments(command)
            written.update(w.rstrip("/") for w in inputs_and_outputs(words)[1])
            if words[:2] == ["fastformer", "train"] and "--output-dir" not in words:
                written.add("runs/builtin-longdoc")
    return planned


def machine() -> dict:
    import platform

    import torch

    return dict(
        date=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        cpu=platform.processor() or platform.machine(),
        cores=len(os.sched_getaffinity(0)),  # the CPUs the commands could use (`taskset -c 0` makes it 1)
        machine_cores=os.cpu_count(),
        torch=torch.__version__,
        python=platform.python_version(),
        threads=os.environ.get("OMP_NUM_THREADS", "all cores"),  # what each command's torch used
        load_average_at_end=os.getloadavg()[0],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run only the commands matching this regular expression")
    parser.add_argument("--list", action="store_true", help="print the plan and run nothing")
    parser.add_argument("--workdir", default=str(ROOT / "runs" / "readme-check" / "work"))
    parser.add_argument("--output", default=str(RESULTS), help="results file (merged with the rows already there)")
    parser.add_argument(
        "--annotate", action="store_true", help="run nothing: write the results file's durations into the pages"
    )
    args = parser.parse_args(argv)
    if args.annotate:
        measured = json.loads(Path(args.output).read_text())
        rows = {row["command"]: row for row in measured["commands"]}
        for page in PAGES:
            (ROOT / page).write_text(annotate((ROOT / page).read_text(), rows, measured["machine"]["cores"]))
        return 0
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    shared = workdir.parent / "shared"
    if not shared.exists():
        shared.symlink_to((ROOT.parent / "shared").resolve())
    shipped = workdir / "pretrained"  # the clone's own checkpoints, which README commands fine-tune from
    if not shipped.exists():
        shipped.symlink_to(ROOT / "pretrained")
    bin_dir = str(Path(sys.executable).parent)  # this environment's fastformer and torchrun
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    output = Path(args.output)
    rows = {row["command"]: row for row in (json.loads(output.read_text())["commands"] if output.exists() else [])}
    planned = plan(workdir)
    for command, reason in planned:
        if args.only and not re.search(args.only, command.text):
            continue
        if args.list or reason:
            print(
                f"{command.page}:{command.line}: {'RUNS' if not reason else 'not run: ' + reason}: {command.text[:100]}"
            )
            if reason:
                rows[command.text] = dict(
                    page=command.page, line=command.line, command=command.text, status="not run", reason=reason
                )
            continue
        started = time.perf_counter()
        # set first, as the README's block does: a prefix (`VAR=x cmd $VAR`) would expand $VAR before setting it
        shell = f"{command.environment}; {command.text}" if command.environment else command.text
        done = subprocess.run(["bash", "-c", shell], cwd=workdir, env=env, capture_output=True, text=True)
        seconds = round(time.perf_counter() - started, 1)
        status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
        print(f"{command.page}:{command.line}: {status} in {seconds} s: {command.text[:100]}", flush=True)
        cores = len(os.sched_getaffinity(0))  # what the command could use: all the machine's, or fewer under taskset
        row = dict(
            page=command.page, line=command.line, command=command.text, status=status, seconds=seconds, cores=cores
        )
        if done.returncode:
            row["output_tail"] = (done.stdout + done.stderr).strip().splitlines()[-5:]
        rows[command.text] = row
    if not args.list:
        order = {c.text: i for i, (c, _) in enumerate(planned)}
        kept = sorted((r for r in rows.values() if r["command"] in order), key=lambda r: order[r["command"]])
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(dict(machine=machine(), commands=kept), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
