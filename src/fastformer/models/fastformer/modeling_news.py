"""FastformerForNewsRecommendation: the paper's hierarchical news recommender (Table 5, MIND)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn
from transformers import initialization as init
from transformers.utils import ModelOutput

from fastformer.layers.attention import AdditiveAttention
from fastformer.layers.encoder import FastformerEncoder
from fastformer.layers.pooling import AttentionPooling
from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.models.fastformer.modeling_fastformer import (
    FastformerModel,
    FastformerPreTrainedModel,
    refuse_unsupported,
)
from fastformer.presets import encoder_kwargs


@dataclass
class NewsRecommendationOutput(ModelOutput):
    """loss (softmax cross-entropy over each row's candidates, when labels are given), logits (B, C) click scores,
    user_vectors (B, hidden), news_vectors (U, hidden) of the news given."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    user_vectors: torch.Tensor | None = None
    news_vectors: torch.Tensor | None = None
    # output_hidden_states=True: the news encoder's (U, L, hidden) per layer (embeddings first; when the news are given
    # as tokens) and the user encoder's (B, H, hidden) per layer
    news_hidden_states: tuple[torch.Tensor, ...] | None = None
    user_hidden_states: tuple[torch.Tensor, ...] | None = None
    # output_attentions=True: the news encoder's per-layer alpha / beta (U, heads, L) and title pooling weights
    # (U, L) (when the news are given as tokens); the user encoder's per-layer alpha / beta (B, heads, H) over the
    # clicked news and its pooling weights (B, H): how much each clicked news makes up the user vector
    news_additive_attentions: tuple[AdditiveAttention, ...] | None = None
    news_pooling_attentions: torch.Tensor | None = None
    user_additive_attentions: tuple[AdditiveAttention, ...] | None = None
    user_pooling_attentions: torch.Tensor | None = None
    # the user encoder's output (B, H, hidden) at each clicked news: with the pooling weights w, a candidate c scores
    # sum_i w_i (user_news_states_i . c), so each clicked news' share of every score can be read off exactly
    user_news_states: torch.Tensor | None = None
    # config.popularity_buckets > 0: each candidate's popularity score (B, C), already part of logits (logits =
    # user . news + popularity_scores)
    popularity_scores: torch.Tensor | None = None


def popularity_bucket(clicks: torch.Tensor, buckets: int) -> torch.Tensor:
    """Click counts (any shape, >= 0) -> bucket ids floor(log2(1 + clicks)), capped at buckets - 1: 0, 1, 2-3, 4-7,
    ... clicks. Log-spaced because popularity is heavy-tailed: a few news take most clicks."""
    return torch.log2(1 + clicks.clamp(min=0).double()).floor().long().clamp(max=buckets - 1)


def candidate_clicks(model, candidates: list[tuple[str, ...]], clicks: Mapping[str, int] | None) -> torch.Tensor | None:
    """(B, C) click counts of B candidate lists (0 for news without clicks and for padding) when the model scores
    popularity, else None; an error when it does and no counts are given."""
    if not getattr(model.config, "popularity_buckets", 0):
        return None
    if clicks is None:
        raise ValueError("this model scores popularity: give the click counts it was trained with (news_clicks.tsv)")
    width = max([1] + [len(row) for row in candidates])
    return torch.tensor([[clicks.get(c, 0) for c in row] + [0] * (width - len(row)) for row in candidates])


class FastformerForNewsRecommendation(FastformerPreTrainedModel):
    """News encoder: title tokens -> Fastformer -> additive attention pooling -> news vector (hidden).
    User encoder: the user's last `max_history` clicked news vectors (+ positions) -> Fastformer -> additive pooling
    -> user vector. Click score: user vector . candidate news vector; with `config.popularity_buckets > 0`, plus a
    learned score of the candidate's popularity (its click count, bucketed by `popularity_bucket`), as PP-Rec does
    (the personal score alone knows nothing of what most users click).

    With `config.attention_type = "softmax"` both encoders use multi-head softmax self-attention instead: the
    NRMS-style baseline of the paper's Table 5, in the same model and pipeline.

    A batch names every news once: `news_input_ids` (U, L) holds the distinct news of the batch, and users'
    histories and candidates index into it, so a news clicked by many users of a batch is encoded once. Evaluation
    passes precomputed `news_vectors` instead (every news of a split encoded once, then reused by each impression).
    """

    main_input_name = "news_input_ids"

    def __init__(self, config: FastformerConfig):
        super().__init__(config)
        self.fastformer = FastformerModel(config)  # the news encoder, pooled by its AttentionPooling
        user_kwargs = encoder_kwargs(config)
        user_kwargs.update(
            num_layers=config.user_num_hidden_layers,
            max_position_embeddings=max(config.max_history, 1),
            position_embedding_type=config.user_position_embedding_type,
        )
        self.user_encoder = FastformerEncoder(**user_kwargs)
        self.user_pooler = AttentionPooling(config.hidden_size)
        # one score per click-count bucket, added to the personal score (starts at 0: the paper's model)
        self.popularity = nn.Embedding(config.popularity_buckets, 1) if config.popularity_buckets else None
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if module is self.popularity:
            init.zeros_(module.weight)

    def encode_news(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(U, L) token ids of news texts -> (U, hidden) news vectors."""
        return self.fastformer(input_ids, attention_mask, return_dict=True).pooler_output

    def encode_users(self, history_vectors: torch.Tensor, history_mask: torch.Tensor) -> torch.Tensor:
        """(B, H, hidden) clicked news vectors, oldest first, and (B, H) bool mask -> (B, hidden) user vectors.

        A user without clicks gets the zero vector, so all its candidates score 0 (ranked in candidate order)."""
        hidden, _ = self.user_encoder(history_vectors, history_mask)
        return self.user_pooler(hidden, history_mask)

    def forward(
        self,
        news_input_ids: torch.Tensor | None = None,
        news_attention_mask: torch.Tensor | None = None,
        history_index: torch.Tensor | None = None,
        candidate_index: torch.Tensor | None = None,
        candidate_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        news_vectors: torch.Tensor | None = None,
        candidate_clicks: torch.Tensor | None = None,
        return_dict: bool | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
        **kwargs,
    ) -> NewsRecommendationOutput | tuple:
        """news_input_ids (U, L) with news_attention_mask (U, L), or news_vectors (U, hidden): the batch's news.
        history_index (B, H): each user's clicked news as rows of the news, oldest first, -1 = padding.
        candidate_index (B, C): candidates as rows of the news; candidate_mask (B, C) bool marks real ones.
        labels (B,): position of the clicked candidate in each row (softmax cross-entropy over the candidates, the
        paper's negative-sampling loss with 1 clicked + K unclicked per row).
        candidate_clicks (B, C): each candidate's click count (the training impressions' clicks, leaving out the
        row's own impression), required when config.popularity_buckets > 0 and refused otherwise.
        """
        if (news_input_ids is None) == (news_vectors is None):
            raise ValueError("pass exactly one of news_input_ids and news_vectors")
        if history_index is None or candidate_index is None:
            raise ValueError("history_index and candidate_index are required")
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        refuse_unsupported(kwargs)
        if (candidate_clicks is None) != (self.popularity is None):
            raise ValueError(
                "this model adds a popularity score (config.popularity_buckets > 0): pass candidate_clicks"
                if self.popularity is not None
                else "candidate_clicks given, but this model has no popularity score (config.popularity_buckets = 0)"
            )
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        if output_attentions is None:
            output_attentions = self.config.output_attentions
        news_hidden = user_hidden = news_weights = news_pooling = None
        if news_vectors is None:
            encoded = self.fastformer(
                news_input_ids,
                news_attention_mask,
                output_hidden_states=output_hidden_states,
                output_attentions=output_attentions,
                return_dict=True,
            )
            news_vectors, news_hidden = encoded.pooler_output, encoded.hidden_states  # (U, hidden)
            news_weights, news_pooling = encoded.additive_attentions, encoded.pooling_attentions
        # index -1 (padding) reads an appended zero row
        table = torch.cat([news_vectors, news_vectors.new_zeros(1, news_vectors.shape[-1])])
        history_mask = history_index >= 0  # (B, H)
        user_weights = [] if output_attentions else None
        hidden, user_hidden = self.user_encoder(
            table[history_index],
            history_mask,
            output_hidden_states=bool(output_hidden_states),
            attention_weights=user_weights,
        )
        user_vectors, user_pooling = self.user_pooler.pool(hidden, history_mask)  # (B, hidden), as encode_users
        candidates = table[candidate_index]  # (B, C, hidden)
        logits = torch.einsum("bch,bh->bc", candidates, user_vectors)
        popularity_scores = None
        if self.popularity is not None:
            buckets = popularity_bucket(candidate_clicks, self.config.popularity_buckets)
            popularity_scores = self.popularity(buckets).squeeze(-1).to(logits.dtype)  # (B, C)
            logits = logits + popularity_scores
        if candidate_mask is not None:
            logits = logits.masked_fill(~candidate_mask.bool(), torch.finfo(logits.dtype).min)
        loss = None
        if labels is not None:  # in float32 at least: half-precision logits of long dot products lose the margin
            wide = logits.to(torch.promote_types(logits.dtype, torch.float32))
            loss = nn.functional.cross_entropy(wide, labels.view(-1))
        output = NewsRecommendationOutput(
            loss=loss,
            logits=logits,
            user_vectors=user_vectors,
            news_vectors=news_vectors,
            news_hidden_states=news_hidden,
            user_hidden_states=user_hidden,
            news_additive_attentions=news_weights,
            news_pooling_attentions=news_pooling,
            user_additive_attentions=None if user_weights is None else tuple(user_weights),
            user_pooling_attentions=user_pooling if output_attentions else None,
            user_news_states=hidden if output_attentions else None,
            popularity_scores=popularity_scores,
        )
        return output if return_dict else output.to_tuple()  # (the dict's fields in order, None left out)
