"""nn.Module layers: attention, feed-forward, layer, encoder, decoder, pooling. Imports torch only."""

from fastformer.layers.attention import FastformerAttention, PerHeadLinear
from fastformer.layers.decoder import CrossAttention, FastformerDecoder, FastformerDecoderLayer
from fastformer.layers.encoder import FastformerEncoder
from fastformer.layers.feed_forward import FeedForward
from fastformer.layers.layer import FastformerLayer
from fastformer.layers.pooling import AttentionPooling
from fastformer.layers.softmax_attention import SoftmaxAttention

__all__ = [
    "AttentionPooling",
    "CrossAttention",
    "FastformerDecoder",
    "FastformerDecoderLayer",
    "FastformerAttention",
    "FastformerEncoder",
    "FastformerLayer",
    "FeedForward",
    "PerHeadLinear",
    "SoftmaxAttention",
]
