"""FastformerConfig: one config for every Fastformer task head."""

from __future__ import annotations

from transformers import PreTrainedConfig

from fastformer.layers.mixers import MIXERS
from fastformer.presets import PRESETS


class FastformerConfig(PreTrainedConfig):
    r"""Configuration of a Fastformer model. The defaults are the paper's final model (`PRESETS["paper"]`).

    Sizes (conventional Hugging Face names): vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
    intermediate_size, hidden_act, hidden_dropout_prob, max_position_embeddings, layer_norm_eps,
    initializer_range, pad_token_id, classifier_dropout (the notebook applies none before its classifier),
    use_cache (decoders: a forward without labels returns the decoding state, as transformers' models do).
    fastformer_implementation ("auto": the fastest path the attention's configuration allows; "fused_block",
    "fused" or "eager" to choose one, e.g. "eager" to compare against the plain-autograd op).
    embedding_size (None: hidden_size; smaller: a factorised embedding, (vocab, embedding_size) word vectors and a
    Linear(embedding_size, hidden_size) projection, as ALBERT and ELECTRA, e.g. for 50-d or 300-d GloVe vectors).

    Variant switches (see `fastformer.layers.FastformerAttention`):
        query_value_sharing (bool), head_sharing (bool), layer_sharing (bool),
        interaction ("product" | "add" | "concat"), scoring ("per_head" | "full"), transform ("full" | "per_head"),
        attention_output_dense (bool: the notebook's extra dense after the attention), query_residual (bool: the
        block's output is transform(u) + q, as the paper; False: transform(u) alone, as models converted from BERT),
        local_mixing (0, or an odd kernel: a depthwise convolution over neighbouring tokens on q, k and v, identity at
        initialisation; not in the paper; bidirectional models),
        norm_position ("post" | "pre"), position_embedding_type ("absolute" | "none"),
        embedding_layer_norm (bool), causal (bool: each token attends to itself and earlier tokens only; set by
        FastformerForCausalLM), attention_type ("fastformer" | "softmax": the paper's Transformer baseline, the
        same model with multi-head softmax attention as its token mixer).

    News recommendation (FastformerForNewsRecommendation; the sizes above are the news encoder's):
        user_num_hidden_layers (layers of the user encoder over clicked news vectors), max_history (clicked news
        the user encoder reads, the most recent ones), user_position_embedding_type ("absolute": learned positions
        over the history, oldest first | "none"), popularity_buckets (0: the paper's score, user . news; N > 0:
        plus a learned popularity score of each candidate, one per bucket of its click count, floor(log2(1 + clicks))
        capped at N - 1, as PP-Rec (Qi et al., 2021) adds news popularity to the personal score).

    Sequence to sequence (FastformerForConditionalGeneration; the sizes above are the encoder's): decoder_layers,
        decoder_attention_heads (None: num_attention_heads), decoder_ffn_dim (None: intermediate_size),
        max_target_positions, decoder_type ("transformer": transformers' BartDecoder | "fastformer": a causal
        Fastformer decoder with cross-attention); with bos_token_id / eos_token_id / decoder_start_token_id.

    Task heads share this config: a head that needs more (news encoder sizes, a decoder, causal masking) adds
    fields with defaults here, so that every checkpoint stays model_type "fastformer".

    Padding: when `attention_mask` is not given, models treat `input_ids == pad_token_id` as padding (as the
    notebook does with id 0); set pad_token_id=None to treat every token as real.
    """

    model_type = "fastformer"

    def __init__(
        self,
        vocab_size: int = 30000,
        hidden_size: int = 256,
        num_hidden_layers: int = 2,
        num_attention_heads: int = 16,
        intermediate_size: int = 256,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.2,
        max_position_embeddings: int = 512,
        position_embedding_type: str = "absolute",
        embedding_layer_norm: bool = True,
        layer_norm_eps: float = 1e-12,
        initializer_range: float = 0.02,
        norm_position: str = "post",
        query_value_sharing: bool = True,
        head_sharing: bool = False,
        layer_sharing: bool = True,
        interaction: str = "product",
        scoring: str = "per_head",
        transform: str = "full",
        attention_output_dense: bool = False,
        query_residual: bool = True,
        local_mixing: int = 0,
        classifier_dropout: float = 0.0,
        causal: bool = False,
        attention_type: str = "fastformer",
        user_num_hidden_layers: int = 1,
        max_history: int = 50,
        user_position_embedding_type: str = "absolute",
        popularity_buckets: int = 0,
        decoder_layers: int = 4,
        decoder_attention_heads: int | None = None,
        decoder_ffn_dim: int | None = None,
        max_target_positions: int = 512,
        decoder_type: str = "transformer",
        pad_token_id: int | None = 0,
        tie_word_embeddings: bool = True,
        embedding_size: int | None = None,
        fastformer_implementation: str = "auto",
        use_cache: bool = True,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.position_embedding_type = position_embedding_type
        self.embedding_layer_norm = embedding_layer_norm
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.norm_position = norm_position
        self.query_value_sharing = query_value_sharing
        self.head_sharing = head_sharing
        self.layer_sharing = layer_sharing
        self.interaction = interaction
        self.scoring = scoring
        self.transform = transform
        self.attention_output_dense = attention_output_dense
        self.query_residual = query_residual
        self.local_mixing = local_mixing
        self.classifier_dropout = classifier_dropout
        self.causal = causal
        self.attention_type = attention_type
        self.user_num_hidden_layers = user_num_hidden_layers
        self.max_history = max_history
        self.user_position_embedding_type = user_position_embedding_type
        if popularity_buckets < 0:
            raise ValueError(f"popularity_buckets must be 0 (off) or positive, got {popularity_buckets}")
        self.popularity_buckets = popularity_buckets
        self.decoder_layers = decoder_layers
        # resolved to numbers here: transformers sizes decoder caches from get_text_config(decoder=True)
        self.decoder_attention_heads = (
            num_attention_heads if decoder_attention_heads is None else decoder_attention_heads
        )
        self.decoder_ffn_dim = intermediate_size if decoder_ffn_dim is None else decoder_ffn_dim
        self.max_target_positions = max_target_positions
        self.decoder_type = decoder_type
        self.tie_word_embeddings = tie_word_embeddings  # the causal LM's output layer is its input embeddings
        self.embedding_size = embedding_size
        # which path computes the attention: auto, fused_block, fused or eager (layers/attention.py IMPLEMENTATIONS);
        # every path gives the same values, a path the configuration cannot take is an error when the model is built
        if fastformer_implementation not in ("auto", "fused_block", "fused", "eager"):
            raise ValueError(
                "fastformer_implementation must be auto, fused_block, fused or eager, "
                f"got {fastformer_implementation!r}"
            )
        self.fastformer_implementation = fastformer_implementation
        self.use_cache = use_cache  # decoders: forward without labels returns the decoding state unless False
        super().__init__(pad_token_id=pad_token_id, **kwargs)

    @property
    def keeps_decoding_state(self) -> bool:
        """Whether a causal model of this config carries a fixed-size decoding state (cache / use_cache): one whose
        mixer declares it (a causal Fastformer); a causal softmax model (the control) reads the whole prefix at every
        step."""
        mixer = MIXERS.get(self.attention_type)
        return bool(getattr(self, "causal", False)) and mixer is not None and mixer.decoding_state

    @classmethod
    def from_preset(cls, preset: str, **overrides) -> FastformerConfig:
        """A config from a named preset ("paper" or "official") with field overrides."""
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
        return cls(**{**PRESETS[preset], **overrides})
