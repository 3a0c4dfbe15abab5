#!/usr/bin/env bash
# News recommendation on the real MIND clicks of ../shared/data/mind (MINDRec JSON, converted to MIND's TSV format):
# the Fastformer recommender vs the NRMS-style softmax baseline, same tokenizer, data, steps and seeds, with WordPiece
# titles and random embeddings (the library's default inputs; benchmarks/news/news_mind_vectors.sh: the paper's GloVe).
# Usage: bash benchmarks/news/news_mind.sh   (SEEDS="1 2 3", JOBS=2 x THREADS=1; ONLY='NAME|NAME' just those runs)
# Train: mindrec20_valid (579 users; 10% of the impressions held out for validation); test: mindrec20_test (580
# users). Paper sizes (hidden 256, 16 heads, one layer per encoder, texts <= 48 tokens, 50 clicks, K = 4, Adam 1e-4);
# the news text is "category | title" (the converted data has no abstracts; titles alone learn less here); 5 epochs
# of batch 32 (the paper: batch 64, 3 epochs over MIND-large's millions of clicks).
# Results: each run's metrics.json copied to benchmarks/news/results/news-mind/news-<architecture>-wordpiece-seed<N>.json,
# beside the vector rows; table: python benchmarks/summarize_runs.py benchmarks/news/results/news-mind
set -euo pipefail
DATA=${DATA:-../shared/data/mind}
SEEDS=${SEEDS:-1 2 3}
JOBS=${JOBS:-2}
THREADS=${THREADS:-1}
OUT=${OUT:-runs/news-mind-wordpiece}
RESULTS=${RESULTS:-benchmarks/news/results/news-mind}
ROOT=runs/news-mind
source "$(dirname "$0")/../run_sweep.sh"
mind_folders "$DATA" "$ROOT"
TOKENIZER=$ROOT/tokenizer  # one WordPiece tokenizer (training titles) for every run
if [ ! -f $TOKENIZER/tokenizer_config.json ] && [ "${DRY_RUN:-0}" != 1 ]; then
  python -c "
import sys
from fastformer.data.mind import load_mind
from fastformer.data.tokenizer import train_tokenizer
news = load_mind(sys.argv[1]).news.values()
train_tokenizer((n.title for n in news), vocab_size=30000).save_pretrained(sys.argv[2])
" $ROOT/mind-valid $TOKENIZER
fi
jobs() {
  for seed in $SEEDS; do
    for arch in fastformer softmax; do
      echo "news-$arch-wordpiece-seed$seed news --train $ROOT/mind-valid --test $ROOT/mind-test --architecture $arch \
 --news-fields category,title --epochs 5 --batch-size 32 --learning-rate 1e-4 --tokenizer $TOKENIZER --seed $seed \
 --logging-steps 5"
    done
  done
}
jobs | sweep
