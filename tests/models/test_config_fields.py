"""The torch-free table of FastformerConfig's fields (fastformer/config_fields.py, read by `--model` checks before
transformers loads) is FastformerConfig's own: every field, every default, every argument of its constructor."""

import inspect

from fastformer.config_fields import CONFIG_DEFAULTS
from fastformer.models.fastformer import FastformerConfig

NOT_FIELDS = {"transformers_version", "_name_or_path"}  # written by transformers, not settings


def test_the_table_is_the_configs_fields_and_defaults():
    expected = {k: v for k, v in FastformerConfig().to_dict().items() if k not in NOT_FIELDS}
    assert CONFIG_DEFAULTS == expected
    arguments = set(inspect.signature(FastformerConfig.__init__).parameters) - {"self", "kwargs"}
    assert arguments <= set(CONFIG_DEFAULTS), arguments - set(CONFIG_DEFAULTS)
