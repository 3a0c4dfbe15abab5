#!/usr/bin/env bash
# Copies every complete checkpoint of a running pretraining run out of the Trainer's rotation (it keeps two), so that
# fine-tuning probes can start from each point of the run: RUN/checkpoints/checkpoint-N -> POINTS/step-N.
# Usage: bash benchmarks/pretraining/keep_checkpoints.sh runs/pretrain-imdb-mlm runs/pretrain-imdb-mlm-points &
# Ends when the run's run_complete.json appears (after a last copy).
set -uo pipefail
RUN=$1; POINTS=$2
mkdir -p "$POINTS"
while true; do
  for checkpoint in "$RUN"/checkpoints/checkpoint-*; do
    [ -f "$checkpoint/trainer_state.json" ] || continue  # the Trainer writes it last: the checkpoint is complete
    step=${checkpoint##*-}
    [ -d "$POINTS/step-$step" ] && continue
    mkdir -p "$POINTS/.copy" && rm -rf "$POINTS/.copy/step-$step"
    for f in config.json model.safetensors tokenizer.json tokenizer_config.json special_tokens_map.json \
      trainer_state.json; do
      [ -f "$checkpoint/$f" ] && cp "$checkpoint/$f" "$POINTS/.copy/" 2>/dev/null
    done
    mv "$POINTS/.copy" "$POINTS/step-$step" && echo "kept step $step $(date +%T)"
  done
  [ -f "$RUN/run_complete.json" ] && break
  sleep 30
done
