"""A training budget that two programs can share: run a command until it has
used N minutes of CPU (or of wall clock), then SIGTERM it.

A head-to-head of two trainers (t2t_lite's and a peer's) gives each the same
budget. On a machine that also runs other work, wall-clock time is not the
same for both: whatever else runs takes it from them unevenly. CPU time of
the process tree (the process, its live descendants and the children it has
reaped) is what each side actually received, whatever else ran beside it.

The minutes spent are kept in a small JSON file after every poll, so that a
stopped run resumed with the same file gets only what is left (a trainer
that resumes from its checkpoint: t2t-train; one that cannot resume starts
over and should be given a fresh file).
"""

import json
import os
import signal
import subprocess
import time

CLOCKS = ("cpu", "wall")
POLL_S = 2.0
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: split after its closing parenthesis.
    return text[text.rindex(")") + 2 :].split()


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of `root`, its live descendants and the
    children each has reaped."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(name))  # fields[1]: ppid
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        fields = _stat(pid)
        if fields:
            # utime, stime, cutime, cstime: fields 14-17 of stat, 11-14 after the name.
            total += sum(int(v) for v in fields[11:15])
        todo.extend(children.get(pid, []))
    return total / TICKS


def _load(path: str | None) -> float:
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return float(json.load(f)["seconds"])
    return 0.0


def _save(path: str | None, seconds: float, clock: str) -> None:
    if path:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"seconds": round(seconds, 1), "clock": clock}, f)
        os.replace(path + ".tmp", path)


def run(
    command: list[str], minutes: float, clock: str = "cpu", spent_path: str | None = None, **popen
) -> dict:
    """Runs `command` until it exits or has used `minutes` (minus what
    `spent_path` says earlier runs used) of `clock`; then SIGTERM, and waits for
    it to save and exit. -> {"seconds": spent in all, "wall_seconds": this
    run's, "stopped": whether the budget stopped it, "returncode"}."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {clock!r}")
    earlier = _load(spent_path)
    start = time.monotonic()
    if earlier >= minutes * 60:  # spent before a stop: nothing left to run
        return {"seconds": round(earlier, 1), "wall_seconds": 0.0, "stopped": True, "returncode": 0}
    process = subprocess.Popen(command, **popen)
    spent, stopped = earlier, False
    while process.poll() is None:
        used = tree_cpu_seconds(process.pid) if clock == "cpu" else time.monotonic() - start
        if used > 0:
            spent = earlier + used
        _save(spent_path, spent, clock)
        if spent >= minutes * 60 and not stopped:
            process.send_signal(signal.SIGTERM)
            stopped = True
        time.sleep(POLL_S)
    _save(spent_path, spent, clock)
    return {
        "seconds": round(spent, 1),
        "wall_seconds": round(time.monotonic() - start, 1),
        "stopped": stopped,
        "returncode": process.returncode,
    }
