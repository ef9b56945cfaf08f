"""Training curves: the evaluation scalars a run's TensorBoard event files hold."""

import os

import tensorflow as tf

CURVE_METRICS = ("loss", "accuracy", "sequence_accuracy")


def read_scalars(event_dir: str) -> dict[str, list[tuple[int, float]]]:
    """Scalar tag -> [(step, value)] sorted by step, from every event file in event_dir."""
    series: dict[str, dict[int, float]] = {}
    for path in sorted(tf.io.gfile.glob(os.path.join(event_dir, "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.HasField("tensor") and not value.tensor.tensor_shape.dim:
                    number = float(tf.make_ndarray(value.tensor))
                elif value.HasField("simple_value"):
                    number = float(value.simple_value)
                else:
                    continue  # images, histograms
                series.setdefault(value.tag, {})[int(event.step)] = number
    return {tag: sorted(points.items()) for tag, points in series.items()}


def eval_curves(run_dir: str, split: str = "dev") -> dict[str, list[tuple[int, float]]]:
    """A run's evaluations of `split` over steps: loss, accuracy, sequence_accuracy."""
    scalars = read_scalars(os.path.join(run_dir, f"eval_{split}"))
    return {metric: scalars[metric] for metric in CURVE_METRICS if metric in scalars}


def eval_splits(run_dir: str) -> list[str]:
    """The splits a run evaluated during training (its eval_<split>/ directories)."""
    found = tf.io.gfile.glob(os.path.join(run_dir, "eval_*"))
    return sorted(os.path.basename(path)[len("eval_") :] for path in found)
