"""Every task in TASKS, as a user meets it: a tiny run on real data, then every verb on its folder from the command
line: the ones the task declares work and write what they say, the others are refused in one line. A new task
without a row here fails `test_every_task_has_a_row`, so "complete" is checked, not assumed (as
tests/models/test_every_head.py does for the heads)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fastformer.cli.main import main
from fastformer.tasks.registry import TASKS, VERBS
from tests.helpers import SHARED

DATA = SHARED / "data"
SST = DATA / "sst5"
IMDB = DATA / "imdb"
AMAZON = DATA / "amazon" / "amazon_review_full_condensed_test999.csv"
CNNDM = DATA / "cnndm"
# two layers (the language model's default is 4): still a stack whose decoding state has a layer index, and its
# export traces half the operations (torch.export's tracing, ~2 ms an operation, is most of the lm row's time)
SMALL = ["--model", "hidden_size=16", "--model", "num_attention_heads=2", "--model", "intermediate_size=16",
         "--model", "num_hidden_layers=2"]  # fmt: skip
QUIET = ["--epochs", "1", "--batch-size", "8", "--no-progress"]

# task -> `fastformer train TASK` arguments of a run small enough for seconds ({mind}: a converted MIND folder)
TRAIN = {
    "classification": ["--train", str(SST / "sst_train.txt"), "--test", str(SST / "sst_test.txt"),
                       "--max-train-examples", "64", "--max-eval-examples", "16", "--vocab-size", "300",
                       "--max-length", "32"],
    "lm": ["--train", str(IMDB / "imdb_ratings.jsonl.gz"), "--max-train-texts", "6", "--max-eval-texts", "2",
           "--vocab-size", "300", "--block-size", "32"],
    "pretrain": ["--train", str(IMDB / "imdb_unsup.jsonl.gz"), "--max-train-texts", "6", "--max-eval-texts", "2",
                 "--vocab-size", "300", "--block-size", "32"],
    "distill": ["--teacher", "{teacher}", "--init-from", "{student}", "--train", str(AMAZON), "--text-field", "input",
                "--max-train-texts", "8", "--max-eval-texts", "2", "--block-size", "16", "--max-steps", "2"],
    "news": ["--train", "{mind}", "--max-train-impressions", "24", "--max-eval-impressions", "8",
             "--vocab-size", "300", "--word-vectors", "none"],
    "summarize": ["--train", str(CNNDM / "validation_first1000.csv.gz"), "--split", "16", "4", "4",
                  "--vocab-size", "300", "--max-source-length", "48", "--max-target-length", "12",
                  "--model", "decoder_layers=1", "--num-beams", "1"],
}  # fmt: skip
# task -> verb -> its arguments after the folder, and the file it must write ({out}: a fresh folder, {user}: a MIND
# user with history)
VERBS_OF = {
    "classification": {
        "evaluate": (["--data", str(SST / "sst_dev.txt"), "--max-examples", "8", "--output", "{out}/m.json"], "m.json"),
        "predict": (["a gorgeous , witty film", "dull", "--output", "{out}/p.jsonl"], "p.jsonl"),
        "explain": (["a gorgeous , witty film", "--output-dir", "{out}", "--json", "--top-k", "0"], "arg-1.json"),
        "export": (["{out}/exported"], "exported/model.pt2"),
    },
    "distill": {},
    "lm": {
        "evaluate": (["--data", str(IMDB / "imdb_ratings.jsonl.gz"), "--max-examples", "4", "--output",
                      "{out}/m.json"], "m.json"),
        "predict": (["the movie was", "--max-new-tokens", "3", "--output", "{out}/p.jsonl"], "p.jsonl"),
        "explain": (["the movie was", "--output-dir", "{out}", "--json", "--top-k", "0"], "arg-1.json"),
        "export": (["{out}/exported"], "exported/export.json"),
        "generate": (["the movie was", "--max-new-tokens", "3"], None),
    },
    "pretrain": {},
    "news": {
        "evaluate": (["--data", "{mind}", "--output", "{out}/m.json"], "m.json"),
        "predict": (["--data", "{mind}", "--output", "{out}/prediction.txt"], "prediction.txt"),
        "explain": (["--user", "{user}", "--data", "{mind}", "--output-dir", "{out}", "--json"], "user-{user}.json"),
    },
    "summarize": {
        "evaluate": (["--data", str(CNNDM / "test_first500.csv.gz"), "--max-examples", "2", "--output",
                      "{out}/m.json"], "m.json"),
        "predict": (["The minister resigned on Monday. Elections follow in May.", "--output", "{out}/p.jsonl"],
                    "p.jsonl"),
        "explain": (["The minister resigned on Monday. Elections follow in May.", "--output-dir", "{out}", "--json",
                     "--top-k", "0"], "arg-1.json"),
        "export": (["{out}/exported"], "exported/export.json"),
    },
}  # fmt: skip
REFUSED_ARGUMENTS = {"evaluate": ["--data", "{out}/data.csv"], "export": ["{out}/exported"]}  # a verb it lacks


def test_every_task_has_a_row_and_declares_what_it_does():
    assert set(TRAIN) == set(VERBS_OF) == set(TASKS)
    for task, verbs in VERBS_OF.items():
        assert set(verbs) == set(TASKS[task].verbs), task


def test_a_task_trains_a_baseline_exactly_for_its_model_free_architectures():
    """The config's MODEL_FREE_ARCHITECTURES decide alone (engine/skeleton.py) which runs build no tokenizer and no
    network and call the task's `baseline`: each is an --architecture choice, a task that lists one implements
    `baseline`, and classification's baseline modules are exactly the ones it lists."""
    from fastformer.engine.task import Task
    from fastformer.tasks.classification.task import BASELINES

    for name, task in TASKS.items():
        model_free = task.config_class.MODEL_FREE_ARCHITECTURES
        if model_free:
            architecture = next(f for f in dataclasses.fields(task.config_class) if f.name == "architecture")
            assert set(model_free) <= set(architecture.metadata["choices"]), name
        assert (task.baseline is not Task.baseline) == bool(model_free), name
    assert set(BASELINES) == set(TASKS["classification"].config_class.MODEL_FREE_ARCHITECTURES)


@pytest.fixture(scope="module")
def mind(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mind") / "test"
    assert main(["convert-mindrec", str(DATA / "mind" / "mindrec20_test.json.gz"), str(folder)]) == 0
    from fastformer.data.mind import load_mind

    user = next(i.user_id for i in load_mind(folder).impressions if len(i.history) >= 2)
    return folder, user


@pytest.fixture(scope="module")
def distillation_pair(tmp_path_factory):
    """(teacher, student) for `train distill`: all-MiniLM-L6-v2 converted both ways (its sizes are the student's)."""
    from tests.helpers import teacher_zip

    root = tmp_path_factory.mktemp("pair")
    assert main(["convert-bert", str(teacher_zip()), str(root / "teacher"), "--attention", "softmax"]) == 0
    assert main(["convert-bert", str(teacher_zip()), str(root / "student"), "--max-positions", "16"]) == 0
    return root / "teacher", root / "student"


@pytest.mark.slow
@pytest.mark.parametrize("task", list(TASKS))
def test_a_tiny_run_of_every_task_then_every_verb_on_its_folder(task, mind, request, tmp_path, capsys):
    folder, user = mind
    teacher, student = request.getfixturevalue("distillation_pair") if task == "distill" else ("", "")

    def filled(arguments: list[str], out) -> list[str]:
        return [
            a.replace("{mind}", str(folder)).replace("{out}", str(out)).replace("{user}", user)
            .replace("{teacher}", str(teacher)).replace("{student}", str(student))
            for a in arguments
        ]  # fmt: skip

    run = tmp_path / "run"
    small = [] if task == "distill" else SMALL  # a student has its teacher's sizes
    assert main(["train", task, *filled(TRAIN[task], tmp_path), *small, *QUIET, "--output-dir", str(run)]) == 0
    assert json.loads((run / "run_complete.json").read_text())["task"] == task
    for verb in VERBS:
        out = tmp_path / verb
        out.mkdir()
        if verb not in TASKS[task].verbs:
            with pytest.raises(SystemExit) as refused:
                main([verb, str(run), *filled(REFUSED_ARGUMENTS.get(verb, ["a text"]), out)])
            message = str(refused.value.code)
            assert f"holds a {task} run, which does not {verb}" in message and "\n" not in message, message
            continue
        arguments, written = VERBS_OF[task][verb]
        capsys.readouterr()
        assert main([verb, str(run), *filled(arguments, out)]) == 0, (task, verb)
        if written is None:  # printed
            assert capsys.readouterr().out.strip(), (task, verb)
        else:
            assert (out / filled([written], out)[0]).is_file(), (task, verb, sorted(p.name for p in out.rglob("*")))
