"""A task is one folder and one registry line (engine/task.py): the toy task of tests/toy_task/, registered here as
tasks/registry.py would list it, trains, evaluates and predicts through the `fastformer` command, with nothing
else edited; a verb it does not declare is refused in one line."""

import json

import pytest

from fastformer.cli.main import main
from tests.toy_task.task import ToyTask, generate


@pytest.fixture
def toy(monkeypatch):
    from fastformer.tasks.registry import TASKS

    monkeypatch.setitem(TASKS, ToyTask.name, ToyTask)  # the one registry line
    return ToyTask


def test_a_toy_task_trains_evaluates_and_predicts_through_the_command(toy, tmp_path, capsys):
    out = tmp_path / "toy"
    argv = ["train", "toy", "--output-dir", str(out), "--epochs", "2", "--batch-size", "16", "--no-progress"]
    assert main([*argv, "--vocab-size", "40", "--learning-rate", "3e-3"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["train"]["examples"] == 96 and 0.0 <= metrics["validation"]["accuracy"] <= 1.0
    assert json.loads((out / "run_complete.json").read_text())["task"] == "toy"

    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in generate(20, 3)))
    capsys.readouterr()
    assert main(["evaluate", str(out), "--data", str(data)]) == 0
    said = capsys.readouterr().out
    assert '"examples": 20' in said and (out / "evaluations").is_dir()

    assert main(["predict", str(out), "red blue", "green red"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["label"] in ("warm", "cool") for r in rows] == [True, True]

    with pytest.raises(SystemExit) as refused:  # a verb the toy task does not declare
        main(["explain", str(out), "red blue"])
    assert "holds a toy run, which does not explain (it does evaluate, predict)" in str(refused.value.code)
