"""fastformer: the Fastformer model (Wu et al., arXiv:2108.09084) as ops, layers and Hugging Face models.

The package is tiered: `fastformer.ops` and `fastformer.layers` need torch alone, `fastformer.models` needs
transformers. `import fastformer` itself imports nothing heavy: each public name is loaded from its tier on first use
(module `__getattr__`, in the spirit of transformers' own lazy module), so `import fastformer` and `fastformer --help`
stay fast and a torch-only install can still use the op and the layers.
"""

from __future__ import annotations

import importlib

from fastformer.version import __version__

# public name -> the module that defines it
_EXPORTS = {
    "AttentionPooling": "fastformer.layers",
    "FastformerAttention": "fastformer.layers",
    "FastformerEncoder": "fastformer.layers",
    "FastformerLayer": "fastformer.layers",
    "FeedForward": "fastformer.layers",
    "fastformer_attention": "fastformer.ops",
    "fastformer_attention_reference": "fastformer.ops",
    "count_parameters": "fastformer.parameters",
    "parameter_report": "fastformer.parameters",
    "PRESETS": "fastformer.presets",
    "build_encoder": "fastformer.presets",
    # the models need transformers; importing one registers them all with the Auto classes
    "FastformerConfig": "fastformer.models.fastformer",
    "FastformerForCausalLM": "fastformer.models.fastformer",
    "FastformerForConditionalGeneration": "fastformer.models.fastformer",
    "FastformerForMaskedLM": "fastformer.models.fastformer",
    "FastformerForNewsRecommendation": "fastformer.models.fastformer",
    "FastformerForSequenceClassification": "fastformer.models.fastformer",
    "FastformerModel": "fastformer.models.fastformer",
    # what a model read: per-word additive-attention weights, HTML pages and pictures
    "explain": "fastformer.interpret",
    "explain_user": "fastformer.interpret",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fastformer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
