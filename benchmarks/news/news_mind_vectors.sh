#!/usr/bin/env bash
# News recommendation with the paper's inputs: word-level titles with GloVe 6B-50d vectors in the news encoder,
# otherwise benchmarks/news/news_mind.sh's setting (real MIND clicks converted from MINDRec; "category | title"; one layer
# per encoder; Adam 1e-4; batch 32; 5 epochs; best epoch by validation AUC); and the same models with PP-Rec's
# popularity score added (`--popularity`: each candidate's clicks in the training impressions, bucketed, scored).
# Usage: bash benchmarks/news/news_mind_vectors.sh   (SEEDS="1 2 3"; results in benchmarks/news/results/news-mind/)
# Table beside the rankers without learning: python benchmarks/summarize_runs.py benchmarks/news/results/news-mind
# PRETRAINED=1 adds the shipped distilled student as the news encoder (--init-from
# pretrained/fastformer-minilm-l6-distilled: its WordPiece titles, a fresh user encoder; bf16 autocast), the same
# recipe otherwise; ONLY='news-fastformer-student-seed1' runs just that one), and its teacher all-MiniLM-L6-v2
# converted exactly (runs/minilm-softmax, made from the package's model.zip if missing) as a softmax news encoder.
# LAYER_LR_DECAYS="0.5 0.2" adds student rows whose pretrained layers learn slower (--layer-lr-decay: the top one at
# 1e-4 x d, each below x d again), against the overfitting the first student row showed. With PRETRAINED=1, each seed
# whose teacher row has finished also lists the student taught by that teacher (`news-fastformer-student-kd-seedS`,
# and `-kd-lrdD-` with each LAYER_LR_DECAYS value): TinyBERT's task distillation on the click rows; DISTILL_HIDDEN="1"
# adds its intermediate layers too (`news-fastformer-student-kdhH-lrdD-seedS`: --distill-hidden H, the news encoder's
# hidden states against the teacher's). JOBS=1 runs a seed's taught students in the same campaign as their teacher.
# STUDENT=FOLDER STUDENT_TAG=-NAME: another student, its rows named news-fastformer-student-NAME-...
set -euo pipefail
DATA=${DATA:-../shared/data/mind}
SEEDS=${SEEDS:-1 2 3}
JOBS=${JOBS:-2}
THREADS=${THREADS:-1}
OUT=${OUT:-runs/news-mind-vectors}
RESULTS=${RESULTS:-benchmarks/news/results/news-mind}
ROOT=runs/news-mind
STUDENT=${STUDENT:-pretrained/fastformer-minilm-l6-distilled}
TEACHER=${TEACHER:-runs/minilm-softmax}
TAG=${STUDENT_TAG:-}
source "$(dirname "$0")/../run_sweep.sh"
mind_folders "$DATA" "$ROOT"
jobs() {
  for seed in $SEEDS; do
    for arch in fastformer softmax; do
      run="news --train $ROOT/mind-valid --test $ROOT/mind-test --architecture $arch --news-fields category,title \
 --epochs 5 --batch-size 32 --learning-rate 1e-4 --word-vectors glove-6b-50d --seed $seed --logging-steps 5"
      echo "news-$arch-glove-seed$seed $run"
      echo "news-$arch-glove-popularity-seed$seed $run --popularity"
    done
    if [ "${PRETRAINED:-0}" = 1 ]; then
      tuned="news --train $ROOT/mind-valid --test $ROOT/mind-test --news-fields category,title --epochs 5 \
 --batch-size 32 --learning-rate 1e-4 --seed $seed --logging-steps 5 --bf16"
      echo "news-fastformer-student$TAG-seed$seed $tuned --init-from $STUDENT"
      echo "news-softmax-teacher-seed$seed $tuned --init-from $TEACHER --architecture softmax"
      for decay in ${LAYER_LR_DECAYS:-}; do  # the pretrained layers slowed, the fresh user encoder at 1e-4
        echo "news-fastformer-student$TAG-lrd$decay-seed$seed $tuned --init-from $STUDENT --layer-lr-decay $decay"
      done
      # task distillation: the teacher row of the same seed (same held-out impressions), once it has finished, teaches
      # the student its click distribution over each row's candidates (--teacher; weight 0.5, temperature 2)
      if [ -f "$OUT/news-softmax-teacher-seed$seed/metrics.json" ] || [ "${DRY_RUN:-0}" = 1 ]; then
        taught="$tuned --init-from $STUDENT --teacher $OUT/news-softmax-teacher-seed$seed"
        echo "news-fastformer-student$TAG-kd-seed$seed $taught"
        for decay in ${LAYER_LR_DECAYS:-}; do
          echo "news-fastformer-student$TAG-kd-lrd$decay-seed$seed $taught --layer-lr-decay $decay"
          for hidden in ${DISTILL_HIDDEN:-}; do
            echo "news-fastformer-student$TAG-kdh$hidden-lrd$decay-seed$seed $taught --layer-lr-decay $decay \
 --distill-hidden $hidden"
          done
        done
      fi
    fi
  done
}
if [ "${PRETRAINED:-0}" = 1 ]; then converted_teacher "$TEACHER"; fi
sweep_relisting jobs  # ONLY='NAME|NAME': just these runs (JOBS=1: a run listed once its teacher finished joins)
