"""Step-named checkpoints of model, optimizer and step, and their restore."""

import gc
import hashlib
import os
import re

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite import cli

CHECKPOINT_NAME = "model.ckpt"


def build_model(model: keras.Model) -> None:
    """Creates every model variable with a tiny dummy batch.

    Restoring into an unbuilt Keras 3 model silently restores nothing, so
    models are always built before a checkpoint is read. A model too large
    for the device's memory is a UserError saying so (hparams such as
    hidden_size=2**40 are valid numbers, but no machine holds the weights).
    """
    try:
        model.build_variables()
    except tf.errors.ResourceExhaustedError as err:
        found = re.search(r"OOM when allocating tensor with shape\[[^\]]*\]", str(err))
        raise cli.UserError(
            "the model's weights do not fit in memory"
            + (f" ({found.group(0)})" if found else "")
            + "; choose smaller hparams (hidden_size, filter_size, layers, vocabulary)"
        ) from None


def make_checkpoint(
    model: keras.Model, optimizer=None, step: tf.Variable | None = None
) -> tf.train.Checkpoint:
    """A checkpoint object over the model (and, when training, optimizer and step)."""
    parts = {"model": model}
    if optimizer is not None:
        parts["optimizer"] = optimizer
    if step is not None:
        parts["step"] = step
    return tf.train.Checkpoint(**parts)


def make_manager(
    checkpoint: tf.train.Checkpoint, directory: str, max_to_keep: int
) -> tf.train.CheckpointManager:
    """Checkpoints named model.ckpt-<step> in `directory`."""
    return tf.train.CheckpointManager(
        checkpoint, directory, max_to_keep=max_to_keep, checkpoint_name=CHECKPOINT_NAME
    )


def save(manager: tf.train.CheckpointManager, step: int) -> str:
    """manager.save at `step`; a failed save (a full disk) removes the
    `<prefix>-<step>_temp/` directory TensorFlow leaves, then raises."""
    try:
        return manager.save(checkpoint_number=step)
    except Exception:
        remove_save_leftovers(manager.directory)
        raise


def remove_save_leftovers(directory: str) -> list[str]:
    """Removes what an interrupted save leaves in a run's directory -> the removed paths:
    `model.ckpt-<step>_temp/` (TensorFlow's staging directory) and `checkpoint.tmp*`
    (the list's temporary file). Only the run's one writer (the lock holder) calls it."""
    pattern = os.path.join(directory, f"{CHECKPOINT_NAME}-*_temp")
    removed = []
    for path in tf.io.gfile.glob(pattern) + tf.io.gfile.glob(f"{directory}/checkpoint.tmp*"):
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            tf.io.gfile.remove(path)
        removed.append(path)
    return removed


def list_every_checkpoint(directory: str) -> list[str]:
    """Rewrites `directory`'s `checkpoint` list to name every model.ckpt-<step> on
    disk, newest last, when it names fewer -> the ones it lacked.

    A kill between a save and the list's rewrite leaves a complete checkpoint
    the list does not name, which the CheckpointManager would then never
    delete; listed, it is kept or deleted like the others. Only the run's one
    writer (the lock holder) calls it.
    """
    on_disk = by_step(directory)[::-1]  # oldest first
    state = tf.train.get_checkpoint_state(directory)
    listed = {os.path.basename(p) for p in state.all_model_checkpoint_paths} if state else set()
    missing = [path for path in on_disk if os.path.basename(path) not in listed]
    if missing:
        # With each one's time: the manager deletes only checkpoints listed
        # with a time after the list's last preserved one.
        times = [tf.io.gfile.stat(path + ".index").mtime_nsec / 1e9 for path in on_disk]
        preserved = state.last_preserved_timestamp if state else 0.0
        tf.compat.v1.train.update_checkpoint_state(
            directory,
            on_disk[-1],
            on_disk,
            all_model_checkpoint_timestamps=[max(t, preserved + 1e-3) for t in times],
            last_preserved_timestamp=preserved,
        )
    return missing


# What reading a damaged checkpoint raises: TensorFlow's errors, and IndexError
# ("Read less bytes than requested") for a truncated data file.
UNREADABLE = (tf.errors.OpError, ValueError, AssertionError, IndexError)


def restore_model(model: keras.Model, path: str) -> None:
    """Loads a checkpoint's model weights (from training or averaging) into a built model.

    A checkpoint that cannot be read is a ValueError naming it.
    """
    build_model(model)
    # A failed restore's bookkeeping, once freed, warns about every value it
    # did not restore (a hundred lines or more before the one-line error), so
    # the read runs with TensorFlow's Python warnings off, and the failure's
    # objects are freed before they are turned back on.
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    reason = None
    try:
        try:
            status = tf.train.Checkpoint(model=model).read(path)
            status.assert_existing_objects_matched()
        except UNREADABLE as err:
            reason = _reason(err)
        if reason is not None:
            gc.collect()
    finally:
        logger.setLevel(level)
    if reason is not None:
        raise ValueError(f"checkpoint {path} cannot be read: {reason}")
    status.expect_partial()
    if not all_finite(model.weights):
        raise ValueError(
            f"checkpoint {path} holds non-finite weights (NaN or inf); use an older "
            "checkpoint (--checkpoint_path) or train again"
        )


def _reason(err: BaseException) -> str:
    return ((getattr(err, "message", None) or str(err)).strip().splitlines() or [""])[0]


def latest(directory: str) -> str:
    """The newest checkpoint in `directory`, or an error saying there is none.

    The `checkpoint` list's newest; when the list is missing or names a
    checkpoint no longer on disk (a kill between a delete and the list's
    rewrite), the newest model.ckpt-<step> that has an index.
    """
    path = tf.train.latest_checkpoint(directory)
    if path is None or not tf.io.gfile.exists(path + ".index"):
        path = next(iter(by_step(directory)), None)
    if path is None:
        raise FileNotFoundError(
            f"no checkpoint in {directory!r}: train first (t2t-train --output_dir)"
        )
    return path


# The training step a checkpoint holds (make_checkpoint's `step`).
STEP_KEY = "step/.ATTRIBUTES/VARIABLE_VALUE"


def step_of(path: str) -> int:
    """The training step of the checkpoint at prefix `path`: the step in a
    trainer's name for it (model.ckpt-<step>, as `by_step` orders them), else
    the step variable it holds (an average, a --checkpoints path named
    otherwise), else 0."""
    match = re.fullmatch(re.escape(CHECKPOINT_NAME) + r"-(\d+)", os.path.basename(path))
    if match:
        return int(match.group(1))
    saved = reader(path)
    return int(saved.get_tensor(STEP_KEY)) if saved.has_tensor(STEP_KEY) else 0


def all_finite(variables) -> bool:
    """Whether every value of every variable is finite (what a good checkpoint holds)."""
    checks = [
        tf.reduce_all(tf.math.is_finite(v)) for v in variables if tf.as_dtype(v.dtype).is_floating
    ]
    return bool(tf.reduce_all(tf.stack(checks))) if checks else True


def by_step(directory: str) -> list[str]:
    """The model.ckpt-<step> prefixes in directory with an index file, newest first."""
    pattern = re.compile(re.escape(CHECKPOINT_NAME) + r"-(\d+)\.index$")
    found = []
    for path in tf.io.gfile.glob(os.path.join(directory, f"{CHECKPOINT_NAME}-*.index")):
        match = pattern.search(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path[: -len(".index")]))
    return [path for _, path in sorted(found, reverse=True)]


def restore_newest_readable(
    checkpoint: tf.train.Checkpoint, directory: str, weights=()
) -> str | None:
    """Restores the newest checkpoint in directory that reads back whole -> its path.

    A checkpoint that fails to read (corrupt or truncated data, a missing
    variable), or after which `weights` are not all finite, is skipped with
    a warning naming it and the reason, and the next older one is tried.
    None if the directory has no checkpoint; a ValueError if it has some
    and none is readable.
    """
    candidates = by_step(directory)
    for path in candidates:
        try:
            checkpoint.restore(path).assert_existing_objects_matched()
            if not all_finite(weights):
                raise ValueError("it holds non-finite weights (NaN or inf)")
            return path
        except UNREADABLE as err:
            logging.warning("Skipping checkpoint %s, which cannot be read: %s", path, _reason(err))
    if candidates:
        raise ValueError(
            f"no readable checkpoint in {directory!r} ({len(candidates)} tried, newest "
            f"{candidates[0]}): move them away to start afresh, or restore a copy"
        )
    return None


# What a checkpoint holds besides its values: the object graph (names) and
# tf.train.Checkpoint's count of its own saves (a retrained run's new
# Checkpoint object counts from 1, a resumed one from where it was).
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
SAVE_COUNTER_KEY = "save_counter/.ATTRIBUTES/VARIABLE_VALUE"
BOOKKEEPING_KEYS = frozenset({OBJECT_GRAPH_KEY, SAVE_COUNTER_KEY})


def fingerprint(path: str) -> str:
    """What the checkpoint at prefix `path` holds: a digest of each tensor's
    name, dtype, shape and values.

    A checkpoint rewritten under the same name with other values (a retrained
    run reuses its names) gets another fingerprint, and the same values the
    same one. Neither a write time (storage with whole-second times gives a
    rewrite within the second the old time) nor the index's bytes would do:
    the index holds the object graph, which names each variable with its
    process's layer counters (`transformer_1/...`), so the same values saved
    by another model object read as other ones; nor the count of saves a
    `tf.train.Checkpoint` object has made, which differs for the same values
    written by another object.
    """
    saved = reader(path)  # not tf.train.load_checkpoint: ram:// (see reader)
    digest = hashlib.sha256()
    for key, shape in sorted(saved.get_variable_to_shape_map().items()):
        if key in BOOKKEEPING_KEYS:
            continue
        value = np.asarray(saved.get_tensor(key))
        digest.update(f"{key}|{value.dtype}|{shape}|".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()[:16]


def reader(path: str):
    """A CheckpointReader of the checkpoint with this prefix.

    tf.train.load_checkpoint would first ask whether the prefix is a
    directory, which ram:// answers yes for any prefix of a file name.
    """
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"no checkpoint at {path!r}")
    return tf.compat.v1.train.NewCheckpointReader(path)
