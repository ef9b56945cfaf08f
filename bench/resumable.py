"""A side-by-side benchmark's work directory that a rerun of the same command continues.

Hours-long comparisons outlive a session: rerun the command and each side
goes on from its newest checkpoint. What makes that honest is kept in the
work directory: the settings it was started with (`bench.json`; a rerun
with other settings, or other input files, is refused, since its figures
would mix two comparisons) and each side's wall time so far
(`wall_seconds.json`, saved while the sides run, so a bench that is killed
loses at most a few seconds of its ledger), with the time at which each of
its checkpoints appeared. A rerun goes on from a side's newest checkpoint,
so its time restarts from that checkpoint's: work done after it and lost
with the stop is redone, not charged twice (OpenNMT-py saves nothing as it
stops). Only the budget (steps, minutes) may change between runs.
"""

import hashlib
import json
import os
import signal
import subprocess
import time

from t2t_lite import files

SETTINGS_FILE = "bench.json"
WALL_FILE = "wall_seconds.json"


def file_identity(path: str) -> str:
    """An input file as a setting: its absolute path and a hash of its bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return f"{os.path.abspath(path)} sha256:{digest.hexdigest()[:16]}"


def check_settings(work: str, settings: dict) -> None:
    """Records `settings` in a new work directory; in a used one, a ValueError
    naming the first flag whose value differs from the one it was started with."""
    path = os.path.join(work, SETTINGS_FILE)
    settings = json.loads(json.dumps(settings))  # tuples -> lists, as they come back
    if not os.path.exists(path):
        files.write_atomically(path, json.dumps(settings, indent=1, sort_keys=True))
        return
    with open(path, encoding="utf-8") as f:
        kept = json.load(f)
    for key in sorted(set(kept) | set(settings)):
        if kept.get(key) != settings.get(key):
            raise ValueError(
                f"--{key}: {work} holds a comparison started with {kept.get(key)!r}, "
                f"not {settings.get(key)!r}; rerun with its settings to continue it "
                "(only --steps and --minutes may change), or name a new --work_dir"
            )


class WallClock:
    """Each side's wall seconds over every run of the bench in one work directory,
    and the seconds at which each of its checkpoints (by step) appeared."""

    def __init__(self, work: str):
        self.path = os.path.join(work, WALL_FILE)
        self.before: dict[str, float] = {}
        self.marks: dict[str, dict[int, float]] = {}
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                kept = json.load(f)
            if "seconds" not in kept:  # a ledger of totals only, as first written
                kept = {"seconds": kept, "checkpoints": {}}
            self.before = {name: float(s) for name, s in kept["seconds"].items()}
            self.marks = {
                name: {int(step): float(s) for step, s in marks.items()}
                for name, marks in kept["checkpoints"].items()
            }
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}

    def mark(self, name: str, steps: list[int]) -> None:
        """Notes the time so far as that of each checkpoint of `steps` not seen before."""
        marks = self.marks.setdefault(name, {})
        for step in steps:
            marks.setdefault(step, self.total(name))

    def at(self, name: str, step: int) -> float | None:
        """The seconds `name` had run when its checkpoint of `step` appeared, if seen."""
        return self.marks.get(name, {}).get(step)

    def rewind(self, name: str, step: int) -> None:
        """Before `name` goes on from its checkpoint of `step`: its time so far becomes
        that checkpoint's, where it was seen; marks of later steps, whose
        checkpoints a stop lost, go with it."""
        seconds = self.at(name, step)
        if seconds is None:
            return
        self.before[name] = seconds
        self.marks[name] = {s: t for s, t in self.marks[name].items() if s <= step}

    def start(self, name: str) -> None:
        self.started[name] = time.perf_counter()

    def stop(self, name: str) -> None:
        self.ended[name] = time.perf_counter()

    def total(self, name: str) -> float:
        """Seconds `name` ran in earlier runs and in this one (so far, while it runs)."""
        now = self.ended.get(name, time.perf_counter())
        running = now - self.started[name] if name in self.started else 0.0
        return round(self.before.get(name, 0.0) + running, 1)

    def save(self) -> None:
        names = set(self.before) | set(self.started) | set(self.marks)
        kept = {
            "seconds": {n: self.total(n) for n in sorted(names)},
            "checkpoints": {
                n: {str(step): s for step, s in sorted(marks.items())}
                for n, marks in sorted(self.marks.items())
            },
        }
        files.write_atomically(self.path, json.dumps(kept))


def pinned(command: list[str], core: int | None) -> list[str]:
    """`command` held to one core (taskset, where there is one)."""
    if core is not None and os.path.exists("/usr/bin/taskset"):
        return ["taskset", "-c", str(core), *command]
    return command


ONE_THREAD = {"TF_NUM_INTRAOP_THREADS": "1", "OMP_NUM_THREADS": "1"}


def start(command: list[str], log: str, core: int | None, env: dict | None = None):
    """Starts a side's command pinned to one core, with one thread, its output
    appended to log -> (process, log handle)."""
    handle = open(log, "a")  # noqa: SIM115 (closed by the caller's wait); a rerun appends
    env = {**os.environ, **ONE_THREAD, **(env or {})}
    process = subprocess.Popen(
        pinned(command, core), stdout=handle, stderr=subprocess.STDOUT, env=env
    )
    return process, handle


def wait(jobs: dict, clock: WallClock, saved: dict | None = None) -> None:
    """Waits for each side's end ({name: (process, log handle)}), keeping the
    wall-time ledger as they run, and the time of each checkpoint that
    saved[name]() (-> its steps) lists. A SIGTERM or Ctrl-C stops every side
    (each keeps what it saved; t2t-train saves a checkpoint as it stops) and
    exits: the same command continues."""
    saved = {name: steps for name, steps in (saved or {}).items() if name in jobs}
    # Checkpoints from before this run keep the time they were seen at, or none.
    before = {name: set(steps()) for name, steps in saved.items()}

    def mark():
        for name, steps in saved.items():
            clock.mark(name, [step for step in steps() if step not in before[name]])

    def collect() -> None:
        """Each side that has ended since: its clock stops there, at its own end."""
        for name, (process, handle) in jobs.items():
            if name not in clock.ended and process.poll() is not None:
                handle.close()
                clock.stop(name)

    def stop(number, frame):
        for process, _ in jobs.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        while any(name not in clock.ended for name in jobs):
            mark()  # t2t-train's checkpoint as it stops, at the time it appears
            collect()
            time.sleep(0.1)
        mark()
        clock.save()
        raise SystemExit(f"stopped by signal {number}; rerun to continue")

    previous = {n: signal.signal(n, stop) for n in (signal.SIGTERM, signal.SIGINT)}
    try:
        last_save = time.perf_counter()
        while any(name not in clock.ended for name in jobs):  # side by side: each one's end
            mark()
            collect()
            if time.perf_counter() - last_save > 30:
                clock.save()
                last_save = time.perf_counter()
            time.sleep(1.0)
        mark()
        clock.save()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
