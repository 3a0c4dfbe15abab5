#!/usr/bin/env bash
# Fine-tune a converted or distilled MiniLM-size folder on IMDB-2 (the issue-44 protocol: all 25,000 training reviews,
# 10 % held out for validation, all 25,000 test reviews, 512 tokens, ratings >= 7 positive), one thread, bf16.
#   bash benchmarks/distill/finetune.sh NAME START_FOLDER ARCHITECTURE SEED
#   e.g. bash benchmarks/distill/finetune.sh imdb2-teacher runs/minilm-softmax softmax 1
# Every row of the protocol as one resumable campaign that copies each result: benchmarks/distill/imdb2.sh.
# Resumable (RESUME=1): the run continues from its last checkpoint (EXTRA="--evaluations-per-epoch 4": one every
# quarter epoch, so a session's end loses at most a quarter; EXTRA is passed on to `fastformer train`).
set -euo pipefail
name=${1:?name}; start=${2:?start folder}; architecture=${3:?fastformer or softmax}; seed=${4:?seed}
IMDB=${IMDB:-../shared/data/imdb/imdb_ratings.jsonl.gz}
EPOCHS=${EPOCHS:-2}; LR=${LR:-5e-5}
export OMP_NUM_THREADS=1
resume=()
[ "${RESUME:-0}" = 1 ] && resume=(--resume)
fastformer train classification --train "$IMDB" --where train:split=train --test "$IMDB" --where test:split=test \
  --label-field rating --binary-threshold 7 --max-length 512 --init-from "$start" --architecture "$architecture" \
  --epochs "$EPOCHS" --learning-rate "$LR" --warmup 0.1 --batch-size 32 --bf16 --seed "$seed" --no-progress \
  --output-dir "runs/distill/$name-seed$seed" "${resume[@]}" ${EXTRA:-}
