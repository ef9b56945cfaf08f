#!/bin/bash
# Generates a problem's files into a data directory once (under a lock, so two
# runs started together do not race): datagen_once.sh <problem> <data_dir> [datagen flags]
set -euo pipefail
. "$(dirname "$0")/env.sh"
problem=$1
data_dir=$2
shift 2
mkdir -p "$data_dir"
(
    flock 9
    if ! ls "$data_dir/$problem"-train-* >/dev/null 2>&1; then
        "$BIN/t2t-datagen" --problem="$problem" --data_dir="$data_dir" "$@"
    fi
) 9>"$data_dir/.datagen-$problem.lock"
