"""The wavefront encoder's two paths on a trained run's split (docs/length_depth.md round 19).

    python wavefront_speed.py <run dir> <data dir> [split]

Encodes every example of the split (default valid_long) as evaluation does,
once position by position (layers/wavefront.py) and once through the stack's
masked loop, each in its own compiled function after one warm-up batch, and
prints one JSON line: both wall times, their ratio, the largest difference
of the encoder's outputs at real positions, and the input-label accuracy
each path gives.
"""

import json
import os
import platform
import sys
import time

import numpy as np
import tensorflow as tf

from t2t_lite import run_dir
from t2t_lite.layers import wavefront
from t2t_lite.models import input_labels


def encode_all(model, batches) -> tuple[float, list[np.ndarray], float]:
    """(seconds, the outputs per batch, label accuracy) for every batch, compiled."""
    encode = tf.function(
        lambda inputs: model.encode(inputs, False, 0)[0],
        input_signature=[tf.TensorSpec([None, None], tf.int32)],  # one trace for every length
    )
    encode(batches[0]["inputs"])  # trace and warm up
    start = time.perf_counter()
    outputs = [encode(features["inputs"]).numpy() for features in batches]
    seconds = time.perf_counter() - start
    right = total = 0
    for features, encoded in zip(batches, outputs, strict=True):
        labels = features[input_labels.LABELS].numpy()  # [B, S]
        guess = tf.argmax(model.softmax.logits(encoded), -1, output_type=tf.int32).numpy()
        right += int(((guess == labels) & (labels > 0)).sum())
        total += int((labels > 0).sum())
    return seconds, outputs, right / total


def cpu_name() -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return names[0] if names else platform.machine()


def main(argv: list[str]) -> None:
    output_dir, data_dir = argv[1], argv[2]
    split = argv[3] if len(argv) > 3 else "valid_long"
    problem, model, path = run_dir.open_run(output_dir)
    batches = list(problem.dataset(data_dir, split, batch_size=8192, input_labels=True))
    applies = wavefront.applies
    fast_seconds, fast, fast_accuracy = encode_all(model, batches)
    wavefront.applies = lambda *args: False  # the masked loop
    try:
        slow_seconds, slow, slow_accuracy = encode_all(model, batches)
    finally:
        wavefront.applies = applies
    real = [(b["inputs"].numpy() != 0)[..., None] for b in batches]  # [B, S, 1] each
    difference = max(
        float(np.abs((f - s) * r).max()) for f, s, r in zip(fast, slow, real, strict=True)
    )
    row = {
        "checkpoint": path,
        "split": split,
        "examples": int(sum(len(b["inputs"]) for b in batches)),
        "by_position_s": round(fast_seconds, 2),
        "masked_s": round(slow_seconds, 2),
        "speedup": round(slow_seconds / fast_seconds, 1),
        "max_difference": difference,
        "label_accuracy": [round(fast_accuracy, 4), round(slow_accuracy, 4)],
        "cpu": cpu_name(),
        "intra_op_threads": os.environ.get("TF_NUM_INTRAOP_THREADS", "default"),
    }
    print(json.dumps(row))


if __name__ == "__main__":
    main(sys.argv)
