"""The `fastformer` command line."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from fastformer.cli.main import main
from tests.helpers import FIXTURE


def test_console_script_lists_its_subcommands():
    # installed beside the interpreter by `pip install`; fall back to PATH for other layouts
    beside = Path(sys.executable).parent / "fastformer"
    exe = str(beside) if beside.is_file() else shutil.which("fastformer")
    assert exe, "the `fastformer` console script is not installed"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    assert "demo" in out and "convert-official" in out


def test_module_entry_point_help_per_subcommand():
    for sub in ("demo", "convert-official"):
        out = subprocess.run(
            [sys.executable, "-m", "fastformer.cli.main", sub, "--help"], capture_output=True, text=True, check=True
        ).stdout
        assert "usage: fastformer" in out


def test_demo_measures_both_layers(tmp_path, capsys):
    path = tmp_path / "demo.json"
    assert (
        main(
            [
                "demo",
                "--lengths",
                "64",
                "256",
                "--hidden-size",
                "32",
                "--heads",
                "4",
                "--repeats",
                "1",
                "--json",
                str(path),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "fastformer ms" in printed and "N grew 4x" in printed
    rows = json.loads(path.read_text())["rows"]
    assert [r["n"] for r in rows] == [64, 256]
    for row in rows:
        assert row["fastformer_s"] > 0 and row["softmax_s"] > 0 and row["fastformer_bytes"] > 0
    # memory of the Fastformer layer grows with N (4x longer, at least 2x more)
    assert rows[1]["fastformer_bytes"] > 2 * rows[0]["fastformer_bytes"]


def test_demo_warns_when_the_machine_is_busy():
    from fastformer.cli.demo import busy_note

    assert busy_note(0.3, 2, 1.1) is None
    assert "load average was 3.0 on 2 cores" in busy_note(3.0, 2, 1.1)
    assert "differed by up to 2.5x" in busy_note(0.2, 2, 2.5) and "unreliable" in busy_note(0.2, 2, 2.5)


@pytest.mark.skipif(not FIXTURE.is_file(), reason="fixture missing")
def test_convert_official_command(tmp_path, capsys):
    out = tmp_path / "model"
    assert main(["convert-official", str(FIXTURE), str(out)]) == 0
    assert "official preset, hidden 64, 8 heads" in capsys.readouterr().out
    from safetensors.torch import load_file

    fixture = load_file(str(FIXTURE))
    model = AutoModelForSequenceClassification.from_pretrained(out).double().eval()
    with torch.no_grad():
        logits = model(fixture["input_ids"]).logits
    assert (logits - fixture["expected_logits"]).abs().max() < 1e-6


def test_convert_official_reports_a_missing_file(tmp_path):
    with pytest.raises(SystemExit, match="no such checkpoint"):
        main(["convert-official", str(tmp_path / "nope.pt"), str(tmp_path / "out")])


ROOT = Path(__file__).resolve().parents[2]
SWEEPS = [
    "classification/classification_full",
    "classification/classification_explore",
    "classification/classification_neural",
    "news/mind_topics",
    "news/news_mind_vectors",
    "summarization/summarization_vectors",
]


def _readme_train_commands() -> list[list[str]]:
    """Every complete `fastformer train` command of README.md (continuation lines joined, comments dropped)."""
    import shlex

    text = (ROOT / "README.md").read_text().replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        line = line.split("  #")[0].split(" # ")[0].strip()
        if line.startswith("fastformer train") and "..." not in line:
            commands.append(shlex.split(line)[2:])
    return commands


def _sweep_commands(workspace: Path) -> list[list[str]]:
    """The `fastformer train` arguments of every run of the benchmark sweeps (their DRY_RUN listing), listed from an
    empty folder as on a clean clone (no runs/ left by earlier sweeps), which the listing must leave empty."""
    import shlex

    commands = []
    for name in SWEEPS:
        script = str(ROOT / "benchmarks" / f"{name}.sh")
        environment = {**os.environ, "DRY_RUN": "1"}
        listing = subprocess.run(
            ["bash", script], cwd=workspace, env=environment, capture_output=True, text=True, timeout=60
        )
        assert listing.returncode == 0, listing.stderr
        commands += [shlex.split(line)[1:] for line in listing.stdout.splitlines() if line.strip()]
        assert not any(workspace.iterdir()), f"DRY_RUN of {name}.sh wrote {sorted(workspace.iterdir())}"
    assert len(commands) > 50
    return commands


def test_every_documented_and_benchmarked_train_command_still_parses(monkeypatch, tmp_path):
    """The README's commands and every run of the benchmark sweeps (the commands behind docs/RESULTS.md) parse into
    a valid config with the current command line; data paths are not checked (the full datasets live elsewhere)."""
    from fastformer.cli.settings import resolve_settings
    from fastformer.cli.train import build_parser, check_model_overrides
    from fastformer.engine import inputs
    from fastformer.engine import settings as config_module
    from fastformer.tasks.registry import TASKS

    monkeypatch.setattr(config_module, "_check_path", lambda *args: None)
    monkeypatch.setattr(inputs.WordInputSettings, "check", inputs.TokenizerSettings.check)
    commands = _readme_train_commands() + _sweep_commands(tmp_path)
    for argv in commands:
        task = argv.pop(0) if argv and argv[0] in TASKS else "classification"
        namespace = build_parser(task).parse_args(argv)
        check_model_overrides(resolve_settings(TASKS[task].config_class, namespace))


def test_each_task_help_says_what_the_task_is_once():
    """`fastformer train news --help` used to print the task's description twice (the registry's and the config's)."""
    from fastformer.cli.train import build_parser
    from fastformer.tasks.registry import TASKS

    for task in TASKS:
        description = build_parser(task).description
        assert description.lower().count(task if task != "lm" else "language model") <= 1, description
        assert description.count("`fastformer train") == 0, description


VERB_ARGUMENTS = {
    "evaluate": ["--data", "x.csv"],
    "predict": ["hello"],
    "explain": ["hello"],
    "export": ["{out}"],
    "generate": ["hello"],
}


@pytest.mark.parametrize("task", ["classification", "lm", "pretrain", "news", "summarize"])
def test_a_verb_a_task_does_not_do_is_one_line_naming_what_it_does(task, tmp_path):
    """Each task declares its verbs (TASKS[task].verbs); any other verb on its folder is refused in one line that
    says what the folder does (a pretraining folder: how to fine-tune it), never a traceback or a wrong load."""
    from fastformer.tasks.registry import TASKS, VERBS

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / ".fastformer-run").write_text(json.dumps({"task": task}))
    (folder / "run_complete.json").write_text(json.dumps({"task": task, "files": []}))
    missing = [verb for verb in VERBS if verb not in TASKS[task].verbs]
    assert task != "pretrain" or missing == list(VERBS)
    for verb in missing:
        arguments = [a.replace("{out}", str(tmp_path / "out")) for a in VERB_ARGUMENTS[verb]]
        with pytest.raises(SystemExit) as error:
            main([verb, str(folder), *arguments])
        message = str(error.value.code)
        assert f"holds a {task} run, which does not {verb}" in message and "\n" not in message, message
        if task == "pretrain":
            assert f"--init-from {folder}" in message


def test_a_task_that_declares_a_verb_provides_what_the_verb_calls():
    """`fastformer evaluate | predict | explain | export | generate` name no task: each calls the method of the verb
    on the folder's Task class (engine/task.py). A task that declares a verb overrides that method (for predict and
    explain, the one its `reads_texts` says); one that does not declare it keeps the base class's refusal, one line."""
    import inspect

    import pytest

    from fastformer.engine.task import Task, VerbNotSupported
    from fastformer.tasks.registry import TASKS

    def methods(task, verb):
        per_text = {"predict": "predictor", "explain": "explained_model"}
        per_folder = {"predict": "predict_folder", "explain": "explain_folder"}
        if verb in per_text:
            used, other = (per_text, per_folder) if task.reads_texts else (per_folder, per_text)
            return used[verb], other[verb]
        return dict(evaluate="evaluate_folder", export="export_model", generate="generate_texts")[verb], None

    for name, task in TASKS.items():
        assert task.name == name and issubclass(task, Task) and task.help and task.config_class is not object
        for verb in ("evaluate", "predict", "explain", "export", "generate"):
            used, other = methods(task, verb)
            overridden = getattr(task, used) is not getattr(Task, used)
            assert overridden == (verb in task.verbs), (name, verb)
            assert other is None or getattr(task, other) is getattr(Task, other), (name, verb, other)
            if verb not in task.verbs:
                method = getattr(task(), used)
                positional = [p for p in inspect.signature(method).parameters.values() if p.kind != p.VAR_KEYWORD]
                with pytest.raises(VerbNotSupported, match=f"a {name} run does not {verb}"):
                    method(*[None] * len(positional))
    exporters = [n for n, t in TASKS.items() if t.generation_export is not Task.generation_export]
    assert exporters == ["lm", "summarize"]
    assert [n for n, t in TASKS.items() if not t.reads_texts] == ["news"]


def test_a_verb_offers_every_task_flag_and_refuses_one_the_folder_task_does_not_read(tmp_path, capsys):
    """`fastformer predict | evaluate | explain` take the union of the tasks' settings classes' flags (TASKS), the
    help naming the tasks that read a flag only some read; on a folder, a flag its task does not read is refused in
    one line naming what it reads, before anything loads (here a classification folder without a model)."""
    import dataclasses

    from fastformer.tasks.registry import TASKS

    for verb in ("evaluate", "predict", "explain"):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        shown = " ".join(capsys.readouterr().out.split())
        for entry in TASKS.values():
            cls = entry.verbs.get(verb)
            for f in dataclasses.fields(cls) if cls else ():
                flag = ("--no-" if f.default is True else "--") + f.name.replace("_", "-")
                assert flag in shown, (verb, entry.name, flag)
        if verb == "predict":
            assert "tokens generated per prompt [lm] (default: 40)" in shown
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / ".fastformer-run").write_text(json.dumps({"task": "classification"}))
    (folder / "run_complete.json").write_text(json.dumps({"task": "classification", "files": []}))
    with pytest.raises(
        SystemExit, match=r"^fastformer predict: --max-new-tokens, --data: not read when predicting with"
    ):
        main(["predict", str(folder), "a text", "--max-new-tokens", "3", "--data", "x"])
    with pytest.raises(
        SystemExit, match=r"a classification run \(it reads --file, --text-field, --where, --max-length\)$"
    ):
        main(["predict", str(folder), "a text", "--max-new-tokens", "3"])
