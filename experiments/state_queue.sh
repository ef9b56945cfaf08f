#!/bin/bash
# docs/length_depth.md round 17: the state table's runs as one job queue.
#   state_queue.sh <core>       (start one per core; started again, it resumes)
# Jobs are queue_lib.sh's, in $EXP/qs, each "<row>:<problem>:<seed>": one run
# of `t2t-compare --models=<row>` (a row of `state_table`), 12,000 steps,
# evaluated every 1,000 and saved every 250, into $EXP/state_table/seed<k>, the
# layout the table's one command (`t2t-compare --models=state_table
# --seeds=1,2,3 --missing=skip`) reads. JOBS gives the order. RECORDS=R keeps
# each job's figures in R (t2t-compare --records).
set -uo pipefail
here=$(dirname "$0")
. "$here/env.sh"
. "$here/queue_lib.sh"
core=${1:-}
state_job() {  # state_job <row>:<problem>:<seed>
    local row=${1%%:*} seed=${1##*:} problem
    problem=${1#*:}
    problem=${problem%:*}
    "$here/datagen_once.sh" "$problem" "$EXP/algo"
    pin "$core" "$BIN/t2t-compare" --problems="$problem" --models="$row" \
        --random_seed="$seed" --train_steps=12000 --local_eval_frequency=1000 \
        --save_checkpoints_steps=250 --greedy_examples=-1 --data_dir="$EXP/algo" \
        --output_dir="$EXP/state_table/seed$seed" ${RECORDS:+--records="$RECORDS"}
}
run_queue "$EXP/qs" "${core:-any}" state_job ${JOBS:?JOBS: the jobs, "<row>:<problem>:<seed> ..."}
