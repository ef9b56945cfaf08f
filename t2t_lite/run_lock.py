"""One writing process per directory: a lock file naming its owner.

One trainer per run directory (`.t2t-train.lock`), one t2t-datagen per data
directory (DATAGEN_LOCK_FILE), one averaging at a time into a directory
(AVERAGE_LOCK_FILE, waited for); the same rules hold for all three.

`<output_dir>/.t2t-train.lock` holds the owner's host, pid and a heartbeat
time. A second trainer is refused with a line naming the owner. A lock whose
process is gone (same host), or whose heartbeat is older than STALE_AFTER_S
(another host, e.g. on shared storage), is taken over with a log line. Only
the chief of a multi-worker job takes the lock, for the whole job. Readers
(t2t-decode, t2t-avg-checkpoints, t2t-export) never need it: they read
complete checkpoints only. A lock nobody can read (empty, as a kill right
after its creation leaves it, or not a record) is stale once it is older
than UNREADABLE_GRACE_S; so is one whose pid now belongs to a process that
started after the lock did (the pid was reused).

On a local disk the lock is created with O_EXCL, so two trainers starting
at once cannot both get it; elsewhere it is written through tf.io.gfile and
read back, which is as close as those filesystems allow.
"""

import atexit
import json
import os
import time

import tensorflow as tf
from absl import logging

from t2t_lite import files

LOCK_FILE = ".t2t-train.lock"
DATAGEN_LOCK_FILE = ".t2t-datagen.lock"
AVERAGE_LOCK_FILE = ".t2t-average.lock"  # one averaging at a time into a directory
STALE_AFTER_S = 600.0
# A new lock is empty between its creation and its first write: only an
# unreadable lock older than this is taken for a dead trainer's.
UNREADABLE_GRACE_S = 5.0
HEARTBEAT_EVERY_S = 60.0


class RunLockedError(ValueError):
    """Another live trainer owns the run directory."""


class RunLock:
    """The lock of one run directory, held by this process."""

    def __init__(
        self,
        directory: str,
        lock_file: str = LOCK_FILE,
        writer: str = "trained",
        flag: str = "--output_dir",
    ):
        self.path = os.path.join(directory, lock_file)
        self.lock_file = lock_file
        self.writer, self.flag = writer, flag  # "is being <writer>"; the flag to change
        self.directory = directory
        self.held = False
        self._started = self._beat = time.time()

    def _record(self) -> str:
        record = {
            "host": files.HOST,
            "pid": os.getpid(),
            "started": self._started,
            "heartbeat": time.time(),
        }
        return json.dumps(record)

    def owner(self) -> dict | None:
        """The lock's record, or None when there is no (readable) lock."""
        try:
            with tf.io.gfile.GFile(self.path, "r") as f:
                record = json.loads(f.read())
        except (tf.errors.NotFoundError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def _mine(self, owner: dict) -> bool:
        return owner.get("host") == files.HOST and owner.get("pid") == os.getpid()

    def _stale(self, owner: dict) -> str:
        """Why the owner no longer holds the lock, or "" if it does."""
        pid = owner.get("pid")
        if owner.get("host") == files.HOST:
            if not isinstance(pid, int) or not files.process_alive(pid):
                return f"process {pid} on this host is not running"
            started = files.process_start_time(pid)
            locked = owner.get("started")
            if started is not None and isinstance(locked, int | float) and started > locked + 1:
                return f"pid {pid} now belongs to a process started after the lock was taken"
            return ""
        age = time.time() - float(owner.get("heartbeat", 0))
        if age > STALE_AFTER_S:
            return f"no heartbeat from {owner.get('host')} for {age:.0f} s"
        return ""

    def acquire(self) -> None:
        """Takes the lock, or raises RunLockedError naming its live owner.

        First removes `<lock>.<pid>@<host>@` files that a process killed
        between writing and renaming its record left (dead owners only).
        """
        files.remove_leftovers(self.directory, f"{self.lock_file}.")
        owner = self.owner()
        unreadable = owner is None and tf.io.gfile.exists(self.path)
        if unreadable:
            age = time.time() - tf.io.gfile.stat(self.path).mtime_nsec / 1e9
            if age < UNREADABLE_GRACE_S:
                raise RunLockedError(
                    f"{self.directory!r}: another process is taking the lock {self.path} "
                    f"right now; wait for it to finish or use another {self.flag}"
                )
            logging.warning("Taking over the unreadable lock %s (no owner in it).", self.path)
        if owner is not None and not self._mine(owner):
            reason = self._stale(owner)
            if not reason:
                raise RunLockedError(
                    f"{self.directory!r} is being {self.writer} by pid {owner.get('pid')} on "
                    f"{owner.get('host')} (lock file {self.path}); wait for it to finish or use "
                    f"another {self.flag}"
                )
            logging.warning("Taking over the stale lock %s: %s.", self.path, reason)
        self._write(fresh=owner is None and not unreadable)
        owner = self.owner()
        if owner is None or not self._mine(owner):
            raise RunLockedError(f"{self.directory!r}: another process took {self.path} first")
        self.held = True
        self._beat = time.time()
        atexit.register(self.release)  # also when set-up fails after this point

    def acquire_waiting(self, timeout_s: float, poll_s: float = 0.5) -> None:
        """acquire, waiting up to timeout_s for a live owner to release the lock;
        then RunLockedError naming it."""
        deadline = time.time() + timeout_s
        while True:
            try:
                return self.acquire()
            except RunLockedError:
                if time.time() >= deadline:
                    raise
                time.sleep(poll_s)

    def _write(self, fresh: bool) -> None:
        record = self._record()
        if not files.scheme(self.path) and fresh:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return  # someone else won the race; acquire's read-back refuses
            with os.fdopen(fd, "w") as f:
                f.write(record)
            return
        temporary = f"{self.path}.{files.owner_tag()}"
        with tf.io.gfile.GFile(temporary, "w") as f:
            f.write(record)
        tf.io.gfile.rename(temporary, self.path, overwrite=True)

    def heartbeat(self) -> None:
        """Refreshes the heartbeat (at most every HEARTBEAT_EVERY_S) while training."""
        if self.held and time.time() - self._beat > HEARTBEAT_EVERY_S:
            self._write(fresh=False)
            self._beat = time.time()

    def release(self) -> None:
        """Removes the lock if this process holds it."""
        if not self.held:
            return
        owner = self.owner()
        if owner is not None and self._mine(owner):
            tf.io.gfile.remove(self.path)
        self.held = False
