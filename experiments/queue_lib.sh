# A job queue that lanes share (sourced by table3_queue.sh and state_queue.sh).
#   run_queue <queue dir> <lane name> <job function> <job>...
# A lane takes the first job that is neither done (<queue dir>/<job>.done) nor
# held by a live lane (flock on <queue dir>/<job>.lock), and runs
# `<job function> <job>`; a job whose lane died is taken again and resumes from
# its checkpoint. A job that fails, or that a signal stopped after saving
# (t2t-compare's status 143 or 130), stops the lane (status 1), not marked done.
run_queue() {
    local queue=$1 lane=$2 run_job=$3 job
    shift 3
    mkdir -p "$queue"
    for job in "$@"; do
        [ -e "$queue/$job.done" ] && continue
        exec 9>"$queue/$job.lock"
        flock -n 9 || continue  # another lane holds it
        [ -e "$queue/$job.done" ] && continue
        echo "$(date +%H:%M) lane $lane: $job"
        "$run_job" "$job"
        local status=$?
        if [ "$status" -ne 0 ]; then
            echo "$(date +%H:%M) lane $lane: $job stopped (status $status)"
            exit 1
        fi
        touch "$queue/$job.done"
        exec 9>&-
    done
}
