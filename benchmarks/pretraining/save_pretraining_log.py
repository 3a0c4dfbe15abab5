"""Commit a pretraining run's curve: its log_history (training loss, held-out masked-LM loss and accuracy per
evaluation, or a causal LM's held-out next-token loss) with the real tokens one optimisation step sees, so that
benchmarks/pretraining/summarize_pretraining.py can put pretraining tokens beside each fine-tuning probe.

    python benchmarks/pretraining/save_pretraining_log.py runs/pretrain-imdb-mlm \
        benchmarks/pretraining/results/pretrain-imdb-mlm-log.json

The log comes from the run's log_history.json when it has finished, else from its newest checkpoint's
trainer_state.json (a run still going); tokens per step are the training pieces' real tokens over the steps of one
epoch, rebuilt from the run's own settings and tokenizer (the run's metrics.json gives them too once it has finished).
A run that continued a saved language model (`--init-from`) also records the steps and tokens that folder had seen
before it (steps_before, tokens_before).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def lm_tokens_per_step(settings: dict) -> int:
    """A `fastformer train lm` step's tokens: packed blocks, every token real."""
    return settings["batch_size"] * settings["block_size"]


def lm_steps_and_tokens(folder: Path) -> dict:
    """{steps_before, tokens_before}: the optimisation steps and tokens a `train lm` folder was trained on (the steps
    its metrics.json counted, else its run_config.json's --max-steps; and those of the folder it continued,
    recursively); {} where they are unknown (no run_config.json, or a run by epochs whose metrics.json is gone): the
    table leaves them empty rather than counting from zero."""
    path = folder / "run_config.json"
    if not path.is_file():
        return {}
    settings = json.loads(path.read_text())
    metrics = folder / "metrics.json"
    steps = json.loads(metrics.read_text())["train"]["steps"] if metrics.is_file() else settings["max_steps"]
    if steps <= 0:  # trained by --epochs (max_steps -1), and no metrics.json says how many steps that was
        return {}
    tokens = steps * lm_tokens_per_step(settings)
    if settings.get("init_from"):
        earlier = lm_steps_and_tokens(Path(settings["init_from"]))
        if not earlier:
            return {}
        steps, tokens = steps + earlier["steps_before"], tokens + earlier["tokens_before"]
    return dict(steps_before=steps, tokens_before=tokens)


def main() -> None:
    run, out = Path(sys.argv[1]), Path(sys.argv[2])
    if (run / "log_history.json").is_file():
        log = json.loads((run / "log_history.json").read_text())
    else:
        states = sorted(
            (run / "checkpoints").glob("checkpoint-*/trainer_state.json"),
            key=lambda p: int(p.parent.name.rsplit("-", 1)[1]),
        )
        log = json.loads(states[-1].read_text())["log_history"]
    settings = json.loads((run / "run_config.json").read_text())
    if "objective" not in settings:  # a `fastformer train lm` run: packed blocks, every token real
        payload = dict(
            run=str(run),
            settings=settings,
            tokens_per_step=lm_tokens_per_step(settings),
            log_history=log,
        )
        if settings.get("init_from"):  # continued pretraining: what the starting folder had seen comes first
            before = lm_steps_and_tokens(Path(settings["init_from"]))
            payload.update(before or dict(steps_before=None, tokens_before=None))  # None: unknown, not zero
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(payload, indent=1))
        print(f"{len(log)} log entries, {payload['tokens_per_step']} tokens a step -> {out}")
        return
    from transformers import AutoTokenizer

    from fastformer.tasks.pretrain.config import PretrainingConfig
    from fastformer.tasks.pretrain.corpus import load_texts
    from fastformer.tasks.pretrain.pretraining import TextPieces

    cfg = PretrainingConfig(**settings)
    texts = load_texts(cfg, {})
    pieces = TextPieces(
        texts["train"], AutoTokenizer.from_pretrained(str(run / "tokenizer")), cfg.block_size, cfg.min_block_tokens
    )
    steps_per_epoch = math.ceil(len(pieces) / cfg.batch_size)
    payload = dict(
        run=str(run),
        settings=cfg.as_dict(),
        train_tokens=pieces.num_tokens(),
        train_sequences=len(pieces),
        tokens_per_step=round(pieces.num_tokens() / steps_per_epoch, 1),
        log_history=log,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1))
    print(f"{len(log)} log entries, {payload['tokens_per_step']} tokens a step -> {out}")


if __name__ == "__main__":
    main()
