#!/usr/bin/env bash
# Causal language modelling on IMDB reviews: causal Fastformer vs the GPT-2 (softmax, SDPA) baseline of the same
# size, same tokenizer, data, steps and seeds. Usage: bash benchmarks/lm/lm_imdb.sh [SEEDS...]   (default: 1 2 3)
# Each run: 200 steps x 16 blocks x 256 tokens = 819,200 training tokens; validation = the first 500 reviews of
# IMDB's test split. Results: runs/lm-imdb/<architecture>-seed<N>/metrics.json; table: benchmarks/lm/summarize_lm.py.
set -euo pipefail
DATA=${DATA:-../shared/data/imdb/imdb_ratings.jsonl.gz}
SEEDS=${*:-1 2 3}
TOKENIZER=runs/lm-imdb/tokenizer  # one WordPiece tokenizer for every run, so that perplexities compare
if [ ! -f $TOKENIZER/tokenizer_config.json ]; then
  python -c "
import sys
from fastformer.data.text_corpus import read_texts
from fastformer.data.tokenizer import train_tokenizer
train_tokenizer(read_texts(sys.argv[1], where={'split': 'train'}), vocab_size=8000).save_pretrained(sys.argv[2])
" "$DATA" $TOKENIZER
fi
for seed in $SEEDS; do
  for arch in fastformer gpt2; do
    out=runs/lm-imdb/$arch-seed$seed
    [ -f "$out/metrics.json" ] && continue
    fastformer train lm --train "$DATA" --where train:split=train \
      --validation "$DATA" --where validation:split=test --max-eval-texts 500 \
      --architecture "$arch" --max-steps 200 --batch-size 16 --block-size 256 --tokenizer $TOKENIZER \
      --evaluations 1 --seed "$seed" --output-dir "$out" --no-progress --logging-steps 50
  done
done
# Equal wall-clock instead of equal tokens: Fastformer for as long as GPT-2's 200 steps took (~870 s at ~1,560
# tokens/s = 330 steps). Run with EQUAL_TIME=1.
if [ "${EQUAL_TIME:-0}" = 1 ]; then
  for seed in $SEEDS; do
    out=runs/lm-imdb-equal-time/fastformer-seed$seed
    [ -f "$out/metrics.json" ] && continue
    fastformer train lm --train "$DATA" --where train:split=train \
      --validation "$DATA" --where validation:split=test --max-eval-texts 500 \
      --architecture fastformer --max-steps 330 --batch-size 16 --block-size 256 --tokenizer $TOKENIZER \
      --evaluations 1 --seed "$seed" --output-dir "$out" --no-progress --logging-steps 50
  done
fi
