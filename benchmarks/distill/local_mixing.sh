#!/usr/bin/env bash
# Local mixing from scratch (issue 44, item 3): does a short convolution over neighbouring tokens on q/k/v close the
# gap to the bag of words by itself? The pretraining probes' recipe (1 epoch on a fixed random 8,000 IMDB-2 training
# reviews at 256 tokens, 4,000 validation and 4,000 test reviews, AdamW 5e-4, 10 % warm-up), the paper preset
# (bidirectional), the shipped model's 8k WordPiece tokenizer, with and without `--model local_mixing=3`.
#   SEED=1 bash benchmarks/distill/local_mixing.sh      (metrics to benchmarks/distill/results/local-mixing-*.json)
set -euo pipefail
IMDB=${IMDB:-../shared/data/imdb/imdb_ratings.jsonl.gz}
SEED=${SEED:-1}
export OMP_NUM_THREADS=1
for kernel in 0 3; do
  name="local-mixing-k$kernel-seed$SEED"
  fastformer train classification --train "$IMDB" --where train:split=train --test "$IMDB" --where test:split=test \
    --label-field rating --binary-threshold 7 --max-train-examples 8000 --max-eval-examples 4000 --max-length 256 \
    --epochs 1 --learning-rate 5e-4 --warmup 0.1 --seed "$SEED" --tokenizer pretrained/fastformer-imdb-clm \
    --model local_mixing=$kernel --no-progress --output-dir "runs/distill/$name" ${EXTRA:-}
  mkdir -p benchmarks/distill/results
  cp "runs/distill/$name/metrics.json" "benchmarks/distill/results/$name.json"
done
