"""The README's commands, checked without running them: each is either runnable as written (and then parses with
today's command line, flags and values in range) or the plan says why not (a pattern with `...`, a file of the
user's). Running them, with their durations, is benchmarks/readme_commands.py's job (hours: the full-data runs)."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("readme_commands", ROOT / "benchmarks" / "readme_commands.py")
readme_commands = importlib.util.module_from_spec(spec)
sys.modules["readme_commands"] = readme_commands  # (its dataclass looks its module up there)
spec.loader.exec_module(readme_commands)

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
    "command", [c for c, reason in FASTFORMER if reason is None or "..." not in c.text], ids=lambda c: f"line{c.line}"
)
def test_every_readme_command_parses_with_todays_command_line(command, monkeypatch):
    monkeypatch.chdir(ROOT)
    words = readme_commands.arguments(command)
    reads = readme_commands.inputs_and_outputs(words)[0]
    parse(words, files_exist=all((ROOT / path).exists() for path in reads))
