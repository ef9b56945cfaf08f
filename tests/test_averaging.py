"""Checkpoint averaging: means in float64, dtypes kept, mismatches refused."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import checkpoints, files, hparams, registry
from t2t_lite.models import transformer_hparams  # noqa: F401 (registers sets)
from t2t_lite.training import averaging

VOCAB = 12


def tiny_model(hidden_size: int = 16):
    hp = registry.HPARAMS.get("transformer_test")()
    hp = hparams.override(hp, {"hidden_size": hidden_size, "filter_size": 32})
    model = registry.MODELS.get("transformer")(hp, VOCAB)
    checkpoints.build_model(model)
    return model


def save_step_valued(
    directory: str, steps: list[int], hidden_size: int = 16, shift: float = 0.0
) -> list[str]:
    """Checkpoints where every variable (model, a bf16 extra, the step) equals the
    step (the float ones plus `shift`)."""
    model = tiny_model(hidden_size)
    step = tf.Variable(0, dtype=tf.int64)
    extra = tf.Variable(tf.zeros([3], tf.bfloat16))
    checkpoint = tf.train.Checkpoint(model=model, step=step, extra=extra)
    manager = checkpoints.make_manager(checkpoint, directory, max_to_keep=10)
    paths = []
    for s in steps:
        for variable in model.variables:
            variable.assign(tf.fill(variable.shape, s + shift))
        extra.assign(tf.fill([3], tf.cast(s + shift, tf.bfloat16)))
        step.assign(s)
        paths.append(manager.save(checkpoint_number=s))
    return paths


def test_the_average_of_step_valued_checkpoints_is_the_mean_step(tmp_path):
    run = str(tmp_path / "run")
    save_step_valued(run, [1, 2, 3, 4, 5, 6])
    output = averaging.run(run, num_last=4, explicit=[])
    assert output == f"{run}/averaged/model.ckpt-6"

    reader = tf.train.load_checkpoint(output)
    newest = tf.train.load_checkpoint(f"{run}/model.ckpt-6")
    assert reader.get_variable_to_dtype_map() == newest.get_variable_to_dtype_map()
    assert reader.get_tensor(checkpoints.STEP_KEY) == 6  # non-float: from the newest
    extra = reader.get_tensor("extra/.ATTRIBUTES/VARIABLE_VALUE")
    np.testing.assert_array_equal(np.asarray(extra, np.float32), [4.5] * 3)  # bf16 kept

    # It restores into a model like any checkpoint: every weight is (3+4+5+6)/4.
    model = tiny_model()
    checkpoints.restore_model(model, output)
    for variable in model.variables:
        np.testing.assert_array_equal(variable.numpy(), np.full(variable.shape, 4.5))
    # The output directory names it, so the directory is a --checkpoint_path too.
    assert tf.train.latest_checkpoint(f"{run}/averaged") == output


def test_an_explicit_list_is_averaged_in_any_order(tmp_path):
    run = str(tmp_path / "run")
    paths = save_step_valued(run, [1, 2, 6])
    output = averaging.run("", 5, [paths[2], paths[0], paths[1]], str(tmp_path / "avg" / "x"))
    reader = tf.train.load_checkpoint(output)
    assert reader.get_tensor(checkpoints.STEP_KEY) == 6
    key = next(k for k in reader.get_variable_to_shape_map() if "embedding" in k)
    np.testing.assert_array_equal(reader.get_tensor(key), np.full_like(reader.get_tensor(key), 3))


def test_checkpoints_of_different_shapes_are_refused_naming_the_variable(tmp_path):
    small = save_step_valued(str(tmp_path / "a"), [1], hidden_size=16)
    large = save_step_valued(str(tmp_path / "b"), [2], hidden_size=32)
    with pytest.raises(ValueError, match=r"variable 'model/.*' is float32\[.*16.*\] in .*a/"):
        averaging.run("", 5, small + large, str(tmp_path / "avg" / "x"))
    assert not (tmp_path / "avg").exists()


def test_checkpoints_of_different_models_are_refused_naming_the_variable(tmp_path):
    paths = save_step_valued(str(tmp_path / "a"), [1])
    other = tf.train.Checkpoint(model=tiny_model(), step=tf.Variable(2, dtype=tf.int64))
    paths.append(other.write(str(tmp_path / "b" / "model.ckpt-2")))  # no "extra" variable
    with pytest.raises(ValueError, match=r"variable 'extra/.*' is in .*a/model.ckpt-1 but not in"):
        averaging.run("", 5, paths, str(tmp_path / "avg" / "x"))


def test_asking_for_more_checkpoints_than_kept_is_a_clear_error(tmp_path):
    run = str(tmp_path / "run")
    save_step_valued(run, [1, 2])
    with pytest.raises(ValueError, match=r"--num_last_checkpoints=5, but .* holds 2") as caught:
        averaging.run(run, 5, [])
    # Both causes named: the cadence (fewer written) and the count kept.
    assert "--save_checkpoints_steps" in str(caught.value)
    assert "--keep_checkpoint_max" in str(caught.value)
    with pytest.raises(ValueError, match="is in --model_dir"):
        averaging.run(run, 2, [], f"{run}/model.ckpt-99")
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        averaging.run(run, 2, [f"{run}/model.ckpt-7"], str(tmp_path / "x"))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        averaging.run(str(tmp_path / "empty"), 2, [])


class Killed(BaseException):
    """Stands for a kill -9 at a chosen call: nothing after it runs."""


def kill_after(monkeypatch, calls: int, suffix: str = ""):
    """tf.io.gfile.rename that dies right after its `calls`-th call (renames ending in suffix)."""
    rename, seen = tf.io.gfile.rename, []

    def renaming(source, target, overwrite=False):
        rename(source, target, overwrite=overwrite)
        if target.endswith(suffix):
            seen.append(target)
            if len(seen) == calls:
                raise Killed(target)

    monkeypatch.setattr(tf.io.gfile, "rename", renaming)


def mean_step_weight(path: str) -> float:
    reader = checkpoints.reader(path)
    key = next(k for k in reader.get_variable_to_shape_map() if "embedding" in k)
    return float(reader.get_tensor(key).flat[0])


@pytest.mark.parametrize("calls, suffix, survivor", [(1, "", 5.5), (1, ".index", 5.0)])
def test_overwriting_an_average_keeps_the_old_one_until_the_new_index_lands(
    tmp_path, monkeypatch, calls, suffix, survivor
):
    """--num_last_checkpoints=2 then =3 into the same prefix, killed just after the
    first data rename (the old average, (5+6)/2, must still read) or just after
    the index rename (the new one, (4+5+6)/3, reads); a rerun completes and
    leaves one checkpoint's files."""
    run = str(tmp_path / "run")
    save_step_valued(run, [4, 5, 6])
    output = averaging.run(run, num_last=2, explicit=[])
    assert mean_step_weight(output) == 5.5
    with monkeypatch.context() as patch:
        kill_after(patch, calls, suffix)
        # The killed writer's temporary names carry a pid that no process has.
        patch.setattr(files, "owner_tag", lambda: f"{2**22 + 1}@{files.HOST}@")
        with pytest.raises(Killed):
            averaging.run(run, num_last=3, explicit=[])
    assert mean_step_weight(output) == survivor
    averaging.run(run, num_last=3, explicit=[])
    assert mean_step_weight(output) == 5.0
    names = sorted(p.name for p in (tmp_path / "run" / "averaged").iterdir())
    shards = {n.rsplit("-of-", 1)[1] for n in names if ".data-" in n}
    assert len(shards) == 1  # one checkpoint's data files, no other count left
    assert not [n for n in names if files.INCOMPLETE in n]


def test_a_checkpoint_of_another_model_is_one_error_and_no_warnings(tmp_path):
    """Restoring a d=32 checkpoint into a d=16 model: one ValueError naming it, and
    none of TensorFlow's 'Value in checkpoint could not be found' lines (one per
    unrestored value, 130 or more before the error line)."""
    import logging

    (path,) = save_step_valued(str(tmp_path / "wide"), [1], hidden_size=32)
    records, level = [], tf.get_logger().level
    handler = logging.Handler()
    handler.emit = records.append
    tf.get_logger().addHandler(handler)
    try:
        with pytest.raises(ValueError, match=f"checkpoint {path} cannot be read: .*incompatible"):
            checkpoints.restore_model(tiny_model(16), path)
    finally:
        tf.get_logger().removeHandler(handler)
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
    assert tf.get_logger().level == level  # warnings are on again afterwards


def test_two_killed_overwrites_in_a_row_leave_orphans_the_next_write_cleans(tmp_path):
    """Data files of shard counts the live index does not name (two killed
    overwrites leave two such counts) are removed; the live files are kept
    until the new index lands, and the result reads."""
    run = str(tmp_path / "run")
    save_step_valued(run, [4, 5, 6])
    output = averaging.run(run, num_last=2, explicit=[])
    assert averaging.live_shard_count(output) == 1
    for count in (2, 3):  # what two writes killed after their data renames leave
        for shard in range(count):
            with open(f"{output}.data-{shard:05d}-of-{count:05d}", "wb") as f:
                f.write(b"half-written")
    assert mean_step_weight(output) == 5.5  # the live checkpoint still reads
    averaging.run(run, num_last=3, explicit=[])
    assert mean_step_weight(output) == 5.0
    names = sorted(p.name for p in (tmp_path / "run" / "averaged").iterdir())
    data = [n for n in names if ".data-" in n]
    assert data == [f"model.ckpt-6.data-{i:05d}-of-00002" for i in range(2)]
    assert averaging.live_shard_count(output) == 2


def test_an_unreadable_live_index_is_refused_without_touching_its_files(tmp_path):
    output = tmp_path / "avg" / "model.ckpt-1"
    output.parent.mkdir()
    (tmp_path / "avg" / "model.ckpt-1.index").write_bytes(b"\xff\xff\xff")
    (tmp_path / "avg" / "model.ckpt-1.data-00000-of-00001").write_bytes(b"x")
    with pytest.raises(ValueError, match="its index .* cannot be read .*another --output_path"):
        averaging.write_replacing(str(output), ["a"], [tf.constant(1.0)])
    assert (tmp_path / "avg" / "model.ckpt-1.data-00000-of-00001").exists()


def test_a_checkpoint_pruned_by_a_running_trainer_mid_read_is_chosen_again(tmp_path, monkeypatch):
    """The trainer (max_to_keep=2) saves step 4 and deletes step 2 after step 2
    was chosen: the average is taken again over the last two, 3 and 4."""
    run = str(tmp_path / "run")
    model = tiny_model()
    step = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(model=model, step=step)
    manager = checkpoints.make_manager(checkpoint, run, max_to_keep=2)

    def save(s):
        for variable in model.variables:
            variable.assign(tf.fill(variable.shape, float(s)))
        step.assign(s)
        manager.save(checkpoint_number=s)

    for s in (1, 2, 3):
        save(s)
    reader, calls = checkpoints.reader, []

    def reading(path):
        calls.append(path)
        if len(calls) == 1:
            save(4)  # the trainer's next save prunes step 2
        return reader(path)

    monkeypatch.setattr(averaging.checkpoints, "reader", reading)
    output = averaging.run(run, num_last=2, explicit=[])
    assert output == f"{run}/averaged/model.ckpt-4"
    assert mean_step_weight(output) == 3.5
    # An explicit list is the user's: a missing member is an error, not a new choice.
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        averaging.run("", 2, [f"{run}/model.ckpt-2", f"{run}/model.ckpt-4"], str(tmp_path / "x"))


def test_an_output_that_is_one_of_the_inputs_is_refused(tmp_path):
    paths = save_step_valued(str(tmp_path / "a"), [1, 2])
    before = (tmp_path / "a" / "model.ckpt-2.index").read_bytes()
    with pytest.raises(ValueError, match="--output_path .* is one of the checkpoints averaged"):
        averaging.run("", 2, paths, paths[1])
    assert (tmp_path / "a" / "model.ckpt-2.index").read_bytes() == before


def test_a_checkpoint_named_twice_is_refused(tmp_path):
    paths = save_step_valued(str(tmp_path / "a"), [1, 2])
    with pytest.raises(ValueError, match="--checkpoints names .*model.ckpt-2' twice"):
        averaging.run("", 3, [*paths, paths[1]], str(tmp_path / "x"))


def test_the_table_reuses_an_average_only_of_the_checkpoints_it_asks_for(tmp_path, monkeypatch):
    """An average of the last 2 (t2t-avg-checkpoints) sits where the averaged row's
    last-5 average goes: the row makes its own (mean step 4, not 5.5) and reuses
    that on a rerun, unwritten; the same values written again (by another
    Checkpoint object, whose save count is 1) keep it; a retrained checkpoint
    (its name, other values) makes it average again. Each average written is
    counted, not read off a file time (whole seconds on some storage)."""
    run = str(tmp_path / "run")
    save_step_valued(run, [1, 2, 3, 4, 5, 6])
    other = averaging.run(run, num_last=2, explicit=[])
    assert mean_step_weight(other) == 5.5
    written = []
    average = averaging.run
    monkeypatch.setattr(averaging, "run", lambda *args: written.append(args) or average(*args))
    target = averaging.newest_average(run, 5)
    assert target == other and mean_step_weight(target) == 4.0 and len(written) == 1
    assert averaging.newest_average(run, 5) == target
    assert len(written) == 1  # reused
    save_step_valued(run, [6])  # step 6 written again with the same values
    assert averaging.newest_average(run, 5) == target
    assert len(written) == 1  # still reused
    save_step_valued(run, [6], shift=2.5)  # retrained: a run reuses names, not values
    assert averaging.newest_average(run, 5) == target
    assert len(written) == 2
    assert mean_step_weight(target) == (2 + 3 + 4 + 5 + 8.5) / 5


def test_a_second_averaging_into_the_same_directory_waits_for_the_first(tmp_path, monkeypatch):
    # Another live process averaging into the directory holds its lock: this
    # averaging writes nothing while it does (it would remove that writer's
    # shards), refuses in one line after its wait, and writes once it is gone.
    import json
    import os
    import subprocess
    import sys
    import time

    from t2t_lite import run_lock

    paths = save_step_valued(str(tmp_path / "run"), [4, 7])
    out_dir = tmp_path / "avg"
    out_dir.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = out_dir / run_lock.AVERAGE_LOCK_FILE
        now = time.time()
        lock.write_text(
            json.dumps({"host": files.HOST, "pid": other.pid, "started": now, "heartbeat": now})
        )
        monkeypatch.setattr(averaging, "LOCK_WAIT_S", 1.0)
        with pytest.raises(ValueError, match=rf"being averaged into by pid {other.pid}"):
            averaging.average(paths, str(out_dir / "model.ckpt-7"))
        assert sorted(os.listdir(out_dir)) == [run_lock.AVERAGE_LOCK_FILE]  # nothing written
    finally:
        other.kill()
        other.wait()
    averaging.average(paths, str(out_dir / "model.ckpt-7"))  # its owner is gone: taken over
    assert mean_step_weight(str(out_dir / "model.ckpt-7")) == 5.5
    assert not (out_dir / run_lock.AVERAGE_LOCK_FILE).exists()  # released


def test_an_average_on_ram_names_its_sources_by_fingerprint():
    """On ram://, where any prefix of a file name reads as a directory, the
    sources' fingerprints are read from their prefixes and the average is
    reused on a rerun (tf.train.load_checkpoint took the prefix for a directory)."""
    import uuid

    run = f"ram://averaging-{uuid.uuid4().hex}/run"
    paths = save_step_valued(run, [1, 2, 3])
    assert checkpoints.fingerprint(paths[0]) != checkpoints.fingerprint(paths[1])
    target = averaging.run(run, num_last=2, explicit=[])
    assert mean_step_weight(target) == 2.5
    assert averaging.is_average_of(target, paths[1:])
    assert not averaging.is_average_of(target, paths[:2])
