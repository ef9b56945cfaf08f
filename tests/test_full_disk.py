"""A full disk: one line naming the file, status 1, and nothing half-written left.

A real small tmpfs (`mount -t tmpfs -o size=300k`) gave these errors from
t2t-train, t2t-datagen, t2t-export and t2t-avg-checkpoints; the tests raise
the same errors from a filesystem double at the write that fills the disk.
"""

import errno
import os

import pytest
import tensorflow as tf

from t2t_lite import checkpoints, cli, files
from t2t_lite.data import tfrecord

FULL = "{{function_node __wrapped__SaveV2}} /r/model.ckpt-2_temp/part.tempstate1; No space left on device [Op:SaveV2]"


def report(capsys, error: Exception) -> list[str]:
    def fail():
        raise error

    with pytest.raises(SystemExit) as exit_info:
        cli.run("t2t-train", fail)
    assert exit_info.value.code == 1
    return capsys.readouterr().err.splitlines()


def test_a_full_disk_is_one_line_naming_the_file(capsys):
    lines = report(capsys, tf.errors.ResourceExhaustedError(None, None, FULL))
    expected = (
        "t2t-train: error: no space left on the device writing /r/model.ckpt-2_temp/"
        "part.tempstate1; free space and run it again (the writes it finished are whole, "
        "the unfinished one was removed)"
    )
    assert lines == [expected]
    lines = report(capsys, OSError(errno.ENOSPC, "No space left on device", "/r/metrics.json"))
    assert lines[0].startswith("t2t-train: error: no space left on the device writing /r/metrics")
    # Other resource errors (out of memory) stay tracebacks: they are not the user's.
    with pytest.raises(tf.errors.ResourceExhaustedError):
        cli.run("t2t-train", lambda: (_ for _ in ()).throw(
            tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")
        ))  # fmt: skip


def full_after(limit: int):
    """A GFile whose writes fail once `limit` bytes are written (a full disk); the
    failing write has created the file, as a real one does."""
    real = tf.io.gfile.GFile

    class Full(real):
        written = 0

        def write(self, data):
            Full.written += len(data)
            super().write(data)
            if Full.written > limit:
                self.flush()
                message = f"{self.name}; No space left on device"
                raise tf.errors.ResourceExhaustedError(None, None, message)

    return Full


def test_an_atomic_text_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tf.io.gfile, "GFile", full_after(0))
    with pytest.raises(tf.errors.ResourceExhaustedError):
        files.write_atomically(str(tmp_path / "metrics.json"), "{}")
    assert os.listdir(tmp_path) == []


def test_shards_that_cannot_be_finished_leave_no_incomplete_file(tmp_path):
    def examples():
        yield {"inputs": [3, 1], "targets": [3, 1]}
        raise tf.errors.ResourceExhaustedError(None, None, "x; No space left on device")

    with pytest.raises(tf.errors.ResourceExhaustedError):
        tfrecord.write_shards(examples(), tfrecord.shard_paths(str(tmp_path / "p-train"), 2))
    assert os.listdir(tmp_path) == []


def test_a_failed_save_and_a_killed_ones_leftovers_are_removed(tmp_path):
    """A save that fails leaves no model.ckpt-<step>_temp/; the next trainer removes
    what a kill inside a save left (the staging directory, the list's temporary)."""
    run = str(tmp_path / "run")

    class FullManager:
        directory = run

        def save(self, checkpoint_number):
            tf.io.gfile.makedirs(f"{run}/model.ckpt-{checkpoint_number}_temp")
            raise tf.errors.ResourceExhaustedError(None, None, "x; No space left on device")

    with pytest.raises(tf.errors.ResourceExhaustedError):
        checkpoints.save(FullManager(), 7)
    assert os.listdir(run) == []
    tf.io.gfile.makedirs(f"{run}/model.ckpt-9_temp")
    files.write_atomically(f"{run}/model.ckpt-9_temp/part", "x")
    files.write_atomically(f"{run}/checkpoint.tmp1234", "x")
    files.write_atomically(f"{run}/model.ckpt-8.index", "x")  # not a leftover
    removed = checkpoints.remove_save_leftovers(run)
    assert sorted(os.path.basename(p) for p in removed) == [
        "checkpoint.tmp1234",
        "model.ckpt-9_temp",
    ]
    assert os.listdir(run) == ["model.ckpt-8.index"]


def test_a_checkpoint_the_list_does_not_name_is_listed(tmp_path):
    """A kill between a save and the list's rewrite: model.ckpt-3 is complete but
    unlisted, so the CheckpointManager would never delete it."""
    run = str(tmp_path)
    step = tf.Variable(0)
    checkpoint = tf.train.Checkpoint(step=step)
    manager = checkpoints.make_manager(checkpoint, run, max_to_keep=2)
    for number in (1, 2):
        manager.save(checkpoint_number=number)
    checkpoint.write(f"{run}/model.ckpt-3")  # saved, not listed
    assert checkpoints.list_every_checkpoint(run) == [f"{run}/model.ckpt-3"]
    assert checkpoints.list_every_checkpoint(run) == []  # nothing more to add
    manager = checkpoints.make_manager(checkpoint, run, max_to_keep=2)
    manager.save(checkpoint_number=4)  # keeps 3 and 4, deletes 1 and 2
    assert [os.path.basename(p) for p in checkpoints.by_step(run)] == [
        "model.ckpt-4",
        "model.ckpt-3",
    ]


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_a_file_size_limit_is_one_line_naming_the_file_like_a_full_disk(tmp_path):
    # A real per-file limit (ulimit -f; FAT media and quotas give the same EFBIG),
    # in a process of its own: TensorFlow's write and Python's, chained or not.
    import subprocess
    import sys

    code = """
import resource, sys
from t2t_lite import cli, files
import tensorflow as tf
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.RLIM_INFINITY))
def tf_write():
    with tf.io.gfile.GFile(sys.argv[1] + "/big.bin", "wb") as f:
        f.write(b"x" * 200000)
def chained():  # as the CTranslate2 conversion reports its write
    path = sys.argv[1] + "/py.bin"
    try:
        with open(path, "wb") as f:
            f.write(b"x" * 200000)
    except OSError as err:
        raise RuntimeError("while writing a conversion") from OSError(err.errno, err.strerror, path)
which = {"tf": tf_write, "chained": chained}[sys.argv[2]]
cli.run("t2t-datagen", which)
"""
    for which, name in (("tf", "big.bin"), ("chained", "py.bin")):
        result = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path), which],
            capture_output=True,
            text=True,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
            timeout=120,
            check=False,
        )
        assert result.returncode == 1, result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("t2t-datagen: error: file size limit exceeded writing "), last
        assert name in last and "raise the limit or write elsewhere" in last
