"""fastformer: the Fastformer model (Wu et al., arXiv:2108.09084) as ops, layers and Hugging Face models.

`import fastformer` gives the op and the layers (torch only) and, where transformers is installed, the models,
registered with the Auto classes.
"""

from importlib.util import find_spec

from fastformer.layers import (
    AttentionPooling,
    FastformerAttention,
    FastformerEncoder,
    FastformerLayer,
    FeedForward,
)
from fastformer.ops import fastformer_attention, fastformer_attention_reference
from fastformer.parameters import count_parameters, parameter_report
from fastformer.presets import PRESETS, build_encoder

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "AttentionPooling",
    "FastformerAttention",
    "FastformerEncoder",
    "FastformerLayer",
    "FeedForward",
    "build_encoder",
    "count_parameters",
    "fastformer_attention",
    "fastformer_attention_reference",
    "parameter_report",
]

if find_spec("transformers") is not None:  # the models need it; the op and layers do not
    from fastformer.models.fastformer import (  # noqa: F401  (import registers the Auto classes)
        FastformerConfig,
        FastformerForSequenceClassification,
        FastformerModel,
    )

    __all__ += ["FastformerConfig", "FastformerForSequenceClassification", "FastformerModel"]
