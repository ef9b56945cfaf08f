#!/usr/bin/env bash
# Runs every test whose assertions depend on the outcome of training (marker
# `trains`, slow ones included) under three numerics configurations:
#   default           oneDNN as TensorFlow chooses, all cores, --train-seed=1
#   onednn_off        TF_ENABLE_ONEDNN_OPTS=0 (Eigen kernels), --train-seed=1
#   one_thread_seed2  TF_NUM_INTRAOP_THREADS=1 (other reduction orders), --train-seed=2
# A test suite that passes only under one of them has a threshold on a knife's
# edge. Usage: bash tests/numerics_check.sh [extra pytest args, e.g. -m "trains and not slow"]
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
status=0
run() {  # name, seed, then VAR=value settings for the environment
  local name=$1 seed=$2
  shift 2
  echo "== $name"
  env "$@" "$python" -m pytest -q -p no:cacheprovider tests -m trains --train-seed="$seed" \
    "${extra[@]}" || status=1
}
extra=("$@")
run default 1
run onednn_off 1 TF_ENABLE_ONEDNN_OPTS=0
run one_thread_seed2 2 TF_NUM_INTRAOP_THREADS=1
exit $status
