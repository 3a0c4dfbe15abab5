#!/usr/bin/env bash
# The neural rows of docs/RESULTS.md's classification table and its two ablations, 3 seeds each, on 2 CPU cores.
# Usage: bash benchmarks/classification/classification_neural.sh          -> runs/classification/<set>-<variant>-seed<N>/metrics.json
#        python benchmarks/classification/summarize_classification.py      -> the tables
# Rows: IMDB 8-class rating and 2-class sentiment x {Fastformer@512, Fastformer@1024, softmax Transformer@512 (SDPA)};
# Yelp-5 x {Fastformer@512, softmax@512} (no Yelp review exceeds 512 tokens, so Fastformer@1024 would be the same
# model); the ablations on Yelp-5 (the stand-in for the paper's Amazon): interaction (add, concat; product is the
# Fastformer@512 row) and sharing (none, query-value, QV + head-wise; QV + layer-wise is the Fastformer@512 row).
# Head-wise sharing shares the scoring vectors and the transform between heads, so it runs with a per-head transform.
# TF-IDF + logistic regression runs on the same examples (benchmarks/classification/classification_tfidf.sh: on all of them).
# Everything else is the paper's default: hidden 256, 16 heads, 2 layers, Adam 1e-3, batch 64, dropout 0.2.
# The sizes below are what fits the 2-core budget (JOBS runs side by side, THREADS threads each); the full sets run
# with IMDB_TRAIN= IMDB_EVAL= YELP_TRAIN= YELP_EVAL= EPOCHS=3 (empty = all examples). The --max-*-examples limits
# draw a fixed random sample (the same for every seed and variant; the files are sorted by label).
set -euo pipefail
IMDB=${IMDB:-../shared/data/imdb/imdb_ratings.jsonl.gz}
YELP=${YELP:-../shared/data/yelp5}
SEEDS=${SEEDS:-1 2 3}
JOBS=${JOBS:-2}
THREADS=${THREADS:-1}
EPOCHS=${EPOCHS:-1}
IMDB_TRAIN=${IMDB_TRAIN-2500}  # of the 22,500 training reviews left after the 10 % validation hold-out
IMDB_EVAL=${IMDB_EVAL-1000}    # validation and test reviews each
YELP_TRAIN=${YELP_TRAIN-5000}
YELP_EVAL=${YELP_EVAL-2000}
OUT=${OUT:-runs/classification}
limit() { [ -n "$2" ] && echo "--max-train-examples $2 --max-eval-examples $3" || true; }
# --sampling random: these rows predate length-grouped batches (the default since); it keeps them reproducible
imdb="--train $IMDB --where train:split=train --test $IMDB --where test:split=test --label-field rating \
 --epochs $EPOCHS --sampling random $(limit imdb "$IMDB_TRAIN" "$IMDB_EVAL")"
yelp="--train $YELP/yelp_train_small.csv.gz --validation $YELP/yelp_dev.csv.gz --test $YELP/yelp_test.csv.gz \
 --epochs $EPOCHS --sampling random $(limit yelp "$YELP_TRAIN" "$YELP_EVAL")"
jobs() {  # one line per run: <name> <fastformer train arguments>
  # TF-IDF + logistic regression on the same examples (deterministic: one run per set)
  echo "imdb8-tfidf-seed0 $imdb --architecture tfidf"
  echo "imdb2-tfidf-seed0 $imdb --binary-threshold 7 --architecture tfidf"
  echo "yelp5-tfidf-seed0 $yelp --architecture tfidf"
  for seed in $SEEDS; do
    for set in imdb8 imdb2; do
      data="$imdb"; [ $set = imdb2 ] && data="$imdb --binary-threshold 7"
      echo "$set-fastformer512-seed$seed $data --seed $seed --max-length 512"
      echo "$set-softmax512-seed$seed $data --seed $seed --max-length 512 --architecture softmax"
      echo "$set-fastformer1024-seed$seed $data --seed $seed --max-length 1024"
    done
    echo "yelp5-fastformer512-seed$seed $yelp --seed $seed --max-length 512"
    echo "yelp5-softmax512-seed$seed $yelp --seed $seed --max-length 512 --architecture softmax"
    echo "yelp5-add-seed$seed $yelp --seed $seed --max-length 512 --model interaction=add"
    echo "yelp5-concat-seed$seed $yelp --seed $seed --max-length 512 --model interaction=concat"
    echo "yelp5-nosharing-seed$seed $yelp --seed $seed --max-length 512 --model query_value_sharing=false --model layer_sharing=false"
    echo "yelp5-qv-seed$seed $yelp --seed $seed --max-length 512 --model layer_sharing=false"
    echo "yelp5-qvhead-seed$seed $yelp --seed $seed --max-length 512 --model layer_sharing=false --model head_sharing=true \
 --model transform=per_head"  # heads share scoring vectors and transform, so the transform must be per head
  done
}
run_one() {
  local name=$1; shift
  [ -f "$OUT/$name/metrics.json" ] && return 0
  mkdir -p "$OUT"
  # --resume: a killed sweep continues where each run stopped
  OMP_NUM_THREADS=$THREADS fastformer train "$@" --output-dir "$OUT/$name" --no-progress --resume \
    > "$OUT/$name.log" 2>&1 || echo "failed: $name (see $OUT/$name.log)"
  echo "done: $name $(date +%T)"
}
export -f run_one; export OUT THREADS
[ "${DRY_RUN:-0}" = 1 ] && { jobs; exit 0; }
jobs | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _
