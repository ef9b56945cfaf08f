"""Atomic writes: each writer's own temporary file, flushed before the rename."""

import os
import socket

import tensorflow as tf

from t2t_lite import files


def test_two_writers_of_one_path_never_touch_each_others_temporary_file(tmp_path, monkeypatch):
    """Writer B starts and finishes while writer A is between its write and its
    rename: both renames succeed, the last one wins whole, nothing is left."""
    path = str(tmp_path / "metrics.json")
    rename, nested = tf.io.gfile.rename, []

    def renaming(source, target, overwrite=False):
        if not nested:  # A's rename: B runs first
            nested.append(source)
            files.write_atomically(path, "B" * 1000)
            assert files.read_text(path) == "B" * 1000
        rename(source, target, overwrite=overwrite)

    monkeypatch.setattr(tf.io.gfile, "rename", renaming)
    files.write_atomically(path, "A" * 10)
    assert files.read_text(path) == "A" * 10
    assert os.listdir(tmp_path) == ["metrics.json"]


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(tmp_path):
    gone = 2**22 + 1  # a pid no process has
    leftover = tmp_path / f"x.json{files.INCOMPLETE}{gone}@{files.HOST}@0"
    leftover.write_text("half")
    other = tmp_path / f"y.json{files.INCOMPLETE}{gone}@{files.HOST}@0"  # another file's
    other.write_text("half")
    live = tmp_path / f"z.json{files.INCOMPLETE}{os.getpid()}@{files.HOST}@0"  # a live writer's
    live.write_text("half")
    files.write_atomically(str(tmp_path / "x.json"), "{}")
    # The first write into a directory removes dead writers' leftovers of any file there.
    assert sorted(os.listdir(tmp_path)) == ["x.json", live.name]


def test_a_pid_counts_only_in_its_own_process_space_and_while_not_reused(tmp_path):
    # The host name is qualified by the PID namespace: another container's pid is
    # "another host" (judged by age), never taken for a local process.
    assert files.HOST.startswith(socket.gethostname())
    assert files.HOST != socket.gethostname() or not os.path.exists("/proc/self/ns/pid")
    parent = os.getppid()  # alive, and started before this file was written...
    live = tmp_path / f"a{files.INCOMPLETE}{parent}@{files.HOST}@0"
    live.write_text("half")
    # ... but a file written before the process with that pid started: the pid was reused.
    reused = tmp_path / f"b{files.INCOMPLETE}{parent}@{files.HOST}@0"
    reused.write_text("half")
    before = files.process_start_time(parent) - 60
    os.utime(reused, (before, before))
    other_space = tmp_path / f"c{files.INCOMPLETE}{2**22 + 1}@{socket.gethostname()}@0"
    other_space.write_text("half")  # a fresh file of a pid free here, from another space
    removed = files.remove_incomplete(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == [reused.name]


def test_a_directory_is_listed_for_leftovers_once_per_process_not_per_write(tmp_path, monkeypatch):
    # On gs:// a listing is a network call: one per directory, not one per write.
    listed = []
    listdir = files.tf.io.gfile.listdir
    monkeypatch.setattr(
        files.tf.io.gfile, "listdir", lambda path: listed.append(path) or listdir(path)
    )
    for n in range(5):
        files.write_atomically(str(tmp_path / "a" / f"{n}.json"), "{}")
    files.write_atomically(str(tmp_path / "b" / "0.json"), "{}")
    assert listed == [str(tmp_path / "a"), str(tmp_path / "b")]


def test_a_local_write_is_flushed_to_the_disk_before_the_rename(tmp_path, monkeypatch):
    events = []
    fsync, rename = os.fsync, tf.io.gfile.rename
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or fsync(fd))
    monkeypatch.setattr(
        tf.io.gfile, "rename", lambda *a, **k: events.append("rename") or rename(*a, **k)
    )
    files.write_atomically(str(tmp_path / "a.txt"), "text")
    assert events == ["fsync", "rename"]
    events.clear()
    files.write_atomically("ram://files-test/a.txt", "text")  # no fsync there
    assert events == ["rename"]
    assert files.read_text("ram://files-test/a.txt") == "text"


def test_an_output_named_by_a_pipe_is_written_into_it_not_replaced(tmp_path):
    # t2t-decode --decode_to_file=FIFO (or /dev/stdout): the reader gets the lines
    # and the pipe stays a pipe; a regular file is still replaced atomically.
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    files.write_output(str(fifo), "1 2\n3\n")
    reader.join(timeout=30)
    assert received == ["1 2\n3\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    regular = tmp_path / "out.txt"
    files.write_output(str(regular), "a\n")
    assert regular.read_text() == "a\n" and sorted(os.listdir(tmp_path)) == ["out.fifo", "out.txt"]
