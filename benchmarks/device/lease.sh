# The set-up every lease script shares (sourced, with WORK and BUDGET defaults set before): $OUT (default
# runs/device, what the device tool brings back) with log.txt, an empty $WORK, the checkout's src/ on PYTHONPATH
# (with /tmp/site, where a script installs wheels it carried), $PY, and `say`, `left`, `ff` (python -m fastformer).
set -u
OUT=${OUT:-runs/device}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(pwd)
rm -rf "$WORK" && mkdir -p "$WORK"
export PYTHONPATH="$ROOT/src:/tmp/site" PYTHONUNBUFFERED=1
PY=${PY:-python3}
LOG="$OUT/log.txt"
START=$(date +%s)
left() { echo $((START + BUDGET - $(date +%s))); }  # seconds of the budget left
say() { echo "== $(($(date +%s) - START)) s: $*" | tee -a "$LOG"; }
ff() { "$PY" -m fastformer "$@"; }
