"""Pretraining (`fastformer train pretrain`) on real IMDB text: masking statistics, decontamination, the run end to end
with a killed-run resume, and fine-tuning from its folder with `--init-from` (exact copy, each refusal)."""

import gzip
import json
import shutil

import pytest
import torch
from transformers import AutoModelForMaskedLM

from fastformer.cli.main import main
from fastformer.data.text_corpus import read_texts
from fastformer.data.tokenizer import train_tokenizer
from fastformer.engine.init_from import fine_tuning_config, load_encoder
from fastformer.models.fastformer import FastformerForSequenceClassification
from fastformer.tasks.pretrain.config import PretrainingConfig
from fastformer.tasks.pretrain.corpus import decontaminate, load_texts, normalise_text
from fastformer.tasks.pretrain.pretraining import MaskingCollator, TextPieces
from tests.helpers import SHARED, acl_imdb_layout

IMDB = SHARED / "data" / "imdb" / "imdb_ratings.jsonl.gz"
UNSUP = SHARED / "data" / "imdb" / "imdb_unsup.jsonl.gz"
TINY = [
    "--model",
    "hidden_size=32",
    "--model",
    "num_attention_heads=4",
    "--model",
    "intermediate_size=64",
    "--vocab-size",
    "600",
    "--block-size",
    "64",
    "--batch-size",
    "8",
    "--no-progress",
]


@pytest.fixture(scope="module")
def reviews():
    texts = []
    for text in read_texts(UNSUP):
        texts.append(text)
        if len(texts) == 300:
            return texts


@pytest.fixture(scope="module")
def tokenizer(reviews):
    return train_tokenizer(reviews, vocab_size=800)


def _masked_batches(tokenizer, reviews, whole_word: bool, seed=3):
    pieces = TextPieces(reviews, tokenizer, block_size=96, min_tokens=4, offsets=whole_word)
    collator = MaskingCollator(tokenizer, 0.15, whole_word, seed=seed)
    cls = tokenizer.cls_token_id
    items = [pieces[i] for i in range(len(pieces))]
    for item in items[::7]:  # a special token planted in some sequences: it must never be chosen
        item["input_ids"] = [cls, *item["input_ids"][1:]]
    return [(collator(items[s : s + 16]), items[s : s + 16]) for s in range(0, len(items), 16)]


def test_masking_rate_split_and_what_is_never_masked(tokenizer, reviews):
    chosen = real = as_mask = as_random = kept = 0
    for batch, items in _masked_batches(tokenizer, reviews, whole_word=False):
        original = torch.full_like(batch["input_ids"], tokenizer.pad_token_id)
        for row, item in enumerate(items):
            original[row, : len(item["input_ids"])] = torch.tensor(item["input_ids"])
        selected = batch["labels"] != -100
        padding = batch["attention_mask"] == 0
        assert not (selected & padding).any()  # padding never chosen
        assert not (selected & (original == tokenizer.cls_token_id)).any()  # specials never chosen
        assert torch.equal(batch["labels"][selected], original[selected])  # the target is the original token
        unselected = ~selected
        assert torch.equal(batch["input_ids"][unselected], original[unselected])  # the rest is untouched
        chosen += int(selected.sum())
        real += int((~padding & (original != tokenizer.cls_token_id)).sum())
        as_mask += int((batch["input_ids"][selected] == tokenizer.mask_token_id).sum())
        same = batch["input_ids"][selected] == original[selected]
        kept += int(same.sum())
        as_random += int((~same & (batch["input_ids"][selected] != tokenizer.mask_token_id)).sum())
    assert real > 40_000
    assert abs(chosen / real - 0.15) < 0.01
    # 80 / 10 / 10 (a random token may by chance equal the original: a few of the 10 % random count as kept)
    assert abs(as_mask / chosen - 0.8) < 0.02
    assert abs(as_random / chosen - 0.1) < 0.015
    assert abs(kept / chosen - 0.1) < 0.015


def test_whole_word_masking_takes_every_piece_of_a_word(tokenizer, reviews):
    words_seen = split_words = 0
    for batch, items in _masked_batches(tokenizer, reviews, whole_word=True)[:6]:
        selected = batch["labels"] != -100
        for row, item in enumerate(items):
            offsets = item["offset_mapping"]
            word = []  # token positions of the current word: a token starting where the previous ended continues it
            for position in range(len(offsets) + 1):
                new_word = position == len(offsets) or not word or offsets[position][0] != offsets[word[-1]][1]
                special = position < len(offsets) and item["input_ids"][position] == tokenizer.cls_token_id
                if (new_word or special) and word:
                    flags = {bool(selected[row, p]) for p in word}
                    assert len(flags) == 1, f"word at tokens {word} partly masked"
                    words_seen += 1
                    split_words += len(word) > 1
                    word = []
                if position < len(offsets) and not special:
                    word.append(position)
                elif special:
                    assert not selected[row, position]
        assert torch.equal(
            batch["input_ids"][selected], torch.full_like(batch["input_ids"][selected], tokenizer.mask_token_id)
        )
    assert words_seen > 3000 and split_words > 100  # words of several pieces were there to be tested


def test_decontamination_drops_exactly_the_planted_texts(tmp_path):
    corpus = [
        "A fine film.",
        "Evaluation text one.",
        "  evaluation   TEXT one. ",
        "Another review.",
        "A fine film.",
        "Held out\ttoo",
    ]
    kept, dropped, repeats = decontaminate(corpus, {normalise_text("Evaluation text one."), "held out too"})
    assert kept == ["A fine film.", "Another review."]
    assert (dropped, repeats) == (3, 1)
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"text": t}) + "\n" for t in corpus * 3)
    records = [{"split": "test", "text": "EVALUATION text one."}, {"split": "train", "text": "Another review."}]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg = PretrainingConfig(
        train=str(tmp_path / "corpus.jsonl.gz"),
        exclude=[str(tmp_path / "eval.jsonl")],
        exclude_where={"split": "test"},
        validation_fraction=0.3,
    )
    report = {}
    texts = load_texts(cfg, report)
    assert report["decontamination"]["train_texts_dropped"] == 6  # 2 planted forms x 3 copies
    assert report["decontamination"]["excluded_texts"] == 1  # the train-split record is filtered out
    assert sorted(texts["train"] + texts["validation"]) == sorted(["A fine film.", "Another review.", "Held out\ttoo"])


def test_imdb_unlabelled_reviews_lose_exactly_the_test_texts():
    cfg = PretrainingConfig(train=str(UNSUP), exclude=[str(IMDB)], exclude_where={"split": "test"})
    report = {}
    texts = load_texts(cfg, report)
    # the data README: 109 unlabelled reviews also occur in the test split (24,801 distinct texts after normalising)
    # and 493 repeat inside the file
    decontamination = report["decontamination"]
    assert (decontamination["train_texts_dropped"], decontamination["excluded_texts"]) == (109, 24801)
    assert decontamination["repeated_texts_dropped"] == 493
    assert len(texts["train"]) + len(texts["validation"]) == 50000 - 109 - 493


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, reviews):
    """A tiny pretraining run on 260 real unlabelled reviews (a planted test review among them) and its arguments."""
    folder = tmp_path_factory.mktemp("pretrain")
    test_review = next(iter(read_texts(IMDB, where={"split": "test"})))
    with gzip.open(folder / "corpus.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"text": t}) + "\n" for t in [*reviews[:130], test_review, *reviews[130:260]])
    (folder / "test.jsonl").write_text(json.dumps({"split": "test", "text": test_review}) + "\n")
    args = [
        "train",
        "pretrain",
        "--train",
        str(folder / "corpus.jsonl.gz"),
        "--validation-fraction",
        "0.08",
        "--exclude",
        str(folder / "test.jsonl"),
        "--where",
        "exclude:split=test",
        "--max-steps",
        "12",
        "--evaluations",
        "2",
        "--seed",
        "4",
        *TINY,
    ]
    folder = folder / "run"
    assert main([*args, "--output-dir", str(folder)]) == 0
    return folder, args


def test_pretraining_run_writes_a_folder_with_its_metrics(pretrained):
    folder, _ = pretrained
    metrics = json.loads((folder / "metrics.json").read_text())
    decontamination = metrics["data"]["decontamination"]
    assert (decontamination["train_texts_dropped"], decontamination["excluded_texts"]) == (1, 1)
    train = metrics["train"]
    assert train["steps"] == 12 and 0 < train["epochs"] < 1  # --max-steps stopped it inside the first epoch
    # tokens/s counts the tokens of the steps that ran (not a whole epoch, which num_train_epochs rounds up to)
    seconds = train["train_runtime"] - train["evaluation_seconds"]
    # (5 %: the runtimes are rounded and a few seconds long; the bug this guards against was a factor of several)
    assert train["tokens_per_s"] * seconds == pytest.approx(train["tokens"] * train["epochs"], rel=0.05)
    assert 0 <= metrics["validation"]["accuracy"] <= 1 and metrics["validation"]["masked_tokens"] > 100
    log = json.loads((folder / "log_history.json").read_text())
    assert [h["step"] for h in log if "eval_accuracy" in h] == [6, 12]  # held-out loss and accuracy per evaluation
    assert (folder / "training.png").is_file()
    assert type(AutoModelForMaskedLM.from_pretrained(folder)).__name__ == "FastformerForMaskedLM"
    # the vocabulary's fingerprint: trained here (WordPiece training is not deterministic across processes)
    from transformers import AutoTokenizer

    from fastformer.engine.inputs import tokenizer_report

    saved = tokenizer_report(PretrainingConfig(train="x", tokenizer=str(folder)), AutoTokenizer.from_pretrained(folder))
    assert metrics["tokenizer"]["source"] == "trained" and not metrics["tokenizer"]["reproducible"]
    assert metrics["tokenizer"]["sha256"] == saved["sha256"] and saved["reproducible"]


def test_a_killed_pretraining_run_resumes_to_the_same_model(pretrained, tmp_path):
    whole, args = pretrained
    cut = tmp_path / "cut"  # the same run, as if killed after its first checkpoint (step 6)
    shutil.copytree(whole / "tokenizer", cut / "tokenizer")
    shutil.copy(whole / ".fastformer-run", cut / ".fastformer-run")
    shutil.copytree(whole / "checkpoints" / "checkpoint-6", cut / "checkpoints" / "checkpoint-6")
    assert main([*args, "--output-dir", str(cut), "--resume"]) == 0
    assert json.loads((cut / "metrics.json").read_text())["train"]["resumed_from"].endswith("checkpoint-6")
    for name, tensor in AutoModelForMaskedLM.from_pretrained(whole).state_dict().items():
        assert torch.equal(AutoModelForMaskedLM.from_pretrained(cut).state_dict()[name], tensor), name


def test_electra_masks_only_with_mask_draws_noise_and_resumes_to_the_same_model(
    pretrained, tokenizer, reviews, tmp_path
):
    pieces = TextPieces(reviews[:40], tokenizer, block_size=96, min_tokens=4)
    batch = MaskingCollator(tokenizer, 0.15, False, seed=3, replacement_noise=True)([pieces[i] for i in range(16)])
    chosen = batch["labels"] != -100
    assert chosen.sum() > 100 and batch["input_ids"][chosen].eq(tokenizer.mask_token_id).all()  # no 10/10 for ELECTRA
    assert batch["replacement_noise"].shape == batch["input_ids"].shape
    trained, args = pretrained
    args = [*args, "--objective", "electra", "--tokenizer", str(trained / "tokenizer")]  # one vocabulary for both
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert main([*args, "--output-dir", str(whole)]) == 0
    metrics = json.loads((whole / "metrics.json").read_text())
    # 12 steps: the detector is near "all original" (~0.85; 0.796-0.814 over processes); a broken one is near 0.5
    assert metrics["objective"] == "electra" and 0.65 < metrics["validation"]["accuracy"] <= 1
    assert 0.1 < metrics["validation"]["replaced_share"] < 0.2  # ~15 % chosen, nearly all replaced at the start
    log = json.loads((whole / "log_history.json").read_text())
    assert [h["step"] for h in log if "eval_accuracy" in h] == [6, 12]
    shutil.copytree(whole / "tokenizer", cut / "tokenizer")
    shutil.copy(whole / ".fastformer-run", cut / ".fastformer-run")
    shutil.copytree(whole / "checkpoints" / "checkpoint-6", cut / "checkpoints" / "checkpoint-6")
    assert main([*args, "--output-dir", str(cut), "--resume"]) == 0
    from transformers import AutoModelForPreTraining

    resumed = AutoModelForPreTraining.from_pretrained(cut).state_dict()
    for name, tensor in AutoModelForPreTraining.from_pretrained(whole).state_dict().items():
        assert torch.equal(resumed[name], tensor), name


def test_init_from_copies_the_encoder_exactly(pretrained):
    folder, _ = pretrained
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = fine_tuning_config(folder, dict(num_labels=2), {"hidden_dropout_prob": 0.3}, "fastformer", tokenizer, 64)
    model, fresh = load_encoder(FastformerForSequenceClassification, folder, config)
    source = AutoModelForMaskedLM.from_pretrained(folder).state_dict()
    encoder = {k: v for k, v in model.state_dict().items() if k.startswith("fastformer.") and "pooler" not in k}
    assert encoder and all(torch.equal(v, source[k]) for k, v in encoder.items())
    assert set(fresh) == {k for k in model.state_dict() if k.startswith(("classifier.", "fastformer.pooler."))}
    assert model.config.hidden_dropout_prob == 0.3


@pytest.fixture(scope="module")
def reviews_csv(tmp_path_factory):
    """100 real IMDB training reviews (both labels) as a CSV with a header, the way a user brings their data."""
    import csv

    from fastformer.data import read_examples

    examples = read_examples(IMDB, label_field="rating", where={"split": "train"})
    chosen = [e for e in examples if int(e.label) >= 7][:50] + [e for e in examples if int(e.label) <= 4][:50]
    path = tmp_path_factory.mktemp("reviews") / "reviews.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["review", "sentiment"])
        writer.writerows([e.text, "pos" if int(e.label) >= 7 else "neg"] for e in chosen)
    return path


def classify(data):
    return [
        "train",
        "--train",
        str(data),
        "--max-eval-examples",
        "16",
        "--epochs",
        "1",
        "--max-length",
        "48",
        "--no-progress",
    ]


def test_fine_tuning_from_the_folder_records_its_origin(pretrained, reviews_csv, tmp_path):
    folder, _ = pretrained
    assert main([*classify(reviews_csv), "--init-from", str(folder), "--output-dir", str(tmp_path / "ft")]) == 0
    metrics = json.loads((tmp_path / "ft" / "metrics.json").read_text())
    assert metrics["init_from"]["folder"] == str(folder)
    assert metrics["init_from"]["architectures"] == ["FastformerForMaskedLM"]
    assert metrics["inputs"]["tokenization"] == "pretrained"
    assert json.loads((tmp_path / "ft" / "run_config.json").read_text())["init_from"] == str(folder)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "hidden_size=64"], "--model hidden_size=64: --init-from .* has hidden_size=32"),
        (["--architecture", "softmax"], "--architecture softmax: --init-from .* attention_type 'fastformer'"),
        (["--max-length", "100"], "--max-length 100: --init-from .* max_position_embeddings 64"),
        (["--word-vectors", "glove-6b-50d"], "--word-vectors: --init-from brings its own tokenizer"),
        (["--tokenizer", "OTHER"], r"--tokenizer .*: its vocabulary \(\d+ tokens\) differs"),
        (["--layer-lr-decay", "0.5"], "--layer-lr-decay 0.5: --init-from .* shares one layer across its"),
    ],
)
def test_init_from_refuses_each_mismatch_in_one_line_and_writes_nothing(
    pretrained, reviews_csv, tmp_path, extra, message
):
    folder, _ = pretrained
    if "OTHER" in extra:
        other = tmp_path / "other-tokenizer"
        train_tokenizer(["some other words entirely"] * 5, vocab_size=50).save_pretrained(other)
        extra = ["--tokenizer", str(other)]
    out = tmp_path / "refused"
    with pytest.raises(SystemExit) as refused:
        main([*classify(reviews_csv), "--init-from", str(folder), *extra, "--output-dir", str(out)])
    assert len(str(refused.value).splitlines()) == 1
    assert __import__("re").search(message, str(refused.value)), str(refused.value)
    assert not out.exists() or not any(out.iterdir())


def test_layer_lr_decay_needs_a_pretrained_encoder(reviews_csv, tmp_path):
    out = tmp_path / "refused"
    with pytest.raises(SystemExit, match="--layer-lr-decay: needs --init-from"):
        main([*classify(reviews_csv), "--layer-lr-decay", "0.5", "--output-dir", str(out)])
    assert not out.exists()


def test_news_and_summarization_start_from_the_pretrained_encoder(pretrained, tmp_path):
    """--init-from for the other encoders: the recommender's news encoder and the summarizer's encoder are the
    pretrained one exactly (before training: 0 epochs is not a run, so the copy is checked on the built models),
    the origin is in metrics.json, and a folder that cannot start the run is refused before anything is written."""
    from fastformer.engine.init_from import InitFromError, check_start, start_from
    from fastformer.models.fastformer import FastformerForConditionalGeneration, FastformerForNewsRecommendation
    from fastformer.tasks.news.config import NewsConfig
    from fastformer.tasks.news.recommender import news_head_fields
    from fastformer.tasks.summarize.config import SummarizationConfig
    from fastformer.tasks.summarize.summarizer import summarizer_head_fields

    folder, _ = pretrained
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    source = AutoModelForMaskedLM.from_pretrained(folder).state_dict()
    news = NewsConfig(train="x", init_from=str(folder), max_length=30)
    summary = SummarizationConfig(train="x", init_from=str(folder), max_source_length=64, max_target_length=16)
    for cfg, model_class, fields in (
        (news, FastformerForNewsRecommendation, news_head_fields(news)),
        (summary, FastformerForConditionalGeneration, summarizer_head_fields(summary, tokenizer)),
    ):
        model, origin = start_from(model_class, cfg, fields, tokenizer, 30)
        encoder = {k: v for k, v in model.state_dict().items() if k.startswith("fastformer.") and "pooler" not in k}
        assert encoder and all(torch.equal(v, source[k]) for k, v in encoder.items()), model_class.__name__
        assert origin["folder"] == str(folder) and origin["newly_initialised"]
    with pytest.raises(InitFromError, match="max_position_embeddings 64"):
        check_start(SummarizationConfig(train="x", init_from=str(folder), max_source_length=128), {}, 128)
    # end to end: a summarizer trained a few steps from it, the origin recorded
    cnndm = SHARED / "data" / "cnndm" / "validation_first1000.csv.gz"
    out = tmp_path / "summary"
    args = [
        "train",
        "summarize",
        "--train",
        str(cnndm),
        "--max-train-examples",
        "24",
        "--max-eval-examples",
        "4",
        "--max-source-length",
        "64",
        "--max-target-length",
        "16",
        "--batch-size",
        "8",
        "--epochs",
        "1",
        "--num-beams",
        "1",
        "--model",
        "decoder_layers=1",
        "--init-from",
        str(folder),
        "--no-progress",
        "--output-dir",
        str(out),
    ]
    assert main(args) == 0
    assert json.loads((out / "metrics.json").read_text())["init_from"]["folder"] == str(folder)


@pytest.mark.slow
def test_two_torchrun_processes_pretrain_as_one_process(pretrained, tmp_path):
    """`torchrun --nproc_per_node 2` with the same global batch pretrains the same model as one process (dropout off,
    the vocabulary fixed): the masks depend on the batch's texts, not on how a batch is split between processes."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder, args = pretrained
    args = [
        *args,
        "--tokenizer",
        str(folder / "tokenizer"),
        "--model",
        "hidden_dropout_prob=0.0",
        "--logging-steps",
        "1",
    ]
    exe = str(Path(sys.executable).parent / "fastformer")
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([*args, "--output-dir", str(one)]) == 0  # the one-process run in this process (one import less)
    torchrun = str(Path(sys.executable).parent / "torchrun")
    second = subprocess.run(
        [torchrun, "--standalone", "--nproc_per_node", "2", exe, *args, "--output-dir", str(two)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=600,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    losses = [[h["loss"] for h in json.loads((d / "log_history.json").read_text()) if "loss" in h] for d in (one, two)]
    assert len(losses[0]) == len(losses[1]) == 12
    for step, (a, b) in enumerate(zip(*losses, strict=True)):
        assert abs(a - b) < 1e-4, f"step {step + 1}: loss {a} (1 process) != {b} (2 processes)"


def test_a_fasttext_exclude_file_drops_its_sentences_not_nothing(tmp_path):
    """SST's test file (`__label__K<TAB>sentence`, what `train` reads natively) as --exclude: the planted test
    sentences leave the corpus, counted per file (the label prefix used to be part of every excluded text, so
    nothing matched while metrics.json reported 2,210 excluded texts)."""
    sst_test = SHARED / "data" / "sst5" / "sst_test.txt"
    planted = [line.split("\t", 1)[1] for line in sst_test.read_text().splitlines()[:4]]
    corpus = [*planted, "A review that is not a test sentence.", "Nor is this one."]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in corpus))
    cfg = PretrainingConfig(train=str(tmp_path / "corpus.jsonl"), exclude=[str(sst_test)], validation_fraction=0.3)
    report = {}
    texts = load_texts(cfg, report)
    assert sorted(texts["train"] + texts["validation"]) == sorted(corpus[4:])
    decontamination = report["decontamination"]
    assert decontamination["train_texts_dropped"] == 4 and decontamination["excluded_texts"] == 2210
    assert decontamination["train_texts_dropped_by_file"] == {str(sst_test): 4}


def test_a_fasttext_corpus_is_read_without_its_labels_and_an_exclude_of_everything_is_one_line(tmp_path):
    """SST's fastText file as --train: its sentences, not `__label__K<TAB>...` lines (the labels leaked into the
    corpus); the same file as --exclude leaves nothing, refused in one line before the run folder exists."""
    sst_dev = SHARED / "data" / "sst5" / "sst_dev.txt"
    texts = load_texts(PretrainingConfig(train=str(sst_dev), validation_fraction=0.1), {})
    assert not any("__label__" in t for t in texts["train"] + texts["validation"])
    assert "It 's a lovely film with lovely performances by Buy and Accorsi ." in texts["train"] + texts["validation"]
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as refused:
        main(["train", "pretrain", "--train", str(sst_dev), "--exclude", str(sst_dev), "--output-dir", str(out)])
    assert "every one of the 1101 training texts occurs in the --exclude files" in str(refused.value.code)
    assert not out.exists()


def test_the_official_aclimdb_folders_are_a_corpus_and_an_exclude(tmp_path):
    """IMDB as released: aclImdb/train/unsup/ (one review a file) is a corpus, aclImdb/test (pos/, neg/) an exclude
    that drops a test review planted in the corpus; aclImdb/train itself (its label folders beside word counts and URL
    lists) is refused as a corpus, naming its folders, before the run folder exists (every reader said 'no such
    file' of a folder)."""
    root = acl_imdb_layout(tmp_path / "aclImdb")
    unsup = root / "train" / "unsup"
    planted = sorted((root / "test" / "neg").iterdir())[0].read_text()
    (unsup / "9_0.txt").write_text(planted)
    (unsup / ".DS_Store").write_bytes(b"\0\1")
    texts = list(read_texts(unsup))
    assert texts == [f.read_text().strip() for f in sorted(unsup.iterdir()) if f.name.endswith(".txt")]
    cfg = PretrainingConfig(train=str(unsup), exclude=[str(root / "test")], validation_fraction=0.2)
    report = {}
    kept = load_texts(cfg, report)
    assert sorted(kept["train"] + kept["validation"]) == sorted(texts[:-1])
    assert (report["decontamination"]["train_texts_dropped"], report["decontamination"]["excluded_texts"]) == (1, 12)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as refused:
        main(["train", "pretrain", "--train", str(root / "train"), "--output-dir", str(out)])
    assert "holds folders (neg, pos, unsup): a folder of documents holds one text file a document" in str(
        refused.value.code
    )
    assert not out.exists()


def test_an_exclude_file_of_sst_trees_drops_its_sentences(tmp_path):
    """SST's trees (`(3 (2 It) (2 ...)))`) as --exclude are read as the sentences they hold, as the fastText copy is."""
    sst_dev = SHARED / "data" / "sst5" / "sst_dev.txt"
    sentences = [line.split("\t", 1)[1] for line in sst_dev.read_text().splitlines()[:3]]
    trees = tmp_path / "dev.txt"
    trees.write_text("".join("(3 " + " ".join(f"(2 {w})" for w in s.split()) + ")\n" for s in sentences))
    corpus = [*sentences, "A review that is not a test sentence.", "Nor is this one."]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in corpus))
    cfg = PretrainingConfig(train=str(tmp_path / "corpus.jsonl"), exclude=[str(trees)], validation_fraction=0.3)
    report = {}
    texts = load_texts(cfg, report)
    assert sorted(texts["train"] + texts["validation"]) == sorted(corpus[3:])
    assert report["decontamination"]["train_texts_dropped_by_file"] == {str(trees): 3}
