#!/usr/bin/env bash
# Fine-tuning probes of a pretraining run (issue "A pretrained Fastformer", item 4): IMDB-2 accuracy against
# pretraining tokens, from each kept point of the run (benchmarks/pretraining/keep_checkpoints.sh) and from scratch (the same
# model and tokenizer, random weights). A probe is short on purpose: 1 epoch on a fixed random 8,000 of the training
# reviews at 256 tokens, validation 4,000 held-out training reviews, test a fixed random 4,000 of the test reviews,
# AdamW 5e-4 with 10 % warm-up, dropout 0.1; the same for every point.
# Usage: bash benchmarks/pretraining/pretraining_probes.sh [scratch] [STEP ...]     (ONLY='NAME|NAME' as the other sweeps)
#        POINT_DIR=FOLDER TAG=NAME bash benchmarks/pretraining/pretraining_probes.sh [scratch] STEP   (a probe from any pretrained
#        folder, e.g. a shipped one, and its from-scratch twin from that folder's config and tokenizer)
#        EXTRA='--architecture softmax' ...   (arguments added to every probe: a softmax run's probes, a causal one's)
# Each finished probe's metrics.json is copied to benchmarks/pretraining/results/<name>.json.
set -euo pipefail
IMDB=${IMDB:-../shared/data/imdb/imdb_ratings.jsonl.gz}
RUN=${RUN:-runs/pretrain-imdb-mlm}
POINTS=${POINTS:-$RUN-points}
TAG=${TAG:-imdb-mlm}
SEED=${SEED:-1}
JOBS=${JOBS:-1}
THREADS=${THREADS:-1}
OUT=${OUT:-runs/pretraining-probes}
RESULTS=${RESULTS:-benchmarks/pretraining/results}
probe="--train $IMDB --where train:split=train --test $IMDB --where test:split=test --label-field rating \
 --binary-threshold 7 --max-train-examples 8000 --max-eval-examples 4000 --max-length 256 --epochs 1 \
 --learning-rate 5e-4 --warmup 0.1 --seed $SEED ${EXTRA:-}"
# the pretrained model's encoder fields, for the from-scratch probe: read from a kept point's config.json (what the
# run built, its task's defaults included: a `train lm` run's model differs from the classifier's preset in fields
# its command never names), else from the run's run_config.json
# (no kept points, e.g. POINT_DIR=a shipped folder: that folder's config.json)
config=$(ls $POINTS/step-*/config.json 2>/dev/null | head -1 || true)
if [ -z "$config" ] && [ -n "${POINT_DIR:-}" ]; then config=$POINT_DIR/config.json; fi
if [ -n "$config" ]; then
  scratch_model=$(python3 "$(dirname "$0")/encoder_flags.py" "$config")
else
  scratch_model=$(python3 -c "import json; m=json.load(open('$RUN/run_config.json'))['model']; \
print(' '.join(f'--model {k}={json.dumps(v)}' for k,v in m.items()))")
fi
tokenizer=$RUN/tokenizer  # the run's own; a folder given alone (POINT_DIR) carries its tokenizer at its top
if [ ! -d "$tokenizer" ] && [ -n "${POINT_DIR:-}" ]; then tokenizer=$POINT_DIR; fi
jobs() {
  for point in ${*:-scratch}; do
    if [ "$point" = scratch ]; then
      echo "probe-$TAG-scratch-seed$SEED $probe --tokenizer $tokenizer $scratch_model"
    else
      echo "probe-$TAG-step$point-seed$SEED $probe --init-from ${POINT_DIR:-$POINTS/step-$point}"
    fi
  done
}
source "$(dirname "$0")/../run_sweep.sh"
jobs "$@" | sweep
