#!/bin/bash
# docs/length_depth.md round 17: the state table's runs as one job queue.
#   state_queue.sh <core>       (start one per core; started again, it resumes)
# Jobs are queue_lib.sh's, in $QUEUE (default $EXP/qs), each
# "<row>:<problem>:<seed>": one run of `t2t-compare --models=<row>` (a row of
# `state_table`), 12,000 steps, evaluated every 1,000 and saved every 250, into
# $OUT/seed<k> (default $EXP/state_table), the layout the table's one command
# (`t2t-compare --models=state_table --seeds=1,2,3 --missing=skip`) reads. JOBS
# gives the order. RECORDS=R keeps each job's figures in R (t2t-compare --records).
# KEEP_BEST=SPLIT/METRIC (round 41) keeps each run's best checkpoint by it
# (t2t-compare --keep_best) and records that checkpoint's figures; with
# LAST_RECORDS=L as well, a run whose last checkpoint has no record in L yet
# gets one there too (the same run read without --keep_best: decoded, not trained).
# STEPS (12000), EVAL_EVERY (1000) and HPARAMS (t2t-compare --hparams, none) set
# the budget for another table's rows in the same queue (round 42: addition).
set -uo pipefail
here=$(dirname "$0")
. "$here/env.sh"
. "$here/queue_lib.sh"
core=${1:-}
OUT=${OUT:-$EXP/state_table}
QUEUE=${QUEUE:-$EXP/qs}
KEEP_BEST=${KEEP_BEST:-}
LAST_RECORDS=${LAST_RECORDS:-}
STEPS=${STEPS:-12000}
EVAL_EVERY=${EVAL_EVERY:-1000}
HPARAMS=${HPARAMS:-}
compare() {  # compare <row> <problem> <seed> [flags]: the job's t2t-compare
    local row=$1 problem=$2 seed=$3
    shift 3
    pin "$core" "$BIN/t2t-compare" --problems="$problem" --models="$row" \
        --random_seed="$seed" --train_steps="$STEPS" --local_eval_frequency="$EVAL_EVERY" \
        --save_checkpoints_steps=250 --greedy_examples=-1 --data_dir="$EXP/algo" \
        ${HPARAMS:+--hparams="$HPARAMS"} --output_dir="$OUT/seed$seed" "$@"
}
state_job() {  # state_job <row>:<problem>:<seed>
    local row=${1%%:*} seed=${1##*:} problem
    problem=${1#*:}
    problem=${problem%:*}
    "$here/datagen_once.sh" "$problem" "$EXP/algo"
    compare "$row" "$problem" "$seed" ${RECORDS:+--records="$RECORDS"} \
        ${KEEP_BEST:+--keep_best="$KEEP_BEST"} || return
    if [ -n "$KEEP_BEST" ] && [ -n "$LAST_RECORDS" ] &&
        [ ! -e "$LAST_RECORDS/$problem/$row/seed$seed.json" ]; then
        compare "$row" "$problem" "$seed" --missing=skip --records="$LAST_RECORDS"
    fi
}
run_queue "$QUEUE" "${core:-any}" state_job ${JOBS:?JOBS: the jobs, "<row>:<problem>:<seed> ..."}
