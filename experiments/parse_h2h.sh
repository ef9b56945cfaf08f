#!/bin/bash
# The parsing head-to-head (docs/parsing.md, round 6): for each seed, the peer
# (bench/parser_peer.py) and the recipe (bench/parser_recipe.py) train at the
# same time, one thread each, each on its own core at the lowest priority,
# with the same budget of CPU minutes, then parse and score the test file.
#   parse_h2h.sh DATA TREEBANK_SRC PEER_PYTHON MINUTES SEED...
# EXP/h2h/<side>/seed<k> holds each run (result.json once finished; a queue run
# again skips those, and the recipe's runs resume from their checkpoints).
# Runs the snapshot's code ($EXP/$SNAP): bench/ from its worktree, its venv.
set -euo pipefail
. "$(dirname "$0")/env.sh"
data=$1 source=$2 peer_python=$3 minutes=$4
shift 4
code=$EXP/$SNAP
py=$BIN/python
mkdir -p "$EXP/h2h/logs"
for seed in "$@"; do
    pin 0 "$py" "$code/bench/parser_peer.py" --data_dir="$data" \
        --problem=parsing_from_files_labels --source="$source" --python="$peer_python" \
        --minutes="$minutes" --clock=cpu --threads=1 --seed="$seed" \
        --work_dir="$EXP/h2h/peer/seed$seed" >>"$EXP/h2h/logs/peer.out" 2>&1 &
    peer=$!
    pin 1 "$py" "$code/bench/parser_recipe.py" --data_dir="$data" \
        --minutes="$minutes" --clock=cpu --threads=1 --seed="$seed" \
        --output_dir="$EXP/h2h/ours/seed$seed" >>"$EXP/h2h/logs/ours.out" 2>&1 &
    ours=$!
    wait "$peer" "$ours" || true
    echo "seed $seed done $(date -u +%H:%M)" >>"$EXP/h2h/logs/queue.out"
done
