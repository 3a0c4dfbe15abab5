"""The causal Fastformer LM, and the summarizer with the Fastformer decoder, as `torch.export`-able programs with
their decoding state as plain tensors.

A served language model needs what `generate()` does without Python objects crossing the program boundary: a
prefill program that reads the prompt and returns the state, and a decode program that reads one token per sequence
and the state and returns the next one. The Fastformer state has a fixed size, so both programs have fixed output
shapes whatever the context (a softmax model's exported decoder must instead take and return a key/value cache that
grows every step).

State layout (`state_names`): seen_tokens (B,) int64, the real tokens read per sequence (the next position under
left padding); then per depth the fields of the mixer's decoding state, for the Fastformer `query_lse` (B, H),
`query_global` (B, H, D), `key_lse` (B, H), `key_global` (B, H, D), and with local mixing the convolutions' last
inputs `conv_tails_I` (B, kernel - 1, hidden), 2 (q, k; v shares q's) or 3 of them. The layout is read from a state
the model makes (`template_cache`), so another mixer's state exports the same way.

    prefill = torch.export.load("OUT/prefill.pt2").module()
    decode = torch.export.load("OUT/decode.pt2").module()
    logits, *state = prefill(input_ids, attention_mask)          # (B, vocab) at each row's last position
    for _ in range(max_new_tokens):
        token = logits.argmax(-1, keepdim=True)                    # (B, 1), or any sampling rule
        logits, *state = decode(token, *state)

`greedy_decode` below is that loop; it equals `model.generate(do_sample=False)` (tested).

The summarizer (FastformerForConditionalGeneration, `decoder_type="fastformer"`): its prefill reads the document,
starts the summary with `decoder_start_token_id` and returns the first token's logits, every decoder layer's
cross-attention keys and values of the document (2 per layer, (B, H, N, D): computed once) and the state; its decode
step takes the token, the document's attention mask, those keys and values and the state. `greedy_summarize` is the
loop. (The Transformer decoder's key/value cache grows every step; its teacher-forced program exports, its decoding
loop does not, here.)
"""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree  # torch's tree API: a state's structure, whatever the mixer's state type
from torch import nn

from fastformer.models.fastformer.cache import FastformerCache, state_tensors
from fastformer.models.fastformer.modeling_seq2seq import FastformerSeq2SeqCache


def state_layout(cache: FastformerCache) -> list[tuple[pytree.TreeSpec, tuple[bool, ...]] | None]:
    """Per depth, the structure of its state and which of its leaves are tensors (the others are None: no local
    mixing, say), or None where nothing was read: what `unflatten_state` rebuilds the flat tensors into. Taken from
    a cache the model filled (`template_cache`), so it is the mixer's own."""
    layout = []
    for state in cache.states:
        leaves, spec = pytree.tree_flatten(state)
        layout.append(None if state is None else (spec, tuple(leaf is not None for leaf in leaves)))
    return layout


def state_names(cache: FastformerCache) -> list[str]:
    """Names of the flat state tensors, in the programs' order: `seen_tokens`, then per depth each field of its state
    (`query_lse_0`, ...; the tensors of a tuple field numbered: `conv_tails_1_0`)."""
    names = ["seen_tokens"]
    for depth, state in enumerate(cache.states):
        for field, value in ({} if state is None else state._asdict()).items():
            if isinstance(value, torch.Tensor):
                names.append(f"{field}_{depth}")
            elif value is not None:
                names.extend(f"{field}_{i}_{depth}" for i in range(len(value)))
    return names


def summarizer_state_names(cache: FastformerCache) -> list[str]:
    """Names of what the summarizer's prefill returns after the logits: the source's cross-attention keys and values
    per decoder layer, then the decoder's state (`state_names`)."""
    memory = [f"memory_{kind}_{depth}" for depth in range(len(cache.states)) for kind in "kv"]
    return memory + state_names(cache)


def flatten_state(cache: FastformerCache) -> tuple[torch.Tensor, ...]:
    return (cache.seen_tokens, *(t for state in cache.states for t in state_tensors(state)))


def unflatten_state(flat: tuple[torch.Tensor, ...], layout: list, cache: FastformerCache) -> FastformerCache:
    """`cache` holding the flat tensors (`flatten_state`'s order) as states of the structure `layout` says."""
    cache.seen_tokens, tensors = flat[0], iter(flat[1:])
    for depth, structure in enumerate(layout):
        if structure is not None:
            spec, present = structure
            cache.states[depth] = pytree.tree_unflatten([next(tensors) if p else None for p in present], spec)
    return cache


@torch.no_grad()
def template_cache(model: nn.Module) -> FastformerCache:
    """The state after one real token (of a causal LM, or of the summarizer's Fastformer decoder after reading one
    source token): its layout and names are those of every state the model makes."""
    one = torch.ones(1, 1, dtype=torch.long, device=model.device)
    if hasattr(model, "decoder"):
        start = torch.full_like(one, model.config.decoder_start_token_id)
        return model(input_ids=one, attention_mask=one, decoder_input_ids=start, use_cache=True).cache
    return model(input_ids=one, use_cache=True).cache


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
        self.num_layers, self.layout = model.config.num_hidden_layers, state_layout(template_cache(model))

    def forward(self, input_ids: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cache = unflatten_state(state, self.layout, FastformerCache(self.num_layers))
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


class Seq2SeqPrefill(nn.Module):
    """(input_ids (B, N), attention_mask (B, N)) -> (first summary token's logits (B, vocab), *memory keys / values
    (2 per decoder layer), *state), for a summarizer with the Fastformer decoder."""

    def __init__(self, model: nn.Module):
        super().__init__()
        if not model._fastformer_decoder:
            raise ValueError("generate-ready programs need decoder_type='fastformer' (a fixed-size decoding state)")
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        start = torch.full_like(input_ids[:, :1], self.model.config.decoder_start_token_id)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=start, use_cache=True)
        memory = tuple(t for pair in out.cache.memory_kv for t in pair)
        return (out.logits[:, -1], *memory, *flatten_state(out.cache))


class Seq2SeqDecodeStep(nn.Module):
    """(input_ids (B, 1), attention_mask (B, N) of the document, *memory keys / values, *state) -> (next-token
    logits (B, vocab), *state after reading the token)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.num_layers, self.layout = model.decoder.num_layers, state_layout(template_cache(model))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *rest: torch.Tensor):
        memory, state = rest[: 2 * self.num_layers], rest[2 * self.num_layers :]
        cache = unflatten_state(state, self.layout, FastformerSeq2SeqCache(self.num_layers))
        cache.memory_kv = [(memory[2 * i], memory[2 * i + 1]) for i in range(self.num_layers)]
        embeds = self.model.get_input_embeddings()(input_ids)  # (B, 1, hidden)
        hidden, cache = self.model._decode_fastformer(embeds, None, attention_mask, cache, use_cache=True)
        return (self.model.lm_head(hidden)[:, -1], *flatten_state(cache))


def export_summarizer(model: nn.Module, max_batch: int = 4096) -> tuple[torch.export.ExportedProgram, ...]:
    """(prefill, decode) programs of a FastformerForConditionalGeneration with the Fastformer decoder, dynamic in
    batch and document length."""
    from torch.export import Dim

    model = model.eval()
    positions = model.config.max_position_embeddings
    batch, length = Dim("batch", min=1, max=max_batch), Dim("length", min=2, max=positions)
    ids = torch.ones(2, min(8, positions), dtype=torch.long)
    with torch.no_grad():
        prefill_module = Seq2SeqPrefill(model)
        prefill = torch.export.export(
            prefill_module,
            (ids, torch.ones_like(ids)),
            dynamic_shapes=dict(input_ids={0: batch, 1: length}, attention_mask={0: batch, 1: length}),
        )
        rest = prefill_module(ids, torch.ones_like(ids))[1:]
        layers = model.decoder.num_layers
        rest_shapes = tuple({0: batch, 2: length} if i < 2 * layers else {0: batch} for i in range(len(rest)))
        decode = torch.export.export(
            Seq2SeqDecodeStep(model),
            (ids[:, :1], torch.ones_like(ids), *rest),
            dynamic_shapes=({0: batch}, {0: batch, 1: length}, rest_shapes),
        )
    return prefill, decode


@torch.no_grad()
def greedy_summarize(prefill, decode, input_ids, attention_mask, max_new_tokens: int, start_token: int):
    """Greedy decoding with the summarizer's two programs: (B, 1 + max_new_tokens), as generate() returns."""
    logits, *memory_and_state = prefill(input_ids, attention_mask)
    tokens = [torch.full_like(input_ids[:, :1], start_token)]
    for step in range(max_new_tokens):
        token = logits.argmax(-1, keepdim=True)
        tokens.append(token)
        if step + 1 < max_new_tokens:
            logits, *state = decode(token, attention_mask, *memory_and_state)
            # the document's keys and values stay; the state after them is replaced (the step returns only it)
            memory_and_state = [*memory_and_state[: len(memory_and_state) - len(state)], *state]
    return torch.cat(tokens, dim=1)
