"""FastformerForReplacedTokenDetection: ELECTRA's pretraining (Clark et al., ICLR 2020) on the `fastformer` model type.

A small generator (a masked LM) fills the masked positions with tokens sampled from its own prediction; the
discriminator (the encoder that is kept and fine-tuned) reads the filled-in sequence and tells, at every real token,
whether it is the original or a replacement. The discriminator learns from every token, not only from the 15 % that
are masked, and its head is one logit per token instead of a vocabulary.

Not in the paper, which trains every model from scratch. The discriminator's encoder is `fastformer.*`, the prefix of
every head of the model type, so `--init-from` and `FastformerForSequenceClassification.from_pretrained(folder)`
start from it; the generator (`generator.*`, `generator_head.*`) shares the word embeddings (tied, as in ELECTRA) and
is dropped by fine-tuning.

Sampling: with `replacement_noise` (B, N) uniform numbers in [0, 1), the generator's token at a masked position is
the inverse-CDF draw of that number from its softmax (deterministic: a collator seeded by the batch gives a resumed
run the very same replacements); without it, `torch.multinomial` draws from the global generator.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn
from transformers.activations import ACT2FN
from transformers.utils import ModelOutput

from fastformer.models.fastformer.configuration_fastformer import FastformerConfig
from fastformer.models.fastformer.modeling_fastformer import (
    FastformerModel,
    FastformerPreTrainedModel,
    factorised_embedding_size,
    refuse_unsupported,
)
from fastformer.models.fastformer.modeling_masked_lm import MaskedLMHead

GENERATOR_DEFAULTS = dict(generator_num_hidden_layers=1, generator_intermediate_size=None, discriminator_weight=50.0)


@dataclass
class ReplacedTokenDetectionOutput(ModelOutput):
    """loss: generator_loss + discriminator_weight * discriminator_loss (when labels are given).
    logits: (B, N) the discriminator's "replaced" logit per token. replaced: (B, N) its targets: 1 replaced, 0
    original, -100 padding. generator_loss: masked-LM cross-entropy at the masked positions; discriminator_loss:
    binary cross-entropy over the real tokens."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    replaced: torch.Tensor | None = None
    generator_loss: torch.Tensor | None = None
    discriminator_loss: torch.Tensor | None = None


class DiscriminatorHead(nn.Module):
    """hidden (..., C) -> one logit (...): dense + activation, then a linear map to a scalar (ELECTRA's head)."""

    def __init__(self, config: FastformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = ACT2FN[config.hidden_act]
        self.output = nn.Linear(config.hidden_size, 1)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.output(self.activation(self.dense(hidden))).squeeze(-1)


def generator_config(config: FastformerConfig) -> FastformerConfig:
    """The generator's config: the discriminator's with `generator_num_hidden_layers` layers and
    `generator_intermediate_size` (default: the discriminator's) feed-forward size; same width (its embeddings are
    the discriminator's)."""
    fields = {key: getattr(config, key, default) for key, default in GENERATOR_DEFAULTS.items()}
    small = copy.deepcopy(config)
    small.num_hidden_layers = int(fields["generator_num_hidden_layers"])
    small.intermediate_size = int(fields["generator_intermediate_size"] or config.intermediate_size)
    return small


def sample_replacements(logits: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor:
    """(M, V) generator logits -> (M,) sampled token ids: inverse CDF of `noise` (M,) when given, else multinomial."""
    probabilities = torch.softmax(logits.detach().float(), dim=-1)
    if noise is None:
        return torch.multinomial(probabilities, 1).squeeze(-1)
    cumulative = probabilities.cumsum(-1)
    # the last bin ends at cumulative[-1] ~ 1 - rounding: a noise value above it takes the last token
    drawn = torch.searchsorted(cumulative, noise.float().unsqueeze(-1)).squeeze(-1)
    return drawn.clamp_(max=logits.shape[-1] - 1)


class FastformerForReplacedTokenDetection(FastformerPreTrainedModel):
    """ELECTRA pretraining: generator (masked LM, `generator_num_hidden_layers` layers) + discriminator (the encoder
    kept for fine-tuning, `fastformer.*`) with a per-token replaced/original head."""

    _tied_weights_keys = {
        "generator.word_embeddings.weight": "fastformer.word_embeddings.weight",
        "generator_head.decoder.weight": "fastformer.word_embeddings.weight",
    }
    # two losses over two different counts (masked tokens, real tokens): each a mean over this process's batch
    accepts_loss_kwargs = False

    def __init__(self, config: FastformerConfig):
        if factorised_embedding_size(config):
            raise ValueError(
                "FastformerForReplacedTokenDetection ties the generator to the word embeddings: "
                "embedding_size must equal hidden_size (or be None)"
            )
        if getattr(config, "causal", False):
            raise ValueError("replaced-token detection reads both sides of a token: config.causal must be False")
        for key, default in GENERATOR_DEFAULTS.items():
            if not hasattr(config, key):
                setattr(config, key, default)
        super().__init__(config)
        self.fastformer = FastformerModel(config, add_pooling_layer=False)
        self.discriminator_head = DiscriminatorHead(config)
        self.generator = FastformerModel(generator_config(config), add_pooling_layer=False)
        self.generator_head = MaskedLMHead(config)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.generator_head.decoder

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.generator_head.decoder = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        replacement_noise: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> ReplacedTokenDetectionOutput | tuple:
        """input_ids (B, N) with [MASK] at the masked positions; labels (B, N): the original token there, -100
        elsewhere; replacement_noise (B, N) in [0, 1) (optional, read at the masked positions). Without labels, the
        discriminator scores `input_ids` as they are (logits only)."""
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        refuse_unsupported(kwargs)
        real = (
            attention_mask.bool() if attention_mask is not None else torch.ones_like(input_ids, dtype=torch.bool)
        )  # (B, N)
        generator_loss = discriminator_loss = loss = replaced = None
        if labels is None:
            discriminator_input = input_ids
        else:
            selected = labels != -100  # (B, N)
            generated = self.generator(input_ids, attention_mask, return_dict=True).last_hidden_state  # (B, N, C)
            generator_logits = self.generator_head(generated[selected])  # (M, V): the head only where it is read
            targets = labels[selected]
            if targets.numel():
                generator_loss = nn.functional.cross_entropy(generator_logits.float(), targets)
            else:  # no masked position: a zero that keeps every parameter in the graph
                generator_loss = generator_logits.sum() * 0.0
            noise = replacement_noise[selected] if replacement_noise is not None else None
            original = torch.where(selected, labels, input_ids)  # (B, N)
            discriminator_input = original.clone()
            discriminator_input[selected] = sample_replacements(generator_logits, noise)
            # a sampled token equal to the original is "original" (ELECTRA's labels)
            replaced = (discriminator_input != original).long().masked_fill(~real, -100)  # (B, N)
        hidden = self.fastformer(discriminator_input, attention_mask, return_dict=True).last_hidden_state
        logits = self.discriminator_head(hidden)  # (B, N)
        if replaced is not None:
            per_token = nn.functional.binary_cross_entropy_with_logits(
                logits.float(), replaced.clamp(min=0).float(), reduction="none"
            )
            discriminator_loss = (per_token * real).sum() / real.sum().clamp(min=1)
            loss = generator_loss + float(self.config.discriminator_weight) * discriminator_loss
        output = ReplacedTokenDetectionOutput(
            loss=loss,
            logits=logits,
            replaced=replaced,
            generator_loss=generator_loss,
            discriminator_loss=discriminator_loss,
        )
        return output if return_dict else output.to_tuple()  # (the dict's fields in order, None left out)


def replaced_token_detection_reference(
    model: FastformerForReplacedTokenDetection, input_ids, attention_mask, labels, replacement_noise
) -> torch.Tensor:
    """The slow, obvious loss: the generator's full (B, N, V) logits, a Python loop that draws each masked
    position's token by walking its cumulative distribution, the discriminator on the result, a loop of per-token
    binary cross-entropies. FastformerForReplacedTokenDetection's loss equals it; the tests compare the two."""
    generated = model.generator(input_ids, attention_mask, return_dict=True).last_hidden_state
    full = model.generator_head(generated)  # (B, N, V)
    B, N = input_ids.shape
    filled = input_ids.clone()
    generator_terms, discriminator_terms = [], []
    for b in range(B):
        for n in range(N):
            if labels[b, n] == -100:
                continue
            generator_terms.append(nn.functional.cross_entropy(full[b, n].float()[None], labels[b, n][None]))
            probabilities = torch.softmax(full[b, n].detach().float(), -1).tolist()
            total, token = 0.0, len(probabilities) - 1
            for v, p in enumerate(probabilities):
                total += p
                if float(replacement_noise[b, n]) <= total:
                    token = v
                    break
            filled[b, n] = token
    hidden = model.fastformer(filled, attention_mask, return_dict=True).last_hidden_state
    logits = model.discriminator_head(hidden)
    original = torch.where(labels != -100, labels, input_ids)
    for b in range(B):
        for n in range(N):
            if attention_mask[b, n]:
                target = torch.tensor(float(filled[b, n] != original[b, n]))
                discriminator_terms.append(nn.functional.binary_cross_entropy_with_logits(logits[b, n].float(), target))
    generator_loss = torch.stack(generator_terms).mean()
    discriminator_loss = torch.stack(discriminator_terms).mean()
    return generator_loss + float(model.config.discriminator_weight) * discriminator_loss
