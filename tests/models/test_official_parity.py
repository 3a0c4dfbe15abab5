"""The authors' notebook: its checkpoints load, and our logits equal the notebook's for them."""

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForSequenceClassification

from fastformer import FastformerForSequenceClassification
from fastformer.convert import convert_official_file, from_official, rename_official
from tests.helpers import FIXTURE

pytestmark = pytest.mark.skipif(not FIXTURE.is_file(), reason=f"fixture missing: {FIXTURE}")


@pytest.fixture(scope="module")
def fixture():
    return load_file(str(FIXTURE))


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-6), (torch.float32, 1e-4)])
def test_logits_equal_the_notebooks(fixture, dtype, tol):
    model = from_official(fixture).to(dtype)
    assert isinstance(model, FastformerForSequenceClassification)
    config = model.config
    assert (config.hidden_size, config.num_attention_heads, config.num_hidden_layers) == (64, 8, 2)
    assert (config.intermediate_size, config.max_position_embeddings, config.vocab_size, config.num_labels) == (
        64,
        128,
        500,
        4,
    )
    with torch.no_grad():
        logits = model(fixture["input_ids"]).logits
    expected = fixture["expected_logits"]
    assert (logits.double() - expected).abs().max().item() < tol


def test_every_weight_is_used(fixture):
    renamed = rename_official(fixture)
    model = from_official(fixture)
    assert set(renamed) == set(model.state_dict())


def test_convert_file_to_pretrained_directory(fixture, tmp_path):
    pt = tmp_path / "notebook.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in fixture.items()}}, pt)  # DataParallel-style
    out = tmp_path / "converted"
    convert_official_file(pt, out)
    model = AutoModelForSequenceClassification.from_pretrained(out).double().eval()
    with torch.no_grad():
        logits = model(fixture["input_ids"]).logits
    assert (logits - fixture["expected_logits"]).abs().max().item() < 1e-6


def test_foreign_checkpoint_is_refused(fixture):
    with pytest.raises(KeyError, match="bert.embeddings"):
        rename_official({**fixture, "bert.embeddings.weight": torch.zeros(1)})
    with pytest.raises(KeyError, match="missing"):
        from_official({"dense_linear.weight": torch.zeros(4, 64)})


def test_convert_official_refuses_a_run_folder_a_pickle_and_a_link_and_writes_nothing(fixture, tmp_path):
    """convert-official never writes over a folder that holds something (a complete run), reads a pickle of other
    objects as the one line it is (weights_only: no code runs), and writes nothing through a link."""
    import argparse
    import hashlib

    from fastformer.cli.main import main

    source = tmp_path / "notebook.safetensors"
    source.write_bytes(FIXTURE.read_bytes())
    run = tmp_path / "run"
    assert main(["convert-official", str(source), str(run)]) == 0
    (run / "run_complete.json").write_text("{}")  # as a complete run has

    def snapshot():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in run.iterdir()}

    before = snapshot()
    pickle = tmp_path / "objects.pt"
    torch.save({"model": argparse.Namespace(a=1)}, pickle)  # an object weights_only refuses to rebuild
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    cases = [
        ([str(source), str(run)], "not empty; write into a new folder"),
        ([str(pickle), str(tmp_path / "new")], "not a plain state_dict of tensors"),
        ([str(source), str(link)], "is a symbolic link"),
    ]
    for argv, says in cases:
        with pytest.raises(SystemExit) as refused:
            main(["convert-official", *argv])
        assert says in str(refused.value.code) and "\n" not in str(refused.value.code), refused.value.code
    assert snapshot() == before and not (tmp_path / "new").exists() and not (tmp_path / "elsewhere").exists()
