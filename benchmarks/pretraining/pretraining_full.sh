#!/usr/bin/env bash
# The pretrained Fastformer on the paper's protocol (issue "A pretrained Fastformer", item 5): all training reviews
# (IMDB: 10 % held out for validation), all test reviews, 3 epochs, best epoch by validation macro-F1, 3 seeds; the
# shipped checkpoint fine-tuned (--init-from) beside the same model from scratch (its exact encoder fields, tokenizer
# and recipe, random weights). TF-IDF + LR and NBSVM on the same splits: benchmarks/classification/classification_full.sh.
# Usage: bash benchmarks/pretraining/pretraining_full.sh [GROUP ...]   (groups: imdb2 imdb8 imdb8-1024 yelp5; default imdb2;
#        ONLY='NAME|NAME' runs just those; DRY_RUN=1 lists them)
#        GROUP-softmax (imdb2-softmax, yelp5-softmax, ...): the control, the softmax Transformer pretrained the same
#        way (SOFTMAX_PRETRAINED, the shipped model's `train lm` command with --architecture softmax; docs/RESULTS.md)
#        fine-tuned on that group's set, and the same softmax classifier from scratch
#        python benchmarks/summarize_runs.py benchmarks/pretraining/results/pretraining-full   -> the table
# Runtimes, measured (IMDB-2 @512, one thread each): seed 2, beside a one-core summarization run, ~22 min an epoch and
# ~1.2 h a run with its evaluations (5,436 real tokens/s); seed 3, two runs side by side (JOBS=2), ~27 min an epoch,
# 2.0 GB a process. (Seed 1's ~50 min an epoch came before the run skeleton trimmed the heap: its processes grew to
# 9 GB.) The pretrained model is causal, and its classifier trains 1.5-1.8x slower a step than the same
# bidirectional encoder (the causal op's prefix scans): the 24 runs are ~30 h one at a time.
# A run killed with its session resumes from its last epoch's checkpoint (run_sweep.sh passes --resume).
set -euo pipefail
IMDB=${IMDB:-../shared/data/imdb/imdb_ratings.jsonl.gz}
YELP=${YELP:-../shared/data/yelp5}
PRETRAINED=${PRETRAINED:-pretrained/fastformer-imdb-clm}
SOFTMAX_PRETRAINED=${SOFTMAX_PRETRAINED:-pretrained/softmax-imdb-clm-control}
SEEDS=${SEEDS:-1 2 3}
JOBS=${JOBS:-2}  # two causal classifiers at 32 x 512 side by side: 2 GB each (before the heap trim: 9 GB, OOM)
THREADS=${THREADS:-1}
EPOCHS=${EPOCHS:-3}
OUT=${OUT:-runs/pretraining-full}
RESULTS=${RESULTS:-benchmarks/pretraining/results/pretraining-full}
GROUPS_=${*:-imdb2}
recipe="--epochs $EPOCHS --learning-rate 5e-4 --warmup 0.1"  # the probes' recipe, for both starts
imdb="--train $IMDB --where train:split=train --test $IMDB --where test:split=test --label-field rating $recipe"
yelp="--train $YELP/yelp_train_small.csv.gz --validation $YELP/yelp_dev.csv.gz --test $YELP/yelp_test.csv.gz $recipe"
# the pretrained model's encoder fields and tokenizer, for the from-scratch rows
# (a plain assignment, so that a folder encoder_flags.py cannot read stops the script under `set -e` instead of
# listing a "scratch" run with the default encoder)
scratch_flags() {
  local flags
  flags=$(python3 "$(dirname "$0")/encoder_flags.py" "$1/config.json") || exit 2
  echo "$flags --tokenizer $1"
}
scratch=$(scratch_flags $PRETRAINED)
jobs() {
  for group in $GROUPS_; do
    start=$PRETRAINED; from_scratch=$scratch
    case ${group%-softmax} in
      imdb2) data="$imdb --binary-threshold 7"; length=512 ;;
      imdb8) data="$imdb"; length=512 ;;
      imdb8-1024) data="$imdb"; length=1024 ;;
      yelp5) data="$yelp"; length=512 ;;  # named as the baselines' set (classification-full: yelp5-*)
      *) echo "unknown group $group" >&2; exit 2 ;;
    esac
    if [ "$group" != "${group%-softmax}" ]; then  # the softmax control on the same set, from its own pretraining
      data="$data --architecture softmax"; start=$SOFTMAX_PRETRAINED
      [ -f "$start/config.json" ] || { echo "$group: no $start/config.json (pretrain it first)" >&2; exit 2; }
      from_scratch=$(scratch_flags $start)
    fi
    for seed in $SEEDS; do
      echo "$group-pretrained-seed$seed $data --max-length $length --seed $seed --init-from $start"
      echo "$group-scratch-seed$seed $data --max-length $length --seed $seed $from_scratch"
    done
  done
}
source "$(dirname "$0")/../run_sweep.sh"
jobs | sweep
