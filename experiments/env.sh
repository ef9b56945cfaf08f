# Shared settings for the lab notebooks' run scripts (sourced, not run).
#   EXP   root of data, run directories and snapshot installs (default /tmp/t2t_exp)
#   SNAP  snapshot install whose binaries a script runs (default "snap": $EXP/snap/venv/bin;
#         "path": whatever t2t-train is on PATH)
# One intra-op thread per run, at the lowest priority (nice 19; where the
# kernel groups by session, lab.sh lowers each lane's session too), so that a
# run gives way to whatever else the machine runs (a test suite, CI); a run is
# pinned to a core with `taskset` when the script is given one.
EXP=${EXP:-/tmp/t2t_exp}
SNAP=${SNAP:-snap}
if [ "$SNAP" = path ]; then
    BIN=$(dirname "$(command -v t2t-train)")
else
    BIN=$EXP/$SNAP/venv/bin
fi
export TF_NUM_INTRAOP_THREADS=1 TF_CPP_MIN_LOG_LEVEL=2
pin() {  # pin <core or ""> <command...>
    local core=$1
    shift
    [ -z "$core" ] || set -- taskset -c "$core" "$@"
    nice -n 19 "$@"
}
