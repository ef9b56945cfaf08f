"""Step-named checkpoints of model, optimizer and step, and their restore."""

import keras
import tensorflow as tf

CHECKPOINT_NAME = "model.ckpt"


def build_model(model: keras.Model) -> None:
    """Creates every model variable with a tiny dummy batch.

    Restoring into an unbuilt Keras 3 model silently restores nothing, so
    models are always built before a checkpoint is read.
    """
    dummy = tf.ones([1, 2], tf.int32)
    model({"inputs": dummy, "targets": dummy}, training=False)


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


def restore_model(model: keras.Model, path: str) -> None:
    """Loads a checkpoint's model weights (from training or averaging) into a built model."""
    build_model(model)
    status = tf.train.Checkpoint(model=model).read(path)
    status.assert_existing_objects_matched()
    status.expect_partial()


def latest(directory: str) -> str:
    """The newest checkpoint in `directory`, or an error saying there is none."""
    path = tf.train.latest_checkpoint(directory)
    if path is None:
        raise FileNotFoundError(
            f"no checkpoint in {directory!r}: train first (t2t-train --output_dir)"
        )
    return path
