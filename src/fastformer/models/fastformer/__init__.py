"""The `fastformer` model type for Hugging Face transformers; importing this registers the Auto classes."""

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForPreTraining,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
)

from fastformer.models.fastformer.cache import FastformerCache
from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.models.fastformer.modeling_fastformer import (
    FastformerForCausalLM,
    FastformerForSequenceClassification,
    FastformerModel,
    FastformerPreTrainedModel,
)
from fastformer.models.fastformer.modeling_masked_lm import FastformerForMaskedLM, FastformerMaskedLMOutput
from fastformer.models.fastformer.modeling_news import FastformerForNewsRecommendation, NewsRecommendationOutput
from fastformer.models.fastformer.modeling_replaced_token_detection import (
    FastformerForReplacedTokenDetection,
    ReplacedTokenDetectionOutput,
)
from fastformer.models.fastformer.modeling_seq2seq import FastformerForConditionalGeneration

AutoConfig.register("fastformer", FastformerConfig, exist_ok=True)
AutoModel.register(FastformerConfig, FastformerModel, exist_ok=True)
AutoModelForSequenceClassification.register(FastformerConfig, FastformerForSequenceClassification, exist_ok=True)
AutoModelForCausalLM.register(FastformerConfig, FastformerForCausalLM, exist_ok=True)
AutoModelForMaskedLM.register(FastformerConfig, FastformerForMaskedLM, exist_ok=True)
AutoModelForPreTraining.register(FastformerConfig, FastformerForReplacedTokenDetection, exist_ok=True)
AutoModelForSeq2SeqLM.register(FastformerConfig, FastformerForConditionalGeneration, exist_ok=True)

__all__ = [
    "FastformerCache",
    "FastformerConfig",
    "FastformerForCausalLM",
    "FastformerForConditionalGeneration",
    "FastformerForMaskedLM",
    "FastformerMaskedLMOutput",
    "FastformerForNewsRecommendation",
    "FastformerForReplacedTokenDetection",
    "FastformerForSequenceClassification",
    "FastformerModel",
    "FastformerPreTrainedModel",
    "NewsRecommendationOutput",
    "ReplacedTokenDetectionOutput",
]
