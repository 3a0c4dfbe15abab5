"""FastformerCache: the fixed-size decoding state of a causal Fastformer, as a transformers `Cache`.

Transformers (version 5) holds a recurrent model's state in a `Cache` of recurrent-state layers
(`LinearAttentionLayer`, as for Mamba and the gated-delta-net layers); FastformerCache is one of those, so
`generate()`, beam search, a returned cache passed back to `generate()` and code that inspects a cache
(`cache.layers[i].recurrent_states`, `cache.is_linear`, `reorder_cache`) work as with transformers' own models.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from transformers.cache_utils import Cache, LinearAttentionLayer
from transformers.generation import GenerationMode

from fastformer.ops.causal import CausalPoolState


def real_token_positions(real: torch.Tensor, before: torch.Tensor | None = None) -> torch.Tensor:
    """Position of every token (B, N): how many real tokens precede it (plus `before` (B,), those read earlier).

    Padding takes the position of the next real token (0 at the start), so left padding shifts nothing."""
    positions = real.long().cumsum(-1) - 1
    if before is not None:
        positions = positions + before[:, None]
    return positions.clamp_min(0)


class FastformerStateLayer(LinearAttentionLayer):
    """One depth's `CausalPoolState` as a transformers recurrent-state layer: its four tensors are recurrent states
    0-3 (query log-sum-exp (B, H), global query (B, H, D), key log-sum-exp, global key). No convolution state."""

    def __init__(self):
        super().__init__(number_of_states=len(CausalPoolState._fields))

    @property
    def state(self) -> CausalPoolState | None:
        if not all(self.has_previous_state.values()):
            return None
        return CausalPoolState(*(self.recurrent_states[i] for i in range(self.number_of_states)))

    @state.setter
    def state(self, state: CausalPoolState | None) -> None:
        for i in range(self.number_of_states):
            tensor = None if state is None else state[i]
            # assigned, not copied into a fixed buffer: beam search and a new batch change the batch size
            self.recurrent_states[i] = tensor
            self.is_recurrent_states_initialized[i] = self.has_previous_state[i] = tensor is not None
        if state is not None:
            self.device, self.dtype = state.query_global.device, state.query_global.dtype

    def map_rows(self, fn) -> None:
        """Apply `fn` (a tensor's rows -> other rows: reorder, repeat, select) to every tensor of the state."""
        if self.state is not None:
            self.state = CausalPoolState(*(fn(t) for t in self.state))

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.map_rows(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def reset(self) -> None:
        self.state = None


class _StatesView:
    """`cache.states[depth]` reads and `cache.states[depth] = state` writes that depth's layer: the list the encoder
    and decoder stacks (fastformer.layers, which import no transformers) update in place."""

    def __init__(self, layers: list[FastformerStateLayer]):
        self._layers = layers

    def __len__(self) -> int:
        return len(self._layers)

    def __getitem__(self, depth: int) -> CausalPoolState | None:
        return self._layers[depth].state

    def __setitem__(self, depth: int, state: CausalPoolState | None) -> None:
        self._layers[depth].state = state

    def __iter__(self) -> Iterator[CausalPoolState | None]:
        return (layer.state for layer in self._layers)


class FastformerCache(Cache):
    """What `generate()` carries from step to step for FastformerForCausalLM (and the Fastformer decoder).

    Per depth of the stack a `FastformerStateLayer` holding a `CausalPoolState` (two running log-sum-exps and two
    running means per head: 2 * num_heads * (head_size + 1) numbers per sequence); plus, per sequence, the number of
    real tokens read so far (the next token's position under left padding) and the number of columns read (padding
    included: what `get_seq_length` reports, as a key/value cache's length would). Its size does not grow with the
    context, unlike a softmax model's key/value cache.

    A cache returned by `generate(..., return_dict_in_generate=True)` continues generation when passed back with the
    whole sequence (`generate(out.sequences, cache=out.cache)`): the columns it has read are skipped.
    """

    def __init__(self, num_layers: int):
        super().__init__(layers=[FastformerStateLayer() for _ in range(num_layers)])
        self.seen_tokens: torch.Tensor | None = None  # (B,) long: real tokens read per sequence
        self.columns_read = 0  # columns of input read, padding included

    @property
    def states(self) -> _StatesView:
        return _StatesView(self.layers)

    @property
    def is_compileable(self) -> bool:  # the state is replaced, not written into fixed buffers
        return False

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.columns_read

    def advance(self, real: torch.Tensor) -> torch.Tensor:
        """Count the new tokens (real: (B, N) bool) and return their positions (B, N): real tokens read so far."""
        before = torch.zeros(real.shape[0], dtype=torch.long, device=real.device)
        if self.seen_tokens is not None:
            before = self.seen_tokens.to(real.device)
        self.seen_tokens = before + real.long().sum(-1)
        self.columns_read += real.shape[1]
        return real_token_positions(real, before)

    def map_rows(self, fn) -> None:
        """Apply `fn` (a tensor's rows -> other rows) to every per-sequence tensor: each depth's state, the counts."""
        for layer in self.layers:
            layer.map_rows(fn)
        if self.seen_tokens is not None:
            self.seen_tokens = fn(self.seen_tokens)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:  # beam search
        self.map_rows(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def batch_repeat_interleave(self, repeats: int) -> None:
        self.map_rows(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.map_rows(lambda t: t[indices])

    def reset(self) -> None:
        super().reset()
        self.seen_tokens, self.columns_read = None, 0

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError(
            "a Fastformer decoding state cannot be cropped: it keeps running sums, not the tokens (so assisted "
            "decoding, which rolls back rejected tokens, is not supported)"
        )

    def nbytes(self) -> int:
        """Bytes held by the state (what a key/value cache's size is compared with)."""
        tensors = [t for s in self.states if s is not None for t in s]
        if self.seen_tokens is not None:
            tensors.append(self.seen_tokens)
        return sum(t.numel() * t.element_size() for t in tensors)


def refuse_assisted_generation(model, generation_mode: GenerationMode) -> None:
    """Refuse assisted (speculative, prompt-lookup) decoding for a model that decodes with a FastformerCache.

    Assisted decoding rolls the cache back past the draft tokens the model rejects; a Fastformer state keeps running
    sums and cannot be rolled back. Transformers up to 5.24 refused it for every stateful model (`_is_stateful`);
    5.25 dropped that check for caches whose layers record past recurrent states, which ours do not, and fails
    later with "Assisted decoding requires a cache". The refusal is ours, so it reads the same on every version."""
    if generation_mode == GenerationMode.ASSISTED_GENERATION:
        raise ValueError(
            f"assisted generation is not supported with stateful models, such as {type(model).__name__}: its "
            "fixed-size Fastformer state keeps running sums, not the tokens, so it cannot roll back rejected draft "
            "tokens (use greedy, sampling or beam search)"
        )


def columns_to_read(
    input_ids: torch.Tensor, next_sequence_length: int | None, cache: Cache | None, mask: torch.Tensor | None
) -> int | None:
    """How many trailing columns of `input_ids` the model must read (None: all), for `prepare_inputs_for_generation`
    when `generate()` starts from a cache that has already read a prefix.

    transformers' convention for continuing from a cache: pass the whole sequence, or only the new tokens with an
    attention mask over the whole sequence. Up to version 5.24 it slices the read prefix off only for key/value caches
    and only when an attention mask of the input's length is given; it skips a recurrent cache (`cache.is_linear`)
    and a decoder without `decoder_attention_mask`, which then read the prefix twice, wrong with no error. Here the
    prefix is skipped for both. From 5.25 it slices for every cache, but an input with no column beyond the cache
    gives `input_ids[:, -0:]`, the whole sequence again: a Fastformer state given nothing new is refused either way."""
    if not isinstance(cache, Cache):
        return next_sequence_length
    read = cache.get_seq_length()
    if next_sequence_length is None:
        if not read or (mask is not None and mask.shape[-1] > input_ids.shape[-1]):
            return None  # a fresh cache, or only the new tokens were passed
        new = input_ids.shape[-1] - read
    else:
        new = next_sequence_length
    if new > 0:
        return new
    if read and isinstance(cache, FastformerCache):
        raise ValueError(
            f"the cache has read {read} columns and the input has {input_ids.shape[-1]}: pass the whole sequence so "
            "far plus at least one new token (a Fastformer state cannot be rolled back)"
        )
    return next_sequence_length  # a key/value cache and fewer columns than it holds: only the new tokens
