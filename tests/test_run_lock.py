"""The run lock's stale cases: unreadable locks and reused pids."""

import json
import os
import time

import pytest

from t2t_lite import files, run_lock


@pytest.mark.parametrize("content", ["", "[1]", "{not json", "null"])
def test_an_unreadable_lock_is_taken_over_once_it_is_not_new(tmp_path, content, caplog):
    """A kill right after the lock file's creation leaves it empty; it must not block forever."""
    path = tmp_path / run_lock.LOCK_FILE
    path.write_text(content)
    lock = run_lock.RunLock(str(tmp_path))
    with pytest.raises(run_lock.RunLockedError, match="taking the lock .* right now"):
        lock.acquire()  # just created: maybe a trainer between creating and writing it
    old = time.time() - run_lock.UNREADABLE_GRACE_S - 1
    os.utime(path, (old, old))
    caplog.set_level("WARNING")
    lock.acquire()
    assert "Taking over the unreadable lock" in caplog.text
    assert lock.owner()["pid"] == os.getpid()
    lock.release()


def test_a_lock_whose_pid_was_reused_is_stale(tmp_path, caplog):
    """The recorded pid is alive (the parent process) but started after the lock
    was taken: the pid was reused by another process."""
    parent = os.getppid()
    parent_started = files.process_start_time(parent)
    assert parent_started is not None and parent_started < time.time()
    record = {"host": files.HOST, "pid": parent, "started": parent_started - 100, "heartbeat": 0}
    (tmp_path / run_lock.LOCK_FILE).write_text(json.dumps(record))
    caplog.set_level("WARNING")
    lock = run_lock.RunLock(str(tmp_path))
    lock.acquire()
    assert "now belongs to a process started after the lock" in caplog.text
    lock.release()
    record["started"] = time.time()  # taken after the parent started: a live owner
    (tmp_path / run_lock.LOCK_FILE).write_text(json.dumps(record))
    with pytest.raises(run_lock.RunLockedError, match=f"pid {parent}"):
        run_lock.RunLock(str(tmp_path)).acquire()


def test_a_dead_writers_temporary_lock_record_is_removed(tmp_path):
    """A kill between writing `<lock>.<pid>@<host>@` and renaming it left that file
    for good; a live process's temporary record is not touched."""
    dead = tmp_path / f"{run_lock.LOCK_FILE}.{2**22 + 1}@{files.HOST}@"
    live = tmp_path / f"{run_lock.LOCK_FILE}.{os.getppid()}@{files.HOST}@"
    dead.write_text("{}")
    live.write_text("{}")
    lock = run_lock.RunLock(str(tmp_path))
    lock.acquire()
    lock.release()
    assert sorted(os.listdir(tmp_path)) == [live.name]
