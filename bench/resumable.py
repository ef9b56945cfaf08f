"""A side-by-side benchmark's work directory that a rerun of the same command continues.

Hours-long comparisons outlive a session: rerun the command and each side
goes on from its newest checkpoint. What makes that honest is kept in the
work directory: the settings it was started with (`bench.json`; a rerun
with other settings, or other input files, is refused, since its figures
would mix two comparisons) and each side's wall time so far
(`wall_seconds.json`, saved while the sides run, so a bench that is killed
loses at most a few seconds of its ledger). Only the budget (steps,
minutes) may change between runs.
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
    """Each side's wall seconds over every run of the bench in one work directory."""

    def __init__(self, work: str):
        self.path = os.path.join(work, WALL_FILE)
        self.before: dict[str, float] = {}
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.before = {name: float(s) for name, s in json.load(f).items()}
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}

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
        names = set(self.before) | set(self.started)
        files.write_atomically(self.path, json.dumps({n: self.total(n) for n in sorted(names)}))


def start(command: list[str], log: str, core: int | None, env: dict | None = None):
    """Starts a side's command pinned to one core (taskset, where there is one), with
    one thread, its output appended to log -> (process, log handle)."""
    if core is not None and os.path.exists("/usr/bin/taskset"):
        command = ["taskset", "-c", str(core), *command]
    handle = open(log, "a")  # noqa: SIM115 (closed by the caller's wait); a rerun appends
    env = {**os.environ, "TF_NUM_INTRAOP_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env), handle


def wait(jobs: dict, clock: WallClock) -> None:
    """Waits for each side's end ({name: (process, log handle)}), keeping the
    wall-time ledger as they run. A SIGTERM or Ctrl-C stops every side (each
    keeps what it saved; t2t-train saves a checkpoint as it stops) and exits:
    the same command continues."""

    def stop(number, frame):
        for process, _ in jobs.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name, (process, handle) in jobs.items():
            process.wait()
            handle.close()
            if name not in clock.ended:
                clock.stop(name)
        clock.save()
        raise SystemExit(f"stopped by signal {number}; rerun to continue")

    previous = {n: signal.signal(n, stop) for n in (signal.SIGTERM, signal.SIGINT)}
    try:
        last_save = time.perf_counter()
        while any(name not in clock.ended for name in jobs):  # side by side: each one's end
            for name, (process, handle) in jobs.items():
                if name not in clock.ended and process.poll() is not None:
                    handle.close()
                    clock.stop(name)
            if time.perf_counter() - last_save > 30:
                clock.save()
                last_save = time.perf_counter()
            time.sleep(1.0)
        clock.save()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
