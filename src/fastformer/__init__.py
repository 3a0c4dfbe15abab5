"""fastformer: the Fastformer model (Wu et al., arXiv:2108.09084) as ops, layers and Hugging Face models.

`import fastformer` gives the op and the layers (torch only) and, where transformers is installed, the models,
registered with the Auto classes.
"""

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

try:  # the models need transformers; the op and the layers do not
    import transformers  # noqa: F401
except ModuleNotFoundError as missing:
    if missing.name != "transformers":
        raise
else:
    from fastformer.models.fastformer import (  # noqa: F401  (import registers the Auto classes)
        FastformerConfig,
        FastformerForCausalLM,
        FastformerForConditionalGeneration,
        FastformerForNewsRecommendation,
        FastformerForSequenceClassification,
        FastformerModel,
    )

    __all__ += [
        "FastformerConfig",
        "FastformerForCausalLM",
        "FastformerForConditionalGeneration",
        "FastformerForNewsRecommendation",
        "FastformerForSequenceClassification",
        "FastformerModel",
    ]
