"""The commands of the README and the pages it links (readme_commands.PAGES), checked without running them: each
is either runnable as written (and then parses with today's command line, flags and values in range) or the plan
says why not (a pattern with `...`, a file of the user's). Running them, with their durations, is
benchmarks/cli/readme_commands.py's job (hours: the full-data runs)."""

import json

import pytest

from tests.helpers import ROOT, load_script

readme_commands = load_script("cli/readme_commands.py")

PLAN = readme_commands.plan(ROOT)  # the repository root: ../shared resolves as in the scratch folder
FASTFORMER = [(c, reason) for c, reason in PLAN if readme_commands.arguments(c)[0] == "fastformer"]


def parse(words: list[str], files_exist: bool) -> None:
    """What the command line does with these words before it reads any file: argparse, then (when the files it
    names exist here) the settings' checks: ranges, choices, files and folders."""
    from fastformer.cli import main as cli
    from fastformer.cli import train

    if words[1] == "train":
        from fastformer.cli.settings import resolve_settings

        task, namespace = train.parse_arguments(words[2:])
        if files_exist:
            resolve_settings(train.TASKS[task].config_class, namespace, None)
    else:
        cli.build_parser().parse_args(words[1:])


def test_the_plan_runs_every_verb_and_says_why_it_skips_a_command():
    runnable = [c for c, reason in PLAN if reason is None]
    verbs = {tuple(readme_commands.arguments(c)[1:2]) for c in runnable}
    assert {("train",), ("evaluate",), ("export",), ("generate",), ("explain",), ("predict",)} <= verbs
    assert len(runnable) >= 15
    for command, reason in PLAN:
        assert reason is None or reason.startswith(("elides", "the set-up", "installs", "reads ")), (command, reason)


@pytest.mark.parametrize(
    "command",
    [c for c, reason in FASTFORMER if reason is None or "..." not in c.text],
    ids=lambda c: f"{c.page}:{c.line}",
)
def test_every_readme_command_parses_with_todays_command_line(command, monkeypatch):
    monkeypatch.chdir(ROOT)
    words = readme_commands.arguments(command)
    reads = readme_commands.inputs_and_outputs(words)[0]
    parse(words, files_exist=all((ROOT / path).exists() for path in reads))


def test_measured_durations_are_written_beside_their_commands_and_replaced_when_measured_again():
    text = "\n".join(
        [
            "```bash",
            "fastformer train                     # the built-in task",
            "fastformer train --train a.csv \\",
            "    --epochs 1",
            "fastformer predict runs/x 'a # b'",
            "fastformer train ... --model x=1     # a pattern",
            "```",
        ]
    )
    rows = {
        "fastformer train": dict(status="ok", seconds=135.2),
        "fastformer train --train a.csv --epochs 1": dict(status="ok", seconds=7200),
        "fastformer predict runs/x 'a # b'": dict(status="ok", seconds=9.3, cores=1),  # measured under taskset
        "fastformer train ... --model x=1": dict(status="failed (exit 2)", seconds=1.0),
    }
    once = readme_commands.annotate(text, rows, cores=2)
    assert once.split("\n")[1:6] == [
        "fastformer train                     # the built-in task [2 min on 2 cores]",
        "fastformer train --train a.csv \\",
        "    --epochs 1  # [2.0 h on 2 cores]",
        "fastformer predict runs/x 'a # b'  # [9 s on 1 core]",
        "fastformer train ... --model x=1     # a pattern",
    ]
    rows["fastformer train"]["seconds"] = 40
    again = readme_commands.annotate(once, rows, cores=2)
    assert again.split("\n")[1] == "fastformer train                     # the built-in task [40 s on 2 cores]"
    # the commands read from an annotated README are the same commands, comments without the durations
    assert [(c.text, c.comment) for c in readme_commands.readme_commands(source=again)] == [
        (c.text, c.comment) for c in readme_commands.readme_commands(source=text)
    ]


MEASURED = ROOT / "benchmarks" / "cli" / "results" / "readme_commands.json"
# Runnable commands not measured yet (the full-data runs: hours each on one core, measured over sessions with
# `OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/cli/readme_commands.py --only PATTERN`, then `--annotate`), each
# as (page, the start of its command): a line added above one does not change its entry.
# A command leaves this list when its row is "ok"; a new README command must be measured or listed here.
NOT_YET_MEASURED: list[tuple[str, str]] = [
    # docs/PRETRAINED-TRANSFORMER.md, a page added to the measured ones on 2026-12-04: the corpus takes minutes and
    # each distillation stage hours (~2 h of 2,000 steps on one thread)
    ("docs/PRETRAINED-TRANSFORMER.md", "python benchmarks/distill/corpus.py runs/distill-corpus.jsonl.gz"),
    ("docs/PRETRAINED-TRANSFORMER.md", "bash benchmarks/distill/run.sh layerwise"),
    ("docs/PRETRAINED-TRANSFORMER.md", "bash benchmarks/distill/run.sh end-to-end"),
    # docs/tasks/news.md's student taught by a news teacher (2026-12-05): ~40 min on one thread, measured by
    # benchmarks/news/news_mind_vectors.sh's kd rows, not yet by readme_commands.py
    ("docs/tasks/news.md", "fastformer train news --train runs/mind/train --test runs/mind/test --news-fields"),
]


def test_every_runnable_command_says_how_long_it_took():
    """Each runnable README command carries the duration its "ok" row measured ("[2 min on 1 core]"), or is listed
    above as not measured yet; none fails as written."""
    rows = {row["command"]: row for row in json.loads(MEASURED.read_text())["commands"]}
    pages = {page: (ROOT / page).read_text().splitlines() for page in readme_commands.PAGES}
    cores = json.loads(MEASURED.read_text())["machine"]["cores"]
    unmeasured = []
    for command, reason in PLAN:
        if reason is not None:
            continue
        row = rows.get(command.text)
        where = f"{command.page}:{command.line}"
        assert row is None or row["status"] in ("ok", "not run"), (where, row)  # a command that fails as written
        if row is None or row["status"] != "ok":
            unmeasured.append((where, command))
            continue
        marker = readme_commands.duration_text(row["seconds"], row.get("cores", cores))
        line = pages[command.page][command.end - 1]
        assert line.endswith(marker), (where, marker, line)
    # each unmeasured command is listed once, and each entry names one unmeasured command
    listed = [
        [entry for entry in NOT_YET_MEASURED if (command.page, command.text[: len(entry[1])]) == entry]
        for _, command in unmeasured
    ]
    assert all(len(entries) == 1 for entries in listed), [
        (w, c.text) for (w, c), e in zip(unmeasured, listed, strict=True) if len(e) != 1
    ]
    assert sorted(entry for entries in listed for entry in entries) == sorted(NOT_YET_MEASURED), unmeasured
