"""The pretraining task's torch code (its `Task` class is task.py's, the corpus corpus.py's): the text pieces, the
dynamic masking, the models of each objective and their held-out scores. The folder a run saves is what
`--init-from` and `from_pretrained` of any `fastformer` head start from.

Objectives: `mlm` trains a `FastformerForMaskedLM` (15 % chosen, 80/10/10; held-out masked-LM loss and accuracy);
`electra` trains a `FastformerForReplacedTokenDetection` (the chosen tokens all become [MASK] for a small generator,
whose samples the discriminator tells from the originals at every token; held-out discriminator accuracy).

Every sequence is one text (a longer text is cut into pieces of `block_size` tokens), never several texts joined:
the additive attention pools the whole sequence into one global query and key, and a classifier fine-tuned later
reads one text per sequence, so the pretrained pooling should too. Sequences carry no [CLS] / [SEP], as the
classifier's inputs.
"""

from __future__ import annotations

import hashlib
import warnings
from typing import Any

import torch

from fastformer.tasks.pretrain.config import PretrainingConfig

EVALUATION_MASK_SEED = 1234  # the held-out masking: the same positions at every evaluation and for every run seed


class TextPieces(torch.utils.data.Dataset):
    """Each text tokenized (no special tokens) and cut into pieces of at most `block_size` tokens; a last piece
    shorter than `min_tokens` is dropped unless it is the whole text. With `offsets`, each item carries the
    tokens' character offsets (whole-word masking finds words by them)."""

    def __init__(self, texts: list[str], tokenizer, block_size: int, min_tokens: int, offsets: bool = False):
        # verbose=False: texts longer than the tokenizer's model_max_length are cut into pieces here, on purpose
        encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=offsets, verbose=False)
        self.input_ids: list[list[int]] = []
        self.offsets: list[list[tuple[int, int]]] | None = [] if offsets else None
        for i, ids in enumerate(encoded["input_ids"]):
            for start in range(0, len(ids), block_size):
                piece = ids[start : start + block_size]
                if len(piece) < min_tokens and start > 0:
                    continue
                self.input_ids.append(piece)
                if offsets:
                    self.offsets.append(list(encoded["offset_mapping"][i][start : start + block_size]))

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        item: dict[str, Any] = {"input_ids": self.input_ids[i]}
        if self.offsets is not None:
            item["offset_mapping"] = self.offsets[i]
        return item

    def num_tokens(self) -> int:
        return sum(len(ids) for ids in self.input_ids)


class MaskingCollator:
    """Pads a batch and masks it dynamically (transformers' DataCollatorForLanguageModeling: `mlm_probability` of the
    tokens chosen, 80 % of them replaced by [MASK], 10 % by a random token, 10 % kept; padding and special tokens
    never chosen; whole words with `whole_word_mask`). Items that already carry `labels` (the held-out set, masked
    once) are only padded.

    Each text's mask is drawn from a generator seeded by (seed, epoch, the text's tokens), not from the global
    generator: a resumed run draws exactly the masks the uninterrupted run drew (the Trainer restores its global
    generator only after it has collated the first batch after the checkpoint), torchrun processes that collate slices
    of a batch draw what one process collating it whole draws, and each epoch masks a text anew. `epoch` is set by
    `EpochCallback`; with `seed=None` the global generator is used."""

    def __init__(
        self,
        tokenizer,
        mlm_probability: float,
        whole_word_mask: bool,
        seed: int | None = None,
        replacement_noise: bool = False,
    ):
        from transformers import DataCollatorForLanguageModeling

        # ELECTRA (replacement_noise): every chosen token becomes [MASK] for the generator, which fills it in itself
        replace = dict(mask_replace_prob=1.0, random_replace_prob=0.0) if replacement_noise else {}
        with warnings.catch_warnings():  # whole-word masking: "random replacement is not supported" (it is [MASK])
            warnings.simplefilter("ignore", UserWarning)
            self.masker = DataCollatorForLanguageModeling(
                tokenizer, mlm_probability=mlm_probability, whole_word_mask=whole_word_mask, **replace
            )
        self.pad_id = tokenizer.pad_token_id
        self.seed = seed
        self.epoch = 0
        self.replacement_noise = replacement_noise

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if "labels" in items[0]:
            return self._pad(items)
        if self.seed is None:
            batch = self.masker(_padded_offsets(items))
            if self.replacement_noise:  # (B, N) uniform draws: FastformerForReplacedTokenDetection's samples
                batch["replacement_noise"] = torch.rand(batch["input_ids"].shape)
            return batch
        # each text masked by a generator seeded by (seed, epoch, its tokens): the same masks whether a batch is
        # collated whole (one process) or in slices (torchrun with split batches), and after a resume
        masked = []
        for item in items:
            generator = torch.Generator().manual_seed(self._text_seed(item))
            self.masker.generator = generator
            one = self.masker(_padded_offsets([item]))
            row = dict(input_ids=one["input_ids"][0].tolist(), labels=one["labels"][0].tolist())
            if self.replacement_noise:
                row["replacement_noise"] = torch.rand(len(row["input_ids"]), generator=generator).tolist()
            masked.append(row)
        return self._pad(masked)

    def _text_seed(self, item: dict[str, Any]) -> int:
        """The seed of one text's mask: (seed, epoch, its tokens)."""
        digest = hashlib.blake2b(f"{self.seed}/{self.epoch}".encode(), digest_size=8)
        digest.update(torch.tensor(item["input_ids"], dtype=torch.int64).numpy().tobytes())
        digest.update(b"|")
        return int.from_bytes(digest.digest(), "little") & ((1 << 63) - 1)

    def _pad(self, items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        length = max(len(item["input_ids"]) for item in items)
        ids = torch.full((len(items), length), self.pad_id, dtype=torch.long)
        labels = torch.full((len(items), length), -100, dtype=torch.long)
        attention = torch.zeros((len(items), length), dtype=torch.long)
        noise = torch.zeros((len(items), length)) if "replacement_noise" in items[0] else None
        for row, item in enumerate(items):
            n = len(item["input_ids"])
            ids[row, :n] = torch.tensor(item["input_ids"])
            labels[row, :n] = torch.tensor(item["labels"])
            attention[row, :n] = 1
            if noise is not None:
                noise[row, :n] = torch.tensor(item["replacement_noise"])
        batch = dict(input_ids=ids, attention_mask=attention, labels=labels)
        if noise is not None:
            batch["replacement_noise"] = noise
        return batch


def epoch_callback(collator: MaskingCollator):
    """Tells the collator the epoch the Trainer is in (a resumed run too), so each epoch masks anew."""
    from transformers import TrainerCallback

    class EpochCallback(TrainerCallback):
        def on_epoch_begin(self, args, state, control, **kwargs):
            collator.epoch = int(state.epoch or 0)

    return EpochCallback()


def _padded_offsets(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Offsets padded to the batch length with (0, 0) (a padded position is a special token: never masked)."""
    if "offset_mapping" not in items[0]:
        return items
    length = max(len(item["input_ids"]) for item in items)
    return [
        {**item, "offset_mapping": list(item["offset_mapping"]) + [(0, 0)] * (length - len(item["input_ids"]))}
        for item in items
    ]


class MaskedPieces(torch.utils.data.Dataset):
    """A dataset of pieces masked once, with a fixed generator: held-out loss and accuracy read the same positions
    at every evaluation."""

    def __init__(self, pieces: TextPieces, collator: MaskingCollator, batch_size: int = 64):
        self.items: list[dict[str, list[int]]] = []
        for start in range(0, len(pieces), batch_size):
            batch = collator([pieces[i] for i in range(start, min(start + batch_size, len(pieces)))])
            lengths = batch["attention_mask"].sum(-1).tolist()
            for row, n in enumerate(lengths):
                item = {
                    key: batch[key][row, :n].tolist()
                    for key in ("input_ids", "labels", "replacement_noise")
                    if key in batch
                }
                self.items.append(item)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return self.items[i]


def build_model(cfg: PretrainingConfig, tokenizer):
    """The objective's model (FastformerForMaskedLM or FastformerForReplacedTokenDetection) of the preset with
    cfg.model overrides (softmax attention for architecture softmax)."""
    from fastformer.models.fastformer import (
        FastformerConfig,
        FastformerForMaskedLM,
        FastformerForReplacedTokenDetection,
    )

    fields = dict(
        vocab_size=len(tokenizer),
        max_position_embeddings=cfg.block_size,
        pad_token_id=tokenizer.pad_token_id,
        attention_type=cfg.architecture,  # (every pretraining architecture is a mixer)
    )
    if cfg.objective == "electra":
        fields.update(generator_num_hidden_layers=cfg.generator_layers, discriminator_weight=cfg.discriminator_weight)
        model_class = FastformerForReplacedTokenDetection
    else:
        model_class = FastformerForMaskedLM
    return model_class(FastformerConfig.from_preset(cfg.preset, **{**fields, **cfg.model}))


@torch.no_grad()
def masked_lm_scores(model, dataset: MaskedPieces, collator: MaskingCollator, batch_size: int = 64) -> dict[str, Any]:
    """Held-out masked-LM loss (mean over masked positions), accuracy and their count."""
    model.eval()
    total, correct, count = 0.0, 0, 0
    for start in range(0, len(dataset), batch_size):
        batch = collator([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        out = model(**batch)
        targets = batch["labels"][batch["labels"] != -100]
        n = targets.numel()
        total += float(out.loss) * n
        correct += int((out.logits.argmax(-1) == targets).sum())
        count += n
    return dict(loss=round(total / max(count, 1), 5), accuracy=round(correct / max(count, 1), 5), masked_tokens=count)


@torch.no_grad()
def replaced_token_scores(model, dataset: MaskedPieces, collator: MaskingCollator, batch_size: int = 64) -> dict:
    """Held-out ELECTRA scores on fixed masks and draws: loss, the generator's masked-LM loss, the discriminator's
    loss, its accuracy over every real token, and its recall and precision on the replaced ones."""
    model.eval()
    sums = dict(loss=0.0, generator_loss=0.0, discriminator_loss=0.0)
    correct = tokens = replaced = found = flagged = batches = 0
    for start in range(0, len(dataset), batch_size):
        batch = collator([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        out = model(**batch)
        for key in sums:
            sums[key] += float(getattr(out, key))
        batches += 1
        real = out.replaced != -100
        predicted = out.logits > 0
        truth = out.replaced == 1
        correct += int((predicted == truth)[real].sum())
        tokens += int(real.sum())
        replaced += int(truth.sum())
        found += int((predicted & truth).sum())
        flagged += int((predicted & real).sum())
    scores = {key: round(value / max(batches, 1), 5) for key, value in sums.items()}
    scores.update(
        accuracy=round(correct / max(tokens, 1), 5),
        replaced_recall=round(found / max(replaced, 1), 5),
        replaced_precision=round(found / max(flagged, 1), 5),
        replaced_share=round(replaced / max(tokens, 1), 5),
        tokens=tokens,
    )
    return scores


def detections(logits, labels):
    """ELECTRA's (discriminator logits (B, N), targets (B, N)) -> (B, N, 2): the predicted and the true "replaced"
    (-100 at padding), what `detection_accuracy` reads."""
    logits, replaced = logits[0], logits[1]
    predicted = (logits > 0).long().masked_fill(replaced == -100, -100)
    return torch.stack([predicted, replaced], dim=-1)


def detection_accuracy(prediction) -> dict[str, float]:
    detections = torch.as_tensor(prediction[0])
    predicted, truth = detections[..., 0], detections[..., 1]
    real = truth != -100
    return {"accuracy": float((predicted[real] == truth[real]).float().mean()) if real.any() else 0.0}


def masked_argmax(logits, labels):
    """The (M, vocab) logits of the masked positions -> (B, N) predicted ids there, -100 elsewhere: small to gather,
    and per example, as the Trainer's evaluation loop expects (it cuts predictions to the number of examples)."""
    predicted = torch.full_like(labels, -100)
    predicted[labels != -100] = logits.argmax(-1)
    return predicted


def masked_accuracy(prediction) -> dict[str, float]:
    predicted, labels = prediction
    chosen = labels != -100
    return {"accuracy": float((predicted[chosen] == labels[chosen]).mean()) if chosen.any() else 0.0}
