"""Pure-function ops: the Fastformer attention and its slow reference. Imports torch only."""

from fastformer.ops.causal import (
    CausalPoolState,
    causal_additive_pool,
    causal_fastformer_attention,
    causal_fastformer_step,
)
from fastformer.ops.fastformer_attention import (
    additive_pool,
    fastformer_attention,
    head_scores,
    masked_softmax,
)
from fastformer.ops.fused import fastformer_attention_fused
from fastformer.ops.fused_block import fastformer_block_fused
from fastformer.ops.naive import (
    causal_fastformer_attention_reference,
    fastformer_attention_reference,
    fastformer_block_reference,
)

__all__ = [
    "CausalPoolState",
    "causal_additive_pool",
    "causal_fastformer_attention",
    "causal_fastformer_attention_reference",
    "causal_fastformer_step",
    "additive_pool",
    "fastformer_attention",
    "fastformer_attention_fused",
    "fastformer_attention_reference",
    "fastformer_block_fused",
    "fastformer_block_reference",
    "head_scores",
    "masked_softmax",
]
