"""The `fastformer` model type for Hugging Face transformers; importing this registers the Auto classes."""

from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.models.fastformer.modeling_fastformer import (
    FastformerForSequenceClassification,
    FastformerModel,
    FastformerPreTrainedModel,
)

AutoConfig.register("fastformer", FastformerConfig, exist_ok=True)
AutoModel.register(FastformerConfig, FastformerModel, exist_ok=True)
AutoModelForSequenceClassification.register(FastformerConfig, FastformerForSequenceClassification, exist_ok=True)

__all__ = ["FastformerConfig", "FastformerForSequenceClassification", "FastformerModel", "FastformerPreTrainedModel"]
