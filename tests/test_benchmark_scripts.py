"""Every script under benchmarks/ names only what the library has: each `from fastformer... import NAME` in it, at
module or function level, resolves. (Nothing imports these scripts, and ruff cannot see a missing name in a
function-level import: benchmarks/attention/train_throughput.py imported a removed `build_trainer` unnoticed.)"""

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import BENCHMARKS, ROOT, SHARED, load_script

SCRIPTS = sorted(BENCHMARKS.rglob("*.py"))  # experiments in folders of their own too (benchmarks/distill)


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(s.relative_to(BENCHMARKS)) for s in SCRIPTS])
def test_every_library_name_a_benchmark_imports_exists(script):
    tree = ast.parse(script.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastformer"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), (
                    f"{script.name}:{node.lineno}: {node.module} has no {alias.name}"
                )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fastformer"):
                    importlib.import_module(alias.name)


ARGPARSE_SCRIPTS = [s for s in SCRIPTS if "argparse" in s.read_text()]


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(s.relative_to(BENCHMARKS)) for s in SCRIPTS])
def test_every_benchmark_script_loads_and_an_argparse_one_answers_help(script, monkeypatch, capsys):
    """Loading runs its module level (a missing module-level name fails here, not in the middle of a long run);
    a script with a command line prints its --help and exits 0."""
    module = load_script(script, f"benchmark_{script.stem}")
    if script in ARGPARSE_SCRIPTS:
        monkeypatch.setattr(sys, "argv", [str(script), "--help"])
        with pytest.raises(SystemExit) as exit:
            module.main()
        assert exit.value.code == 0 and "usage" in capsys.readouterr().out


def test_the_full_protocol_sweep_lists_each_run_with_its_start_and_refuses_a_missing_control(tmp_path):
    """benchmarks/pretraining/pretraining_full.sh (DRY_RUN=1): a pretrained row starts from its folder, its scratch
    twin is built
    from that folder's encoder fields and tokenizer; the softmax control needs its pretrained folder first."""
    import os
    import subprocess

    script = BENCHMARKS / "pretraining" / "pretraining_full.sh"
    env = dict(os.environ, DRY_RUN="1", SEEDS="1", SOFTMAX_PRETRAINED="pretrained/fastformer-imdb-clm")
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"

    def listed(*groups: str) -> dict[str, str]:
        lines = subprocess.run(
            ["bash", str(script), *groups], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        return {line.split()[0]: line for line in lines}

    def names(dataset: str) -> list[str]:  # each group's pretrained run, then its scratch twin
        return [
            f"{group}-{start}-seed1" for group in (dataset, f"{dataset}-softmax") for start in ("pretrained", "scratch")
        ]

    runs = listed("imdb2", "imdb2-softmax")
    assert list(runs) == names("imdb2")
    assert runs["imdb2-pretrained-seed1"].endswith("--init-from pretrained/fastformer-imdb-clm")
    assert "--model causal=true" in runs["imdb2-scratch-seed1"] and "--architecture" not in runs["imdb2-scratch-seed1"]
    assert "--architecture softmax" in runs["imdb2-softmax-scratch-seed1"]
    assert runs["imdb2-softmax-scratch-seed1"].endswith("--tokenizer pretrained/fastformer-imdb-clm")
    # each group's runs are named by the baselines' set (classification_full.sh), so summarize_runs pairs them
    yelp_runs = listed("yelp5", "yelp5-softmax")
    assert list(yelp_runs) == names("yelp5")
    # the control on any set: that set's data and length and no IMDB-2 flag carried over (its start here is
    # SOFTMAX_PRETRAINED, set to the Fastformer's folder above)
    control = yelp_runs["yelp5-softmax-pretrained-seed1"]
    assert control == yelp_runs["yelp5-pretrained-seed1"].replace("yelp5-", "yelp5-softmax-", 1).replace(
        " --max-length", " --architecture softmax --max-length"
    )
    assert "--binary-threshold" not in control
    full = ROOT / "benchmarks/classification/results/classification-full"
    assert {p.name.split("-")[0] for p in full.glob("*nbsvm*")} >= {
        "imdb2",
        "imdb8",
        "yelp5",
    }
    env["SOFTMAX_PRETRAINED"] = str(tmp_path / "missing")
    refused = subprocess.run(["bash", str(script), "imdb2-softmax"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "no " + str(tmp_path / "missing") + "/config.json" in refused.stderr
    # a pretrained folder whose config the flags cannot come from: refused, not a scratch run with the default encoder
    env["PRETRAINED"] = str(tmp_path / "missing")
    refused = subprocess.run(["bash", str(script), "imdb2"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and refused.stdout == "" and "missing/config.json" in refused.stderr


def test_the_probe_sweep_runs_from_any_pretrained_folder_without_kept_points():
    """benchmarks/pretraining/pretraining_probes.sh (DRY_RUN=1) with POINT_DIR: a probe from a shipped folder (no
    kept points of
    its run; the script used to stop silently there) and its from-scratch twin, built from that folder's config."""
    import os
    import subprocess

    script = BENCHMARKS / "pretraining" / "pretraining_probes.sh"
    env = dict(os.environ, DRY_RUN="1", RUN="runs/none", POINT_DIR="pretrained/fastformer-imdb-clm", TAG="shipped")
    env.update(EXTRA="--layer-lr-decay 0.5", SEED="2", PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    listed = subprocess.run(
        ["bash", str(script), "scratch", "1600"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    runs = {line.split()[0]: line for line in listed}
    assert list(runs) == ["probe-shipped-scratch-seed2", "probe-shipped-step1600-seed2"]
    assert runs["probe-shipped-step1600-seed2"].endswith("--init-from pretrained/fastformer-imdb-clm")
    assert (
        "--layer-lr-decay 0.5" in runs["probe-shipped-step1600-seed2"]
        and "--seed 2" in runs["probe-shipped-scratch-seed2"]
    )
    assert "--model causal=true" in runs["probe-shipped-scratch-seed2"]  # the folder's encoder fields
    assert "--tokenizer pretrained/fastformer-imdb-clm " in runs["probe-shipped-scratch-seed2"]  # and its tokenizer


def dry_run(script: str, **env: str) -> dict[str, str]:
    """{run name: its `fastformer train` arguments} as a sweep under benchmarks/ lists them (DRY_RUN=1, run from the
    repository root with `env` set)."""
    import os
    import subprocess

    environment = dict(os.environ, DRY_RUN="1", **env)
    done = subprocess.run(["bash", str(BENCHMARKS / script)], env=environment, cwd=ROOT, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


def test_the_pretrained_rows_of_the_news_sweeps_start_from_the_shipped_folders():
    """PRETRAINED=1 (DRY_RUN=1): MIND topics lists the distilled student, its teacher and the IMDB language model per
    seed, each from its folder; news recommendation lists the student (also with slowed layers, and taught by the
    teacher row of its seed) and its teacher as news encoders with bf16; without PRETRAINED neither sweep lists them."""

    def listed(script: str, **env: str) -> dict[str, str]:
        return dry_run(f"news/{script}", SEEDS="2", **env)

    topics = listed("mind_topics.sh", PRETRAINED="1", SETS="titles")
    assert "--init-from pretrained/fastformer-minilm-l6-distilled --bf16" in topics["titles-minilm-student-seed2"]
    assert "--init-from runs/minilm-softmax --architecture softmax" in topics["titles-minilm-teacher-seed2"]
    assert "--init-from pretrained/fastformer-imdb-clm" in topics["titles-imdb-clm-seed2"]
    news = listed("news_mind_vectors.sh", PRETRAINED="1", LAYER_LR_DECAYS="0.5")
    assert "--bf16 --init-from pretrained/fastformer-minilm-l6-distilled" in news["news-fastformer-student-seed2"]
    assert "--init-from runs/minilm-softmax --architecture softmax" in news["news-softmax-teacher-seed2"]
    assert news["news-fastformer-student-lrd0.5-seed2"].endswith("--layer-lr-decay 0.5")
    taught = "--init-from pretrained/fastformer-minilm-l6-distilled"
    taught += " --teacher runs/news-mind-vectors/news-softmax-teacher-seed2"
    assert news["news-fastformer-student-kd-seed2"].endswith(taught)
    assert news["news-fastformer-student-kd-lrd0.5-seed2"].endswith(f"{taught} --layer-lr-decay 0.5")
    assert not any("minilm" in name for name in listed("mind_topics.sh", SETS="titles"))
    assert "news-fastformer-student-seed2" not in listed("news_mind_vectors.sh")
    other = listed("news_mind_vectors.sh", PRETRAINED="1", STUDENT="runs/other", STUDENT_TAG="-other")
    assert other["news-fastformer-student-other-seed2"].endswith("--init-from runs/other")
    assert "news-fastformer-student-seed2" not in other  # another student's rows never take the shipped one's names
    titles = dry_run("distill/news_titles.sh", SEEDS="2")  # (a DRY_RUN makes no corpus and runs no distillation)
    assert list(titles) == ["news-fastformer-student-titles-lrd0.2-seed2"]
    assert (
        "--init-from runs/distill/student-news-titles --layer-lr-decay 0.2"
        in titles["news-fastformer-student-titles-lrd0.2-seed2"]
    )


def test_a_sweep_whose_filter_matches_nothing_runs_nothing(tmp_path):
    """ONLY matching no row (JOBS > 1): `sweep` starts no run (xargs -r), where it once ran one with an empty name."""
    import os
    import subprocess

    script = tmp_path / "campaign.sh"
    script.write_text(f"source {BENCHMARKS / 'run_sweep.sh'}\njobs() {{ echo 'row --x 1'; }}\nsweep_relisting jobs\n")
    environment = dict(os.environ, OUT=str(tmp_path / "runs"), RESULTS=str(tmp_path / "results"), JOBS="2",
                       THREADS="1", ONLY="nothing", PATH="/usr/bin:/bin")  # fmt: skip
    done = subprocess.run(["bash", str(script)], env=environment, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout == "" and not (tmp_path / "runs").exists(), done.stdout


def test_the_news_title_corpus_writes_each_text_once_as_the_news_encoder_reads_it(tmp_path):
    """benchmarks/distill/news_titles.py on MIND's real news sample, given twice: "category | title" per news, each text
    once (the distillation's --train and --exclude files)."""
    import json

    module = load_script(BENCHMARKS / "distill" / "news_titles.py", "benchmark_news_titles")
    sample = SHARED / "data" / "mind" / "news_sample.tsv.gz"
    out = tmp_path / "titles.jsonl"
    assert module.main([str(out), str(sample), str(sample)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    texts = [row["text"] for row in rows]
    assert len(texts) == len(set(texts)) > 1900  # 2,000 news, a few with the same category and title
    from fastformer.data.mind import read_news

    news = read_news(sample)
    assert all(row["text"] == news[row["news_id"]].text(["category", "title"]) for row in rows)
    assert rows[0]["text"].split(" | ")[0] == news[rows[0]["news_id"]].category


def test_the_other_sets_list_students_taught_by_their_teachers_at_both_lengths():
    """benchmarks/distill/sets.sh (DRY_RUN=1): per seed the teacher at 512 and the shipped student at 512 and 1,024,
    each also taught by the finished teacher of its set and seed (IMDB-8 with unlabelled reviews); IMDB-8's untaught
    and taught students at 1,024 both read head+tail, so they differ only in the teacher."""
    runs = dry_run("distill/sets.sh", SEEDS="2")
    teacher = "--teacher runs/distill-sets/imdb8-minilm-teacher512-seed2 --unlabelled"
    taught = " ".join(runs["imdb8-minilm-student512-task-distilled-seed2"].split())
    assert f"--max-length 512 --seed 2 {teacher}" in taught and "pretrained/fastformer-minilm" in taught
    taught = " ".join(runs["imdb8-minilm-student1024-ht-task-distilled-seed2"].split())
    assert f"--max-length 1024 --truncation head+tail --seed 2 {teacher}" in taught
    assert (
        "--teacher runs/distill-sets/yelp5-minilm-teacher512-seed2"
        in runs["yelp5-minilm-student512-task-distilled-seed2"]
    )
    untaught = " ".join(runs["imdb8-minilm-student1024-ht-seed2"].split())
    assert "--max-length 1024 --truncation head+tail --seed 2" in untaught and "--teacher" not in untaught


def test_a_relisting_sweep_runs_what_a_finished_run_makes_listable_and_tries_a_failing_run_once(tmp_path):
    """`sweep_relisting` (benchmarks/run_sweep.sh): a row listed only once another run's results exist (a student
    taught by its teacher) runs in the same campaign, in list order; finished rows are skipped; a failing row is
    tried once, not forever (one stopped by SIGTERM is said as such); a run's log is appended to (a resumed run keeps
    its earlier part, and a second campaign refused by a running run's lock cannot wipe that run's log).
    `fastformer` here is a stand-in script: what is tested is the shell's order."""
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "fastformer"  # writes metrics.json in --output-dir; "broken" fails, "term" exits 143 (SIGTERM)
    stand_in.write_text(
        '#!/usr/bin/env bash\nwhile [ $# -gt 0 ]; do [ "$1" = --output-dir ] && out=$2; shift; done\n'
        'echo "${out##*/}" >> "$ORDER"; echo "attempt of ${out##*/}"\n'
        "case $out in *broken) exit 1;; *term) exit 143;; esac\n"
        'mkdir -p "$out" && echo {} > "$out/metrics.json"\n'
    )
    stand_in.chmod(0o755)
    script = tmp_path / "campaign.sh"
    script.write_text(
        f"source {BENCHMARKS / 'run_sweep.sh'}\n"
        'jobs() { echo "teacher --x 1"; echo "broken --x 2"; '
        '[ -f "$RESULTS/teacher.json" ] && echo "student --teacher t"; echo "last --x 3"; echo "term --x 4"; }\n'
        "sweep_relisting jobs\n"
    )
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "last.json").write_text("{}")  # finished in an earlier session: skipped
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "teacher.log").write_text("killed in an earlier session\n")  # resumed now
    environment = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", ORDER=str(tmp_path / "order"), JOBS="1",
                       THREADS="1", OUT=str(tmp_path / "runs"), RESULTS=str(tmp_path / "results"))  # fmt: skip
    done = subprocess.run(["bash", str(script)], env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "order").read_text().split() == ["teacher", "broken", "student", "term"]
    assert "failed: broken" in done.stdout and (tmp_path / "results" / "student.json").exists()
    assert "stopped: term (SIGTERM; the sweep again continues it)" in done.stdout
    log = (tmp_path / "runs" / "teacher.log").read_text()
    assert log == "killed in an earlier session\nattempt of teacher\n"


@pytest.mark.parametrize(
    ("script", "env"),
    [
        ("distill/sets.sh", {"DISTILL_HIDDEN": "1"}),
        ("distill/imdb2.sh", {}),
        ("news/mind_topics.sh", {"PRETRAINED": "1"}),
        ("news/news_mind_vectors.sh", {"PRETRAINED": "1", "LAYER_LR_DECAYS": "0.5", "DISTILL_HIDDEN": "1"}),
        ("distill/news_titles.sh", {}),
    ],
    ids=["distill-sets", "distill-imdb2", "mind-topics", "news", "news-titles"],
)
def test_every_run_a_sweep_lists_parses_with_todays_command_line(script, env, monkeypatch):
    """Each run of the sweep (DRY_RUN=1) is taken by `fastformer train`'s parser and, where the files it reads are
    here, by its settings' checks (ranges, choices, files): a flag renamed or a value out of range fails here, not
    hours into a background sweep."""
    import shlex

    from fastformer.cli import train
    from fastformer.cli.settings import resolve_settings

    monkeypatch.chdir(ROOT)
    runs = dry_run(script, SEEDS="1", **env)
    assert runs
    for name, arguments in runs.items():
        words = shlex.split(arguments)
        task, namespace = train.parse_arguments(words)
        config_class = train.TASKS[task].config_class
        reads = [w for w in words if "/" in w and not w.startswith("-") and "=" not in w]
        if all(Path(w.split(",")[0]).exists() for w in reads):
            resolve_settings(config_class, namespace, None)
        assert name


def test_accuracy_by_length_reads_each_review_back_and_buckets_it_by_its_tokens(tmp_path, capsys):
    """benchmarks/distill/by_length.py on real IMDB reviews: each prediction's text is read back from the file and
    line it names, counted in the teacher's WordPiece tokens and scored in its bucket (a short review, one read whole
    only at 1,024, one cut at both); runs that predicted other rows are refused."""
    import gzip
    import json
    from itertools import islice

    by_length = load_script(BENCHMARKS / "distill" / "by_length.py")
    with gzip.open(ROOT.parent / "shared" / "data" / "imdb" / "imdb_ratings.jsonl.gz", "rt") as lines:
        records = [json.loads(line) for line in islice(lines, 400)]
    reviews = tmp_path / "reviews.jsonl"  # a short review, a 600-word one and a 1,200-word one, as a user's file
    words = " ".join(r["text"] for r in records).split()
    chosen = [records[0]["text"], " ".join(words[:600]), " ".join(words[:1200])]
    reviews.write_text("".join(json.dumps({"text": t}) + "\n" for t in chosen))
    run = tmp_path / "run"
    run.mkdir()
    rows = [dict(source=f"{reviews}:{i + 1}", label="pos", predicted=p) for i, p in enumerate(["pos", "neg", "pos"])]
    (run / "predictions_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "table.json"
    assert by_length.main([f"student={run}", "--json", str(out)]) == 0
    table = json.loads(out.read_text())["runs"]["student"]
    assert [table[name]["accuracy"] for _, _, name in by_length.BUCKETS] == [100.0, 0.0, 100.0]
    assert (
        table["all"] == dict(reviews=3, accuracy=66.67)
        and "| student | 100.00 | 0.00 | 100.00 | 66.67 |" in capsys.readouterr().out
    )
    assert (
        by_length.main(["--table", str(out)]) == 0 and "| student | 100.00 | 0.00 | 100.00 |" in capsys.readouterr().out
    )
    later = tmp_path / "later"  # a run finished after the table was committed (the student's folder since gone)
    later.mkdir()
    later_rows = [{**r, "predicted": p} for r, p in zip(rows, ["neg", "pos", "pos"], strict=True)]
    (later / "predictions_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in later_rows))
    assert by_length.main([f"later={later}", "--add-to", str(out)]) == 0
    merged = json.loads(out.read_text())["runs"]
    assert list(merged) == ["student", "later"] and merged["student"] == table
    assert [merged["later"][name]["accuracy"] for _, _, name in by_length.BUCKETS] == [0.0, 100.0, 100.0]
    other = tmp_path / "other"
    other.mkdir()
    (other / "predictions_test.jsonl").write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(SystemExit, match="not predict the same test rows"):
        by_length.main([f"a={run}", f"b={other}"])
    with pytest.raises(SystemExit, match="its runs predicted 3 test rows, these 1"):
        by_length.main([f"b={other}", "--add-to", str(out)])


def test_head_tail_reads_again_only_the_reviews_a_run_cut(tmp_path):
    """by_length.py --head-tail NAME: a real (tiny) classifier's rows longer than its --max-length are predicted
    again from their first and last tokens (as `Classifier` with head+tail does), the others keep the run's own."""
    import json

    from fastformer.cli.main import main as fastformer
    from fastformer.tasks.classification.classifier import Classifier
    from tests.helpers import TINY_CLASSIFIER

    run = tmp_path / "run"
    assert fastformer(["train", *TINY_CLASSIFIER, "--output-dir", str(run)]) == 0  # the built-in task, 48 tokens
    by_length = load_script(BENCHMARKS / "distill" / "by_length.py")
    texts = ["a fine film", "dull " * 60 + "but in the end a fine film " * 30]  # read whole; cut at 48
    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    classifier = Classifier(run, 48)
    labels = classifier.labels.labels
    rows = [dict(source=f"{reviews}:{i + 1}", label=labels[0], predicted="kept") for i in range(2)]
    (run / "predictions_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    read_again = by_length.read_cut_again(
        run, rows, {r["source"]: t for r, t in zip(rows, texts, strict=True)}, "head+tail"
    )
    classifier.truncation = "head+tail"
    assert [r["predicted"] for r in read_again] == ["kept", classifier([texts[1]])[0]["label"]]
    with pytest.raises(SystemExit, match="--head-tail other: not one of the runs"):
        by_length.main([f"student={run}", "--head-tail", "other"])


def test_a_soup_is_the_mean_of_one_recipes_runs_and_scores_as_a_run_folder(tmp_path, capsys):
    """benchmarks/distill/soup.py on two tiny SST-5 runs of one recipe (seeds 1 and 2, one vocabulary): every float
    tensor is the mean of theirs, the folder is one `fastformer evaluate` scores, and runs of another recipe, another
    vocabulary or a soup over an existing folder are refused before anything is written."""
    import json

    from safetensors.torch import load_file

    from fastformer.cli.main import main

    soup = load_script(BENCHMARKS / "distill" / "soup.py")
    sst = SHARED / "data" / "sst5"
    tiny = ["--train", str(sst / "sst_train.txt"), "--max-train-examples", "200", "--epochs", "1", "--no-progress"]
    tiny += ["--model", "hidden_size=32", "--model", "num_attention_heads=4", "--model", "intermediate_size=32"]
    tiny += ["--vocab-size", "400", "--max-length", "32", "--max-eval-examples", "50"]
    runs = {name: tmp_path / name for name in ("seed1", "seed2", "other-rate", "other-vocabulary")}
    assert main(["train", *tiny, "--seed", "1", "--output-dir", str(runs["seed1"])]) == 0
    shared = ["--tokenizer", str(runs["seed1"] / "tokenizer")]
    assert main(["train", *tiny, *shared, "--seed", "2", "--output-dir", str(runs["seed2"])]) == 0
    rate = ["--learning-rate", "3e-3"]
    assert main(["train", *tiny, *shared, *rate, "--seed", "2", "--output-dir", str(runs["other-rate"])]) == 0
    assert main(["train", *tiny, "--vocab-size", "300", "--output-dir", str(runs["other-vocabulary"])]) == 0
    out = tmp_path / "soup"
    assert soup.main([str(out), str(runs["seed1"]), str(runs["seed2"])]) == 0
    a, b, mean = (load_file(str(folder / "model.safetensors")) for folder in (runs["seed1"], runs["seed2"], out))
    assert mean.keys() == a.keys() and not torch.equal(a["classifier.weight"], b["classifier.weight"])
    assert all(torch.allclose(mean[name], (a[name] + b[name]) / 2) for name in a if a[name].is_floating_point())
    capsys.readouterr()
    assert main(["evaluate", str(out), "--data", str(sst / "sst_dev.txt"), "--output", str(tmp_path / "m.json")]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["examples"] == 1101
    with pytest.raises(SystemExit, match="other-rate: trained otherwise than .*seed1 \\(learning_rate\\)"):
        soup.main([str(tmp_path / "a"), str(runs["seed1"]), str(runs["other-rate"])])
    with pytest.raises(SystemExit, match="config.json differ|tokenizer.json differ"):
        soup.main([str(tmp_path / "b"), str(runs["seed1"]), str(runs["other-vocabulary"])])
    with pytest.raises(SystemExit, match="soup exists"):
        soup.main([str(out), str(runs["seed1"]), str(runs["seed2"])])
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_tail_average_is_the_mean_of_one_runs_last_checkpoints_chosen_on_its_own_held_out_reviews(tmp_path, capsys):
    """soup.py --last-checkpoints 2 on a tiny 2-epoch IMDB-2 run (two checkpoints): the weights are their mean; and
    held_out.py writes the run's validation reviews back from the lines its predictions name, on which `fastformer
    evaluate` of the run's folder gives the run's own validation accuracy (so a tail average is chosen on them)."""
    import json

    from safetensors.torch import load_file

    from fastformer.cli.main import main

    soup = load_script(BENCHMARKS / "distill" / "soup.py")
    held_out = load_script(BENCHMARKS / "distill" / "held_out.py")
    imdb = SHARED / "data" / "imdb" / "imdb_ratings.jsonl.gz"
    run = tmp_path / "run"
    tiny = ["--train", str(imdb), "--where", "train:split=train", "--label-field", "rating", "--binary-threshold", "7",
            "--max-train-examples", "160", "--max-eval-examples", "40", "--epochs", "2", "--vocab-size", "400",
            "--max-length", "32", "--model", "hidden_size=16", "--model", "num_attention_heads=2",
            "--model", "intermediate_size=16", "--no-progress"]  # fmt: skip
    assert main(["train", *tiny, "--output-dir", str(run)]) == 0
    first, last = sorted((run / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    out = tmp_path / "tail"
    assert soup.main([str(out), str(run), "--last-checkpoints", "2"]) == 0
    a, b, mean = (load_file(str(f / "model.safetensors")) for f in (first, last, out))
    assert not torch.equal(a["classifier.weight"], b["classifier.weight"])
    assert all(torch.allclose(mean[name], (a[name] + b[name]) / 2) for name in a if a[name].is_floating_point())
    assert json.loads((out / "soup.json").read_text())["tail_average_of"] == [str(first), str(last)]
    with pytest.raises(SystemExit, match="2 complete checkpoint\\(s\\), fewer than --last-checkpoints 3"):
        soup.main([str(tmp_path / "three"), str(run), "--last-checkpoints", "3"])
    with pytest.raises(SystemExit, match="takes one run folder and K >= 2"):
        soup.main([str(tmp_path / "two-runs"), str(run), str(run), "--last-checkpoints", "2"])
    validation = tmp_path / "validation.jsonl"
    assert held_out.main([str(run), str(validation)]) == 0
    predictions = [json.loads(line) for line in (run / "predictions_validation.jsonl").read_text().splitlines()]
    assert len(validation.read_text().splitlines()) == len(predictions) == 40
    capsys.readouterr()
    scored = tmp_path / "run-scored" / "metrics.json"
    scored.parent.mkdir()
    (tmp_path / "tail-scored").mkdir()
    assert main(["evaluate", str(run), "--data", str(validation), "--output", str(scored)]) == 0
    own = json.loads((run / "metrics.json").read_text())["validation"]["accuracy"]
    assert json.loads(scored.read_text())["accuracy"] == pytest.approx(own)
    tail_scored = tmp_path / "tail-scored" / "m.json"
    assert main(["evaluate", str(out), "--data", str(validation), "--output", str(tail_scored)]) == 0
    with pytest.raises(SystemExit, match="exists"):
        held_out.main([str(run), str(validation)])
