"""transformers' own common model tests (`ModelTesterMixin` of tests/test_modeling_common.py, the version installed)
on the fastformer heads: the encoder heads, the causal language model and the encoder-decoder.

The test files are not in transformers' wheel; its source distribution has them. `.ci/run` downloads it once
(`pip download --no-deps --no-binary :all: transformers==VERSION`, 11 MB) into ~/.cache/fastformer/ (or the file that
FASTFORMER_TRANSFORMERS_SDIST names). Missing: a skip here, a failure where FASTFORMER_REQUIRE_TRANSFORMERS_TESTS=1
(CI). Raising the transformers bound in pyproject.toml runs these against the new release (CONTRIBUTING).

What differs from a test module inside transformers, and why:
- `GenerationTesterMixin` and `ExportTesterMixin` live in files the source distribution does not ship
  (tests/generation/, tests/exporters/): empty stand-ins here, and their inheritance check is not run. Generation
  is tested in tests/models/ (test_every_head.py, test_causal_lm.py, test_seq2seq.py, test_assisted_decoding.py),
  export in test_export.py.
- `has_attentions = False`: a Fastformer has no (N x N) attention maps; its additive weights, (B, H, N), come back
  as `additive_attentions` (tests/models/test_attention_weights.py).
- transformers finds a base model and the labels a head takes by name tables that list in-tree models only: the
  base model is added to the table for the duration of each test, and the labels are given here.
"""

from __future__ import annotations

import importlib
import os
import sys
import tarfile
import unittest
from pathlib import Path
from unittest import mock

import pytest
import torch
import transformers
from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

import fastformer.models  # noqa: F401  (registers the Auto classes)
from fastformer.models.fastformer import (
    FastformerConfig,
    FastformerForCausalLM,
    FastformerForConditionalGeneration,
    FastformerForMaskedLM,
    FastformerForSequenceClassification,
    FastformerModel,
)

SDIST = Path(
    os.environ.get("FASTFORMER_TRANSFORMERS_SDIST")
    or Path.home() / ".cache" / "fastformer" / f"transformers-{transformers.__version__}.tar.gz"
)
# the modules of transformers' tests/ that test_modeling_common.py imports but the source distribution lacks
STAND_INS = {
    "exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
    "generation/test_utils.py": "class GenerationTesterMixin:\n    pass\n",
    # only the keyword names matter to ConfigTester: each set to a value other than its default
    "utils/test_configuration_utils.py": "config_common_kwargs = {'return_dict': False, 'output_hidden_states': True, "
    "'chunk_size_feed_forward': 5, 'architectures': ['BertModel'], 'finetuning_task': 'translation', "
    "'id2label': {0: 'label'}, 'label2id': {'label': '0'}, 'problem_type': 'regression', 'pad_token_id': 7}\n",
}


def transformers_tests_package() -> str:
    """transformers' tests/ as an importable package (its modules import each other relatively), unpacked once
    beside the source distribution; the package's name."""
    if not SDIST.is_file():
        message = (
            f"{SDIST} is missing: pip download --no-deps --no-binary :all: transformers=={transformers.__version__} "
            f"-d {SDIST.parent} (transformers' common model tests are in its source distribution only)"
        )
        if os.environ.get("FASTFORMER_REQUIRE_TRANSFORMERS_TESTS") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)
    root = SDIST.parent / f"{SDIST.name.removesuffix('.tar.gz')}-tests"
    package = root / "transformers_tests"
    if not (package / "test_modeling_common.py").is_file():
        with tarfile.open(SDIST) as archive:
            for member in archive.getmembers():
                parts = Path(member.name).parts
                if parts[1:] in (("tests", "test_modeling_common.py"), ("tests", "test_configuration_common.py")):
                    (package / parts[-1]).parent.mkdir(parents=True, exist_ok=True)
                    data = archive.extractfile(member).read()
                    (package / f"{parts[-1]}.part").write_bytes(data)
                    (package / f"{parts[-1]}.part").replace(package / parts[-1])  # whole, or not there
        for name, text in STAND_INS.items():
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            (package / name).write_text(text)
        for folder in (package, *{(package / name).parent for name in STAND_INS}):
            (folder / "__init__.py").touch()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return package.name


PACKAGE = transformers_tests_package()
common = importlib.import_module(f"{PACKAGE}.test_modeling_common")
ConfigTester = importlib.import_module(f"{PACKAGE}.test_configuration_common").ConfigTester


class FastformerModelTester:
    """The sizes and inputs transformers' tests read (their names), for an encoder, causal or encoder-decoder."""

    base_model_class = FastformerModel

    def __init__(self, parent, batch_size=13, seq_length=7, causal=False, seq2seq=False):
        self.parent, self.batch_size, self.seq_length = parent, batch_size, seq_length
        self.causal, self.seq2seq, self.is_training = causal, seq2seq, True
        self.vocab_size, self.hidden_size, self.num_hidden_layers, self.num_attention_heads = 99, 32, 2, 4

    def get_config(self) -> FastformerConfig:
        decoder = dict(max_target_positions=16, decoder_layers=self.num_hidden_layers, is_encoder_decoder=True)
        return FastformerConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=37,
            max_position_embeddings=64,
            num_labels=3,
            causal=self.causal,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            decoder_start_token_id=1,
            **(decoder if self.seq2seq else {}),
        )

    def prepare_config_and_inputs_for_common(self):
        input_ids = common.ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        mask = common.random_attention_mask([self.batch_size, self.seq_length])
        if self.causal:  # a causal model is given left padding (generate's)
            mask = torch.flip(mask, [1])
        inputs = {"input_ids": input_ids, "attention_mask": mask}
        if self.seq2seq:
            inputs["decoder_input_ids"] = common.ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        return self.get_config(), inputs


class FastformerTestCase(common.ModelTesterMixin, unittest.TestCase):
    has_attentions = False  # additive weights (B, H, N), not (N x N) maps: see the module docstring
    test_generation_tester_mixin_inheritance = None  # the generation mixin is not in the source distribution
    model_tester_settings: dict = {}

    def setUp(self):
        self.model_tester = FastformerModelTester(self, **self.model_tester_settings)
        table = mock.patch.dict(MODEL_MAPPING_NAMES, {"fastformer": "FastformerModel"})
        table.start()
        self.addCleanup(table.stop)

    def _prepare_for_class(self, inputs_dict, model_class, return_labels=False):
        inputs = super()._prepare_for_class(inputs_dict, model_class, return_labels)
        if return_labels and model_class is FastformerForSequenceClassification:
            inputs["labels"] = torch.zeros(self.model_tester.batch_size, dtype=torch.long)
        elif return_labels and model_class in (FastformerForMaskedLM, FastformerForCausalLM):
            inputs["labels"] = inputs["input_ids"].clone()
        elif return_labels and model_class is FastformerForConditionalGeneration:
            inputs["labels"] = inputs["decoder_input_ids"].clone()
        return inputs


class FastformerEncoderTest(FastformerTestCase):
    all_model_classes = (FastformerModel, FastformerForSequenceClassification, FastformerForMaskedLM)

    def test_config(self):
        ConfigTester(self, config_class=FastformerConfig, hidden_size=37).run_common_tests()


class FastformerCausalLMTest(FastformerTestCase):
    all_model_classes = (FastformerForCausalLM,)
    model_tester_settings = dict(causal=True)


class FastformerSeq2SeqTest(FastformerTestCase):
    all_model_classes = (FastformerForConditionalGeneration,)
    is_encoder_decoder = True
    model_tester_settings = dict(seq2seq=True)


del FastformerTestCase  # a base, not a test of its own
