#!/usr/bin/env bash
# The distilled student topped up on what a news encoder reads: end-to-end distillation (the student's own stack and
# its mean-pooled embedding against all-MiniLM-L6-v2's) on ~15-token "category | title" texts of the news
# recommendation's training split (runs/news-mind/mind-valid) and MIND's 2,000-news sample, every text that is also a
# test-split text dropped (--exclude); then the news rows with it as the news encoder
# (`news-fastformer-student-titles-lrdD-seedS`, otherwise as benchmarks/news/news_mind_vectors.sh's student rows).
# Why: the shipped student was distilled on 256-token pieces, and on MIND its click AUC trails its teacher's by 1.5-3.
# Usage: bash benchmarks/distill/news_titles.sh        (SEEDS="1 2 3", LAYER_LR_DECAYS=0.2, JOBS=2, one thread each)
#        ONLY='news-fastformer-student-titles-lrd0.2-seed1' bash benchmarks/distill/news_titles.sh
#        STUDENT=DIR (the start; default the shipped student) DISTILLED=DIR (the topped-up student's folder)
# Distillation: 4,120 titles (2,766 dropped as test texts), 3 epochs, 387 steps, 247 s on one thread; its held-out
# titles against the shipped student's: python benchmarks/distill/layer_errors.py (its docstring has the command).
set -euo pipefail
STUDENT=${STUDENT:-pretrained/fastformer-minilm-l6-distilled}
TEACHER=${TEACHER:-runs/minilm-softmax}
OUT=${DISTILLED:-runs/distill/student-news-titles}
source "$(dirname "$0")/../run_sweep.sh"
distill_on_titles() {  # the corpora (test texts apart) and the distillation, once
  mind_folders ../shared/data/mind runs/news-mind  # the MIND folders news_mind_vectors.sh reads
  python benchmarks/distill/news_titles.py runs/news-titles-train.jsonl runs/news-mind/mind-valid \
    ../shared/data/mind/news_sample.tsv.gz
  python benchmarks/distill/news_titles.py runs/news-titles-test.jsonl runs/news-mind/mind-test
  converted_teacher "$TEACHER"
  [ -f "$OUT/metrics.json" ] && return 0
  OMP_NUM_THREADS=${THREADS:-1} fastformer train distill --teacher "$TEACHER" --init-from "$STUDENT" \
    --stage end-to-end --train runs/news-titles-train.jsonl --exclude runs/news-titles-test.jsonl \
    --validation-fraction 0.05 --block-size 64 --min-block-tokens 1 --batch-size 32 --learning-rate 1e-4 \
    --epochs 3 --evaluations 6 --bf16 --seed 1 --no-progress --resume --output-dir "$OUT"
}
[ "${DRY_RUN:-0}" = 1 ] || distill_on_titles  # (a DRY_RUN lists the news rows alone)
PRETRAINED=1 STUDENT="$OUT" STUDENT_TAG=-titles LAYER_LR_DECAYS=${LAYER_LR_DECAYS:-0.2} \
  ONLY=${ONLY:-'news-fastformer-student-titles-lrd.*'} bash "$(dirname "$0")/../news/news_mind_vectors.sh"
