"""convert-bert on the real all-MiniLM-L6-v2 weights: the softmax form is BertModel, the Fastformer form reuses
BERT's tensors and starts its poolings as means, positions extend as documented, refusals are one line and write
nothing."""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest
import torch
from transformers import AutoModel, AutoTokenizer, BertModel

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer.cli.main import main
from fastformer.convert_bert import ConversionError, convert_bert, convert_bert_folder, extend_positions, read_bert
from tests.helpers import sst5_sentences, teacher_zip


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(teacher_zip()) as archive:
        archive.extractall(folder)
    return folder


@pytest.fixture(scope="module")
def bert(bert_folder, tmp_path_factory):
    return read_bert(bert_folder, tmp_path_factory.mktemp("scratch"))


@pytest.fixture(scope="module")
def batch(bert_folder):
    tokenizer = AutoTokenizer.from_pretrained(str(bert_folder))
    return tokenizer(sst5_sentences(8), padding=True, return_tensors="pt")  # lengths 10 .. 39: padded rows


def real(tensor, batch):
    return tensor[batch["attention_mask"].bool()]


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
def test_softmax_form_equals_bert_model(bert_folder, bert, batch, implementation):
    teacher = BertModel.from_pretrained(str(bert_folder), attn_implementation=implementation).eval()
    student = convert_bert(bert, "softmax")
    with torch.no_grad():
        expected = teacher(**batch).last_hidden_state
        got = student(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    assert batch["attention_mask"].sum(1).unique().numel() > 4  # padded rows of several lengths
    assert (real(got.last_hidden_state, batch) - real(expected, batch)).abs().max() < 5e-5
    mask = batch["attention_mask"][..., None].float()
    mean = (expected * mask).sum(1) / mask.sum(1)  # sentence-transformers' mean pooling
    assert torch.allclose(got.pooler_output, mean, atol=5e-5)


def test_fastformer_form_reuses_bert_tensors(bert):
    model = convert_bert(bert, "fastformer")
    w = bert.weights
    assert torch.equal(
        model.word_embeddings.weight,
        w["embeddings.word_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0],
    )
    assert torch.equal(model.encoder.position_embeddings.weight, w["embeddings.position_embeddings.weight"])
    for i, layer in enumerate(model.encoder.layers):
        src = f"encoder.layer.{i}."
        pairs = {
            "attention.query": "attention.self.query",
            "attention.key": "attention.self.key",
            "attention.value": "attention.self.value",
            "attention.transform": "attention.output.dense",
            "attention_norm": "attention.output.LayerNorm",
            "feed_forward.fc_in": "intermediate.dense",
            "feed_forward.fc_out": "output.dense",
            "feed_forward_norm": "output.LayerNorm",
        }
        for ours, theirs in pairs.items():
            module = layer.get_submodule(ours)
            assert torch.equal(module.weight, w[f"{src}{theirs}.weight"]), ours
            assert torch.equal(module.bias, w[f"{src}{theirs}.bias"]), ours
        assert layer.attention.value is not None and layer.attention.output_dense is None
        assert not layer.attention.query_att.any() and not layer.attention.key_att.any()


def test_fastformer_form_starts_with_plain_means(bert, batch):
    model = convert_bert(bert, "fastformer")
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_attentions=True)
    lengths = batch["attention_mask"].sum(1).float()
    for weights in out.additive_attentions:
        for alpha_or_beta in weights:  # (B, H, N): 1/n on each real token, 0 at padding
            expected = batch["attention_mask"][:, None, :] / lengths[:, None, None]
            assert torch.allclose(alpha_or_beta, expected.expand_as(alpha_or_beta), atol=1e-6)
    mask = batch["attention_mask"][..., None].float()
    mean = (out.last_hidden_state * mask).sum(1) / mask.sum(1)
    assert torch.allclose(out.pooler_output, mean, atol=1e-5)
    assert torch.isfinite(out.last_hidden_state).all()


def test_positions_extend_by_tiling_the_later_half(bert, bert_folder):
    table = bert.weights["embeddings.position_embeddings.weight"]
    extended = extend_positions(table, 1300)
    assert extended.shape == (1300, table.shape[1])
    assert torch.equal(extended[:512], table)
    for p in (512, 600, 767, 768, 1299):
        assert torch.equal(extended[p], table[256 + (p - 512) % 256]), p
    model = convert_bert(bert, "fastformer", max_positions=1300)
    tokenizer = AutoTokenizer.from_pretrained(str(bert_folder))
    ids = tokenizer(" ".join(sst5_sentences(80)), truncation=True, max_length=1300, return_tensors="pt").input_ids
    assert ids.shape[1] > 1000  # a text longer than the teacher can read
    with torch.no_grad():
        assert torch.isfinite(model(input_ids=ids).last_hidden_state).all()


def test_folder_round_trip_with_auto_classes(bert_folder, tmp_path, batch):
    out = tmp_path / "runs" / "student"  # a folder missing above OUT is made, as `train --output-dir` makes it
    assert main(["convert-bert", str(teacher_zip()), str(out), "--attention", "softmax"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "conversion.json",
        "fine_tuning.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert json.loads((out / "fine_tuning.json").read_text())["learning_rate"] == 5e-5  # BERT's recipe
    report = json.loads((out / "conversion.json").read_text())
    assert report["pooling"] == "mean" and report["dropped_tensors"] == ["pooler.dense.bias", "pooler.dense.weight"]
    loaded = AutoModel.from_pretrained(str(out)).eval()
    teacher = BertModel.from_pretrained(str(bert_folder)).eval()
    with torch.no_grad():
        got = loaded(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        expected = teacher(**batch).last_hidden_state
    assert (real(got, batch) - real(expected, batch)).abs().max() < 5e-5
    assert (
        AutoTokenizer.from_pretrained(str(out)).get_vocab()
        == AutoTokenizer.from_pretrained(str(bert_folder)).get_vocab()
    )


def damaged_copy(bert_folder, tmp_path, damage):
    copy = tmp_path / "source"
    shutil.copytree(bert_folder, copy)
    damage(copy)
    return copy


def truncate_weights(folder):
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: 1 << 20])


def cls_pooling(folder):
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))


def not_bert(folder):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))


def wrong_shape(folder):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": 1024}))


@pytest.mark.parametrize(
    "damage, says",
    [
        (truncate_weights, "model.safetensors: damaged"),
        (lambda f: (f / "model.safetensors").unlink(), "the weights are missing"),
        (cls_pooling, "pooling cls_token; convert-bert reproduces mean pooling only"),
        (not_bert, "model_type 'roberta', not a BERT model"),
        (wrong_shape, "intermediate.dense.weight has shape (1536, 384), config.json says (1024, 384)"),
        (lambda f: (f / "config.json").write_text("{"), "config.json: damaged, not valid JSON"),
        (lambda f: (f / "tokenizer.json").unlink(), "no tokenizer.json or vocab.txt"),
    ],
)
def test_refusals_are_one_line_and_write_nothing(bert_folder, tmp_path, damage, says):
    source = damaged_copy(bert_folder, tmp_path, damage)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as refused:
        main(["convert-bert", str(source), str(out)])
    message = str(refused.value.code)
    assert says in message and "\n" not in message and message.startswith("fastformer convert-bert: ")
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left


def test_existing_output_and_symlink_refused_unchanged(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    link = tmp_path / "link"
    link.symlink_to(taken)
    (tmp_path / "a-file").write_text("mine")
    for out, says in (
        (taken, "exists and is not empty; pass --overwrite"),
        (link, "is a symbolic link"),
        (tmp_path / "a-file" / "out", "a-file is a file, not a folder"),
    ):
        with pytest.raises(ConversionError, match=says):
            convert_bert_folder(teacher_zip(), out)
    assert [p.name for p in taken.iterdir()] == ["keep.txt"] and (taken / "keep.txt").read_text() == "mine"


def test_output_written_meanwhile_is_not_replaced(tmp_path, monkeypatch):
    """Two conversions into one folder at once (two sweeps starting together): the later one refuses at its rename
    and leaves the earlier one's folder whole; --overwrite replaces it."""
    import fastformer.convert_bert as module

    out = tmp_path / "out"
    real_convert = module.convert_bert

    def convert_while_another_writes(*args, **kwargs):
        out.mkdir()
        (out / "config.json").write_text("the other conversion's")
        return real_convert(*args, **kwargs)

    monkeypatch.setattr(module, "convert_bert", convert_while_another_writes)
    with pytest.raises(ConversionError, match="was written while this conversion ran; nothing replaced it"):
        convert_bert_folder(teacher_zip(), out)
    assert [p.name for p in out.iterdir()] == ["config.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left
    shutil.rmtree(out)
    convert_bert_folder(teacher_zip(), out, overwrite=True)
    assert json.loads((out / "config.json").read_text())["model_type"] == "fastformer"


def test_explain_reads_a_converted_classifier_as_predict_does(bert, bert_folder):
    """A converted BERT reads [CLS] ... [SEP]: explain adds them as predict does (the same probabilities), and shows
    weights over the words alone."""
    from fastformer.interpret.explain import explain
    from fastformer.models.fastformer import FastformerForSequenceClassification

    encoder = convert_bert(bert, "fastformer")
    config = encoder.config
    config.num_labels = 2
    torch.manual_seed(0)
    classifier = FastformerForSequenceClassification(config)
    classifier.fastformer.load_state_dict(encoder.state_dict())
    classifier.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bert_folder))
    text = sst5_sentences(1)[0]
    explanation = explain(classifier, tokenizer, text, faithfulness_k=2, trials=2)
    with torch.no_grad():
        expected = classifier(**tokenizer(text, return_tensors="pt")).logits.softmax(-1)[0]
    got = torch.tensor(list(explanation.prediction["probabilities"].values()))
    assert torch.allclose(got, expected, atol=1e-5)
    assert explanation.tokens_read == len(tokenizer(text, add_special_tokens=False).input_ids)
    assert 0.5 < sum(explanation.pooling) < 1  # [CLS] and [SEP] hold the rest
