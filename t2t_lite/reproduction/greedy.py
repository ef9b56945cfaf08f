"""Greedy decoding of a comparison run's long split, beside its teacher-forced figures.

The UT paper reports teacher-forced accuracies (each position is given the
true prefix); a decode that feeds back its own outputs must also stop in the
right place, and its figure can be far lower (a misplaced EOS costs the rest
of the string). Each result is kept in the run directory with the checkpoint
it came from, so a rerun of the table decodes only new checkpoints.
"""

import json
import os

import tensorflow as tf

from t2t_lite import files, run_dir
from t2t_lite.decoding import runner

# <run_dir>/greedy_<split>.json: char_accuracy, sequence_accuracy, examples and
# what they came from (KEY_FIELDS).
RESULT_FILE = "greedy_{split}.json"
# A kept result is reused only when all of these match the request.
KEY_FIELDS = ("checkpoint", "checkpoint_written", "data_dir", "max_examples")


def evaluate(run_directory: str, data_dir: str, split: str, max_examples: int) -> dict:
    """Greedy char and sequence accuracy of the run's newest checkpoint on the first
    `max_examples` of data_dir's `split` (all when < 0), computed once per
    checkpoint (its name and when its index was written) and data dir."""
    path = os.path.join(run_directory, RESULT_FILE.format(split=split))
    newest = run_dir.resolve_checkpoint(run_directory)
    key = _key(newest, data_dir, max_examples)
    if tf.io.gfile.exists(path):
        kept = json.loads(files.read_text(path))
        if all(kept.get(name) == key[name] for name in KEY_FIELDS):
            return kept
    problem, model, checkpoint = run_dir.open_run(run_directory, newest)
    decoder = runner.make_decoder(model, "beam_size=1")
    metrics = runner.decode_split(decoder, problem, data_dir, split, max_examples)
    metrics.update(_key(checkpoint, data_dir, max_examples))
    files.write_atomically(path, files.strict_json(metrics))
    return metrics


def _key(checkpoint: str, data_dir: str, max_examples: int) -> dict:
    """What a greedy result depends on: the checkpoint (a retrained run reuses its
    names, not its index's write time), the data dir and the example count."""
    written = tf.io.gfile.stat(checkpoint + ".index").mtime_nsec
    return {
        "checkpoint": os.path.basename(checkpoint),
        "checkpoint_written": written,
        "data_dir": files.absolute(data_dir),
        "max_examples": max_examples,
    }
