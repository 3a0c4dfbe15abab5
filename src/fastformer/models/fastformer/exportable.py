"""The causal Fastformer LM as two `torch.export`-able programs with its decoding state as plain tensors.

A served language model needs what `generate()` does without Python objects crossing the program boundary: a
prefill program that reads the prompt and returns the state, and a decode program that reads one token per sequence
and the state and returns the next one. The Fastformer state has a fixed size, so both programs have fixed output
shapes whatever the context (a softmax model's exported decoder must instead take and return a key/value cache that
grows every step).

State layout (`state_names`): seen_tokens (B,) int64, the real tokens read per sequence (the next position under
left padding); then per depth `query_lse` (B, H), `query_global` (B, H, D), `key_lse` (B, H), `key_global` (B, H, D).

    prefill = torch.export.load("OUT/prefill.pt2").module()
    decode = torch.export.load("OUT/decode.pt2").module()
    logits, *state = prefill(input_ids, attention_mask)          # (B, vocab) at each row's last position
    for _ in range(max_new_tokens):
        token = logits.argmax(-1, keepdim=True)                    # (B, 1), or any sampling rule
        logits, *state = decode(token, *state)

`greedy_decode` below is that loop; it equals `model.generate(do_sample=False)` (tested).
"""

from __future__ import annotations

import torch
from torch import nn

from fastformer.models.fastformer.cache import FastformerCache
from fastformer.ops.causal import CausalPoolState


def state_names(num_layers: int) -> list[str]:
    """Names of the flat state tensors, in the programs' order."""
    return ["seen_tokens"] + [f"{name}_{depth}" for depth in range(num_layers) for name in CausalPoolState._fields]


def flatten_state(cache: FastformerCache) -> tuple[torch.Tensor, ...]:
    return (cache.seen_tokens, *(t for state in cache.states for t in state))


def unflatten_state(flat: tuple[torch.Tensor, ...], num_layers: int) -> FastformerCache:
    cache = FastformerCache(num_layers)
    cache.seen_tokens = flat[0]
    width = len(CausalPoolState._fields)
    for depth in range(num_layers):
        cache.states[depth] = CausalPoolState(*flat[1 + depth * width : 1 + (depth + 1) * width])
    return cache


class CausalLMPrefill(nn.Module):
    """(input_ids (B, N), attention_mask (B, N); left padding) -> (next-token logits (B, vocab), *state)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=True, logits_to_keep=1)
        return (out.logits[:, -1], *flatten_state(out.cache))


class CausalLMDecodeStep(nn.Module):
    """(input_ids (B, 1), *state) -> (next-token logits (B, vocab), *state after reading the token)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.num_layers = model.config.num_hidden_layers

    def forward(self, input_ids: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cache = unflatten_state(state, self.num_layers)
        out = self.model(input_ids=input_ids, cache=cache, use_cache=True)
        return (out.logits[:, -1], *flatten_state(out.cache))


def export_causal_lm(model: nn.Module, max_batch: int = 4096) -> tuple[torch.export.ExportedProgram, ...]:
    """(prefill, decode) programs of a FastformerForCausalLM, dynamic in batch and prompt length."""
    from torch.export import Dim

    model = model.eval()
    positions = model.config.max_position_embeddings
    batch, length = Dim("batch", min=1, max=max_batch), Dim("length", min=2, max=positions)
    ids = torch.ones(2, min(8, positions), dtype=torch.long)
    prefill_shapes = dict(input_ids={0: batch, 1: length}, attention_mask={0: batch, 1: length})
    with torch.no_grad():
        prefill = torch.export.export(
            CausalLMPrefill(model), (ids, torch.ones_like(ids)), dynamic_shapes=prefill_shapes
        )
        state = CausalLMPrefill(model)(ids, torch.ones_like(ids))[1:]
        # the state's other dimensions (heads, head size) are the model's, fixed
        decode_shapes = ({0: batch}, tuple({0: batch} for _ in state))
        decode = torch.export.export(CausalLMDecodeStep(model), (ids[:, :1], *state), dynamic_shapes=decode_shapes)
    return prefill, decode


@torch.no_grad()
def greedy_decode(prefill, decode, input_ids, attention_mask, max_new_tokens: int) -> torch.Tensor:
    """Greedy decoding with the two programs (or modules): (B, N + max_new_tokens), as generate() returns."""
    logits, *state = prefill(input_ids, attention_mask)
    tokens = [input_ids]
    for step in range(max_new_tokens):
        token = logits.argmax(-1, keepdim=True)
        tokens.append(token)
        if step + 1 < max_new_tokens:
            logits, *state = decode(token, *state)
    return torch.cat(tokens, dim=1)
