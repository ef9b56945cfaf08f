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

# <run_dir>/greedy_<split>.json: char_accuracy, sequence_accuracy, examples, checkpoint.
RESULT_FILE = "greedy_{split}.json"


def evaluate(run_directory: str, data_dir: str, split: str, max_examples: int) -> dict:
    """Greedy char and sequence accuracy of the run's newest checkpoint on the first
    `max_examples` of `split` (all when < 0), computed once per checkpoint."""
    path = os.path.join(run_directory, RESULT_FILE.format(split=split))
    newest = run_dir.resolve_checkpoint(run_directory)
    if tf.io.gfile.exists(path):
        kept = json.loads(files.read_text(path))
        if (
            kept.get("checkpoint") == os.path.basename(newest)
            and kept.get("max_examples") == max_examples
        ):
            return kept
    problem, model, checkpoint = run_dir.open_run(run_directory, newest)
    decoder = runner.make_decoder(model, "beam_size=1")
    metrics = runner.decode_split(decoder, problem, data_dir, split, max_examples)
    metrics.update(checkpoint=os.path.basename(checkpoint), max_examples=max_examples)
    files.write_atomically(path, files.strict_json(metrics))
    return metrics
