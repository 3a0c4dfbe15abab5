#!/usr/bin/env bash
# General distillation of all-MiniLM-L6-v2 into a Fastformer of its size (issue 44), one stage per call:
#   bash benchmarks/distill/run.sh layerwise     # each layer from the teacher's input (runs/distill/minilm-layerwise)
#   bash benchmarks/distill/run.sh end-to-end    # then the whole student (--init-from the layerwise run)
# Resumable: a run killed at a session's end continues from its last checkpoint when called again (RESUME=1).
# START=FOLDER: the end-to-end stage's start (default the finished layerwise run; the first run used
# runs/distill/minilm-layerwise-1000, the layerwise run's step-1000 checkpoint: config, weights and tokenizer copied).
# LOCAL_MIXING=K: the student with local mixing (`--model local_mixing=K`, identity-initialised, so its start is the
# same), written to runs/distill/minilm-<stage>-local-mixing-K.
# One thread each (two runs may share the 2 cores). Needs runs/distill-corpus.jsonl.gz
# (python benchmarks/distill/corpus.py runs/distill-corpus.jsonl.gz) and the converted folders
# (fastformer convert-bert MODEL_ZIP runs/minilm-fastformer --max-positions 8192; ... runs/minilm-softmax --attention softmax).
set -euo pipefail
stage="${1:?layerwise or end-to-end}"
IMDB=../shared/data/imdb
export OMP_NUM_THREADS=1
case "$stage" in
  layerwise) start=runs/minilm-fastformer; out=runs/distill/minilm-layerwise; steps=2000; lr=2e-4 ;;
  end-to-end) start=${START:-runs/distill/minilm-layerwise}; out=runs/distill/minilm-end-to-end; steps=2000; lr=1e-4 ;;
  *) echo "unknown stage $stage" >&2; exit 2 ;;
esac
model=()
if [ -n "${LOCAL_MIXING:-}" ]; then model=(--model "local_mixing=$LOCAL_MIXING"); out="$out-local-mixing-$LOCAL_MIXING"; fi
resume=()
[ "${RESUME:-0}" = 1 ] && resume=(--resume)
fastformer train distill --teacher runs/minilm-softmax --init-from "$start" --stage "$stage" \
  --train runs/distill-corpus.jsonl.gz --exclude "$IMDB/imdb_ratings.jsonl.gz" --where exclude:split=test \
  --max-eval-texts 200 --block-size 256 --batch-size 16 --learning-rate "$lr" --max-steps "$steps" \
  --evaluations 10 --bf16 --seed 1 --no-progress --output-dir "$out" "${model[@]}" "${resume[@]}"
