"""benchmarks/summarize_runs.py's goal lines, on planted metrics: the pretraining issue's goals compare a pretrained
fine-tune with the stronger bag-of-words model per metric and with the same model from scratch."""

import json
from pathlib import Path

from tests.helpers import load_script

summarize_runs = load_script("summarize_runs.py")


def plant(folder: Path, name: str, accuracy: float, macro_f1: float, **train) -> None:
    train = {"seconds": 1, **train}
    metrics = {"test": {"accuracy": accuracy, "macro_f1": macro_f1, "examples": 10}, "train": train}
    (folder / f"{name}.json").write_text(json.dumps(metrics))


def test_pretraining_goals_take_the_stronger_baseline_per_metric_and_the_margin_of_the_set(tmp_path, capsys):
    # IMDB-8: NBSVM is the stronger in accuracy, TF-IDF + LR in macro-F1; margin 1 point
    plant(tmp_path, "imdb8-nbsvm-seed0", 0.480, 0.330)
    plant(tmp_path, "imdb8-tfidf-seed0", 0.440, 0.340)
    plant(tmp_path, "imdb8-pretrained-seed1", 0.492, 0.352)
    plant(tmp_path, "imdb8-pretrained-seed2", 0.492, 0.352)
    plant(tmp_path, "imdb8-scratch-seed1", 0.460, 0.320)
    # IMDB-2: margin 0.5, only the pretrained rows of the 1,024-token variant and no scratch row
    plant(tmp_path, "imdb2-nbsvm-seed0", 0.900, 0.900)
    plant(tmp_path, "imdb2-tfidf-seed0", 0.890, 0.890)
    plant(tmp_path, "imdb2-1024-pretrained-seed1", 0.904, 0.904)
    summarize_runs.main([str(tmp_path)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("- ")]
    assert lines == [
        "- 1024-pretrained >= +0.5 over the bag of words: NOT met (accuracy +0.40 vs nbsvm, macro_f1 +0.40 vs nbsvm;"
        " 1 seed)",
        "- pretrained >= +1 over the bag of words: met (accuracy +1.20 vs nbsvm, macro_f1 +1.20 vs tfidf; 2 seeds)",
        "- pretrained >= +3 points over scratch: met (accuracy +3.20, macro_f1 +3.20)",
    ]


def test_training_seconds_leave_out_resumed_runs_without_their_whole_time_and_say_so(tmp_path, capsys):
    """A resumed run's `seconds` time only its last process: the column counts it by its `run_seconds` (every
    process) where the run recorded them, and leaves out, saying so, the older runs that did not."""
    plant(tmp_path, "imdb2-scratch-seed1", 0.8, 0.8, seconds=7000)
    plant(tmp_path, "imdb2-scratch-seed2", 0.8, 0.8, seconds=1300, resumed_from="runs/x/checkpoint-704")
    plant(tmp_path, "imdb2-scratch-seed3", 0.8, 0.8, seconds=1300, run_seconds=5000, resumed_from="runs/z/c-704")
    plant(tmp_path, "imdb2-pretrained-seed1", 0.8, 0.8, seconds=900, resumed_from="runs/y/checkpoint-704")
    summarize_runs.main([str(tmp_path)])
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    seconds = {cells[0]: cells[6] for cells in rows[1:]}  # after the header
    assert seconds == {"| pretrained": "(1 resumed, not counted)", "| scratch": "6,000 (1 resumed, not counted)"}


def test_the_softmax_control_is_a_tie_inside_the_seed_spread_and_a_single_seed_tie_is_not_called_one(tmp_path, capsys):
    plant(tmp_path, "imdb2-nbsvm-seed0", 0.900, 0.900)
    plant(tmp_path, "imdb2-pretrained-seed1", 0.870, 0.870)
    plant(tmp_path, "imdb2-pretrained-seed2", 0.880, 0.880)  # std 0.71 points
    plant(tmp_path, "imdb2-softmax-pretrained-seed1", 0.880, 0.880)
    plant(tmp_path, "imdb2-softmax-pretrained-seed2", 0.880, 0.880)
    plant(tmp_path, "imdb8-nbsvm-seed0", 0.450, 0.330)
    plant(tmp_path, "imdb8-pretrained-seed1", 0.450, 0.340)  # one seed, an exact tie in accuracy: no spread
    summarize_runs.main([str(tmp_path)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("- ")]
    assert lines == [
        "- pretrained >= +0.5 over the bag of words: NOT met (accuracy -2.50 vs nbsvm, macro_f1 -2.50 vs nbsvm;"
        " 2 seeds)",
        "- pretrained at or above softmax-pretrained (a tie counts): met (accuracy -0.50 (within the seed spread),"
        " macro_f1 -0.50 (within the seed spread))",
        "- softmax-pretrained >= +0.5 over the bag of words: NOT met (accuracy -2.00 vs nbsvm, macro_f1 -2.00 vs"
        " nbsvm; 2 seeds)",
        "- pretrained >= +1 over the bag of words: NOT met (accuracy +0.00 vs nbsvm, macro_f1 +1.00 vs nbsvm; 1 seed)",
    ]


def test_a_file_argument_adds_that_one_row_beside_a_folders_runs(tmp_path, capsys):
    """A baseline kept with another experiment's results (NBSVM of the classification benchmark) is named by its file
    and stands beside the folder's runs; the other files of its folder stay out."""
    runs, baselines = tmp_path / "runs", tmp_path / "baselines"
    runs.mkdir(), baselines.mkdir()
    plant(runs, "yelp5-minilm-student512-seed1", 0.66, 0.60)
    plant(baselines, "yelp5-nbsvm-seed0", 0.65, 0.58)
    plant(baselines, "yelp5-tfidf-seed0", 0.62, 0.56)
    summarize_runs.main([str(runs), str(baselines / "yelp5-nbsvm-seed0.json")])
    models = [line.split(" | ")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert models == ["| minilm-student512", "| nbsvm"]
