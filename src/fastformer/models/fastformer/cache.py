"""FastformerCache: the fixed-size decoding state of a causal Fastformer, as a transformers `Cache`.

Transformers (version 5) holds a recurrent model's state in a `Cache` of recurrent-state layers
(`LinearAttentionLayer`, as for Mamba and the gated-delta-net layers); FastformerCache is one of those, so
`generate()`, beam search, a returned cache passed back to `generate()` and code that inspects a cache
(`cache.layers[i].recurrent_states`, `cache.is_linear`, `reorder_cache`) work as with transformers' own models.
Assisted decoding (an assistant model, prompt lookup; transformers >= 5.25) rolls the state back with `crop`.
It is also a registered pytree (`register_decoding_state`): `torch.export` takes a cache as a program's input and
returns it as its output, each depth's tensors named (`cache_states_0_query_lse`, ...).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import NamedTuple

import torch
import torch.utils._pytree as pytree  # torch's registration API for types that torch.export flattens
from transformers.cache_utils import Cache, LinearAttentionLayer
from transformers.generation import GenerationMode

from fastformer.layers.mixers import DecodingState, state_class, state_class_name


def real_token_positions(real: torch.Tensor, before: torch.Tensor | None = None) -> torch.Tensor:
    """Position of every token (B, N): how many real tokens precede it (plus `before` (B,), those read earlier).

    Padding takes the position of the next real token (0 at the start), so left padding shifts nothing."""
    positions = real.long().cumsum(-1) - 1
    if before is not None:
        positions = positions + before[:, None]
    return positions.clamp_min(0)


def map_state_rows(state: DecodingState | None, fn) -> DecodingState | None:
    """Apply `fn` (a tensor's rows -> other rows: reorder, repeat, select) to every tensor of a state."""
    return None if state is None else pytree.tree_map(lambda t: None if t is None else fn(t), state)


def state_tensors(state: DecodingState | None) -> list[torch.Tensor]:
    """Every tensor of a depth's state, in its fields' order (none for None; a field that is None has none)."""
    return [] if state is None else [t for t in pytree.tree_leaves(state) if t is not None]


_ALLOWED_STATES: set[type] = set()


def allow_in_saved_programs(state_type: type) -> None:
    """A saved program keeps its example inputs, a cache among them, and torch.export.load reads them with torch.load's
    weights_only unpickler, which takes only allowed classes: a decoding state holds tensors, no code."""
    if state_type not in _ALLOWED_STATES:
        torch.serialization.add_safe_globals([state_type])
        _ALLOWED_STATES.add(state_type)


class FastformerStateLayer(LinearAttentionLayer):
    """One depth's decoding state as a transformers recurrent-state layer: the state object the mixer returns
    (`layers/mixers.py`'s `DecodingState`: a `CausalPoolState` for the Fastformer), and its tensors as the recurrent
    states 0, 1, ... in its fields' order, for code that inspects a cache as transformers' own (for the Fastformer:
    query log-sum-exp (B, H), global query (B, H, D), key log-sum-exp, global key, then with local mixing the
    convolutions' last inputs). The state is replaced on every step, never written into fixed buffers in place:
    beam search and a new batch change the batch size."""

    def __init__(self):
        super().__init__()
        self.state = None  # the setter lays out the recurrent states, as after `reset`

    @property
    def state(self) -> DecodingState | None:
        return self._state

    @state.setter
    def state(self, state: DecodingState | None) -> None:
        if state is not None:
            allow_in_saved_programs(type(state))
        self._state = state
        tensors = state_tensors(state)
        self.number_of_states = max(len(tensors), 1)
        for name in ("recurrent_states", "is_recurrent_states_initialized", "has_previous_state"):
            setattr(self, name, {})
        for i in range(self.number_of_states):
            tensor = tensors[i] if i < len(tensors) else None
            self.recurrent_states[i] = tensor
            self.is_recurrent_states_initialized[i] = self.has_previous_state[i] = tensor is not None
        if tensors:
            self.device, self.dtype = tensors[0].device, tensors[0].dtype

    def map_rows(self, fn) -> None:
        """Apply `fn` (a tensor's rows -> other rows: reorder, repeat, select) to every tensor of the state."""
        self.state = map_state_rows(self.state, fn)

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

    def __getitem__(self, depth: int) -> DecodingState | None:
        return self._layers[depth].state

    def __setitem__(self, depth: int, state: DecodingState | None) -> None:
        self._layers[depth].state = state

    def __iter__(self) -> Iterator[DecodingState | None]:
        return (layer.state for layer in self._layers)


class _Start(NamedTuple):
    """What a FastformerCache held when a forward began: where `crop` can roll back to."""

    columns_read: int
    seen_tokens: torch.Tensor | None
    states: tuple[DecodingState | None, ...]

    def map_rows(self, fn) -> _Start:
        seen = None if self.seen_tokens is None else fn(self.seen_tokens)
        return _Start(self.columns_read, seen, tuple(map_state_rows(state, fn) for state in self.states))


class FastformerCache(Cache):
    """What `generate()` carries from step to step for FastformerForCausalLM (and the Fastformer decoder).

    Per depth of the stack a `FastformerStateLayer` holding a `CausalPoolState` (two running log-sum-exps and two
    running means per head: 2 * num_heads * (head_size + 1) numbers per sequence); plus, per sequence, the number of
    real tokens read so far (the next token's position under left padding) and the number of columns read (padding
    included: what `get_seq_length` reports, as a key/value cache's length would). Its size does not grow with the
    context, unlike a softmax model's key/value cache.

    A cache returned by `generate(..., return_dict_in_generate=True)` continues generation when passed back with the
    whole sequence (`generate(out.sequences, cache=out.cache)`): the columns it has read are skipped.

    Rolling back (assisted decoding drops the draft tokens the model rejects): running sums cannot subtract a token,
    so once `activate_past_recording()` is called the cache keeps, before each forward, a reference to the state it
    started from (a few KiB; the state is replaced, never written in place). `crop` goes back to the latest of those
    at or before the wanted length and reports the length it really holds (`get_seq_length`); the next call reads
    the columns after it again (`columns_to_read`), in two forwards split at the wanted length
    (`columns_behind`), so that the next rollback can stop there: exact, at the cost of re-reading the tokens a
    draft got accepted, once.
    """

    def __init__(self, num_layers: int):
        super().__init__(layers=[FastformerStateLayer() for _ in range(num_layers)])
        self.seen_tokens: torch.Tensor | None = None  # (B,) long: real tokens read per sequence
        self.columns_read = 0  # columns of input read, padding included
        self.recording = False  # keep the start of each forward, so that `crop` can roll back
        self._starts: list[_Start] = []  # since the last crop, oldest first
        self._asked: int | None = None  # the length `crop` was asked for, when it had to go back further

    @property
    def states(self) -> _StatesView:
        return _StatesView(self.layers)

    @property
    def is_compileable(self) -> bool:  # the state is replaced, not written into fixed buffers
        return False

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.columns_read

    def advance(self, real: torch.Tensor) -> torch.Tensor:
        """Count the new tokens (real: (B, N) bool) and return their positions (B, N): real tokens read so far.

        Called once at the start of every forward that reads into this cache (before any depth's state changes)."""
        if self.recording:
            self._starts.append(_Start(self.columns_read, self.seen_tokens, tuple(self.states)))
        before = torch.zeros(real.shape[0], dtype=torch.long, device=real.device)
        if self.seen_tokens is not None:
            before = self.seen_tokens.to(real.device)
        self.seen_tokens = before + real.long().sum(-1)
        self.columns_read += real.shape[1]
        if self._asked is not None and self.columns_read >= self._asked:
            self._asked = None
        return real_token_positions(real, before)

    def columns_behind(self) -> int:
        """Columns between what the cache holds after a rollback and the length `crop` was asked for (0: none).
        A forward reads these first, on their own, so that its recorded start lies where the caller believes the
        cache is."""
        return 0 if self._asked is None else self._asked - self.columns_read

    def map_rows(self, fn) -> None:
        """Apply `fn` (a tensor's rows -> other rows) to every per-sequence tensor: each depth's state, the counts."""
        for layer in self.layers:
            layer.map_rows(fn)
        if self.seen_tokens is not None:
            self.seen_tokens = fn(self.seen_tokens)
        self._starts = [start.map_rows(fn) for start in self._starts]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:  # beam search
        self.map_rows(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def batch_repeat_interleave(self, repeats: int) -> None:
        self.map_rows(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.map_rows(lambda t: t[indices])

    def reset(self) -> None:
        super().reset()
        self.seen_tokens, self.columns_read = None, 0
        self.recording, self._starts, self._asked = False, [], None

    def activate_past_recording(self, **kwargs) -> None:
        """Keep what `crop` needs to roll back (transformers calls this before assisted decoding; its
        `recurrent_states_to_keep` is not needed: a start is kept per forward, however many tokens it reads)."""
        self.recording = True

    @property
    def is_croppable(self) -> bool:
        return self.recording

    def crop(self, tokens_to_remove: int) -> None:
        """Go back `-tokens_to_remove` columns (transformers >= 5.25; a positive value is the length to keep, as
        before): to the latest recorded start at or before that length. `crop(0)` forgets the recorded starts."""
        believed = self.columns_read + self.columns_behind()  # what the caller counts (it does not see a rollback)
        target = believed + tokens_to_remove if tokens_to_remove <= 0 else tokens_to_remove
        self._asked = None
        if target < self.columns_read:
            earlier = [start for start in self._starts if start.columns_read <= target]
            if not earlier:
                raise NotImplementedError(
                    f"a Fastformer decoding state cannot be cropped to {target} of its {self.columns_read} columns: it "
                    "keeps running sums, not the tokens, and rolls back only to the start of a forward made after "
                    "`activate_past_recording()` (as assisted decoding does)"
                )
            start = earlier[-1]
            self.columns_read, self.seen_tokens = start.columns_read, start.seen_tokens
            for depth, state in enumerate(start.states):
                self.states[depth] = state
        if target > self.columns_read:
            self._asked = target
        self._starts = []

    def nbytes(self) -> int:
        """Bytes held by the state (what a key/value cache's size is compared with)."""
        tensors = [t for state in self.states for t in state_tensors(state)]
        if self.seen_tokens is not None:
            tensors.append(self.seen_tokens)
        return sum(t.numel() * t.element_size() for t in tensors)


def register_decoding_state(cls: type[FastformerCache], extra: tuple[str, ...] = ()) -> None:
    """Register `cls` as a pytree, so that `torch.export` takes a cache as a program's input and returns one as its
    output: its leaves are `seen_tokens` (B,), each depth's state (its fields' tensors; None before the first token)
    and the attributes named in `extra` (the seq2seq cache's `memory_kv`); the tree's context is each depth's state
    class, by name (`layers.mixers.state_class`: only the mixers' own). Not carried: the count of columns read
    (padding included) and the starts kept for a rollback, which serve `generate()`'s bookkeeping: a cache rebuilt
    from its leaves counts columns from 0 and has no rollback record. A program saved with `torch.export.save` loads
    (`torch.export.load`) where fastformer is imported."""
    fields = ("seen_tokens", "states", *extra)

    def children(cache: FastformerCache) -> list:
        # each depth's state as a dict (its fields name the program's inputs; a dict needs no registration to save)
        states = [None if state is None else state._asdict() for state in cache.states]
        return [cache.seen_tokens, states, *(getattr(cache, name) for name in extra)]

    def context(cache: FastformerCache) -> tuple[str | None, ...]:
        return tuple(None if state is None else state_class_name(type(state)) for state in cache.states)

    def unflatten(values, classes: tuple[str | None, ...]) -> FastformerCache:
        cache = cls(len(classes))
        cache.seen_tokens = values[0]
        for depth, (state, name) in enumerate(zip(values[1], classes, strict=True)):
            cache.states[depth] = None if state is None else state_class(name)(**state)
        for name, value in zip(extra, values[2:], strict=True):
            setattr(cache, name, value)
        return cache

    for allowed in (cls, FastformerStateLayer):  # they hold tensors and counts (`allow_in_saved_programs`)
        allow_in_saved_programs(allowed)
    pytree.register_pytree_node(
        cls,
        lambda cache: (children(cache), context(cache)),
        unflatten,
        serialized_type_name=f"{cls.__module__}.{cls.__qualname__}",
        to_dumpable_context=lambda classes: json.dumps(list(classes)),  # a saved program's tree, as JSON
        from_dumpable_context=lambda text: tuple(json.loads(text)),
        flatten_with_keys_fn=lambda cache: (
            [(pytree.GetAttrKey(name), child) for name, child in zip(fields, children(cache), strict=True)],
            context(cache),
        ),
    )


register_decoding_state(FastformerCache)


def check_assisted_generation(model, generation_mode: GenerationMode, keeps_state: bool) -> None:
    """Refuse assisted (speculative, prompt-lookup) decoding, in one line, for a model with no decoding state (the
    causal softmax control: transformers needs a cache to roll back, and it keeps none). A FastformerCache takes it:
    `crop` rolls it back past the draft tokens the model rejects."""
    if generation_mode == GenerationMode.ASSISTED_GENERATION and not keeps_state:
        raise ValueError(
            f"assisted generation needs a decoding state to roll back, and this {type(model).__name__} keeps none "
            f"(a causal {model.config.attention_type} model reads the whole prefix at every step): use greedy, "
            "sampling or beam search"
        )


def needs_recording_cache(generation_config, model_kwargs: dict, generation_mode: GenerationMode) -> bool:
    """Whether `generate()` must start from a FastformerCache that records where each forward began (so `crop` can
    roll back): assisted decoding, where this model checks a draft, or this model drafting for another one
    (`is_assistant`); not when the caller passed a cache (transformers activates its recording) or turned caching off.
    Every other call keeps the cache that the first forward makes."""
    if model_kwargs.get("cache") is not None or generation_config.use_cache is False:
        return False
    return generation_mode == GenerationMode.ASSISTED_GENERATION or bool(generation_config.is_assistant)


def columns_to_read(
    input_ids: torch.Tensor, next_sequence_length: int | None, cache: Cache | None, mask: torch.Tensor | None
) -> int | None:
    """How many trailing columns of `input_ids` the model must read (None: all), for `prepare_inputs_for_generation`
    when `generate()` starts from a cache that has already read a prefix.

    transformers' convention for continuing from a cache: pass the whole sequence, or only the new tokens with an
    attention mask over the whole sequence. Given the whole sequence, a FastformerCache's columns are counted here,
    from what it has read: transformers up to 5.24 sliced only key/value caches (a recurrent state read the prefix
    twice, wrong with no error); 5.25 slices every cache but, with no column beyond it, asks for `input_ids[:, -0:]`
    (all of it again); and after an assisted-decoding `crop` the state may hold fewer columns than transformers
    counts (it rolls back to the start of a forward). A key/value cache keeps transformers' count; without one, its
    prefix is skipped only when no mask is given (a decoder without `decoder_attention_mask`)."""
    if not isinstance(cache, Cache):
        return next_sequence_length
    read = cache.get_seq_length()
    only_new = mask is not None and mask.shape[-1] > input_ids.shape[-1]
    if isinstance(cache, FastformerCache):
        if not read:
            return None  # a fresh state (or one rolled back to the start): all of it
        if only_new:
            return next_sequence_length  # all of them (transformers' count in the later steps)
        new = input_ids.shape[-1] - read
        if new <= 0:
            raise ValueError(
                f"the cache has read {read} columns and the input has {input_ids.shape[-1]}: pass the whole sequence "
                "so far plus at least one new token (a Fastformer state keeps running sums, not the tokens)"
            )
        return new
    if next_sequence_length is not None or not read or only_new:
        return next_sequence_length
    new = input_ids.shape[-1] - read
    return new if new > 0 else None  # a key/value cache and fewer columns than it holds: only the new tokens
