#!/usr/bin/env bash
# The small IMDB-2 probe of issue 44's calibration: a random 4,000 training reviews (the fixed subset every run
# shares), 2,000 validation and 2,000 test reviews, 256 tokens, 1 epoch, bf16, one thread. Quick enough (~25 min a
# run) to compare starts inside one session; the full protocol is finetune.sh.
#   bash benchmarks/distill/probe.sh NAME START_FOLDER ARCHITECTURE SEED   (ARCHITECTURE nbsvm / tfidf: START ignored)
# Writes runs/distill/probe-NAME-seedSEED and copies its metrics.json to benchmarks/distill/results/.
set -euo pipefail
name=${1:?name}; start=${2:?start folder}; architecture=${3:?fastformer, softmax, nbsvm or tfidf}; seed=${4:?seed}
IMDB=${IMDB:-../shared/data/imdb/imdb_ratings.jsonl.gz}
LR=${LR:-5e-5}
export OMP_NUM_THREADS=1
out="runs/distill/probe-$name-seed$seed"
model=(--init-from "$start" --epochs 1 --learning-rate "$LR" --warmup 0.1 --batch-size 32 --bf16)
case "$architecture" in nbsvm|tfidf) model=() ;; esac
fastformer train classification --train "$IMDB" --where train:split=train --test "$IMDB" --where test:split=test \
  --label-field rating --binary-threshold 7 --max-train-examples 4000 --max-eval-examples 2000 --max-length 256 \
  --architecture "$architecture" "${model[@]}" --seed "$seed" --no-progress --output-dir "$out" ${EXTRA:-}
mkdir -p benchmarks/distill/results
cp "$out/metrics.json" "benchmarks/distill/results/probe-$name-seed$seed.json"
