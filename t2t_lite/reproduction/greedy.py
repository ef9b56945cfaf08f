"""Decoding a comparison run's split (greedy by default), beside its teacher-forced figures.

The UT paper reports teacher-forced accuracies (each position is given the
true prefix); a decode that feeds back its own outputs must also stop in the
right place, and its figure can be far lower (a misplaced EOS costs the rest
of the string). Each result is kept in the run directory with the checkpoint
it came from, so a rerun of the table decodes only new checkpoints.
"""

import json
import os

import tensorflow as tf

from t2t_lite import checkpoints, experiment, files, run_dir
from t2t_lite.decoding import runner

# <run_dir>/<name>_<split>.json: char_accuracy, sequence_accuracy, examples
# (bleu for text problems) and what they came from (KEY_FIELDS).
RESULT_FILE = "{name}_{split}.json"
# A kept result is reused only when all of these match the request.
KEY_FIELDS = (
    "checkpoint",
    "checkpoint_fingerprint",
    "data_dir",
    "data_stamp",
    "max_examples",
    "decode_hparams",
)
GREEDY = "beam_size=1"


def evaluate(
    run_directory: str,
    data_dir: str,
    split: str,
    max_examples: int,
    decode_hparams: str = GREEDY,
    checkpoint_path: str = "",
    name: str = "greedy",
) -> dict:
    """Decoded char and sequence accuracy (and BLEU, text problems) of the run's
    newest checkpoint (or `checkpoint_path`, e.g. an average) on the first
    `max_examples` of data_dir's `split` (all when < 0), with `decode_hparams`
    (default greedy); kept in <run>/<name>_<split>.json and computed again only
    for another checkpoint (its name and fingerprint), data
    dir or its files, example count or decode setting."""
    path = os.path.join(run_directory, RESULT_FILE.format(name=name, split=split))
    chosen = run_dir.resolve_checkpoint(run_directory, checkpoint_path)
    stamp = experiment.Experiment.load(run_directory).build_problem().data_stamp(data_dir)
    key = _key(chosen, data_dir, stamp, max_examples, decode_hparams)
    if tf.io.gfile.exists(path):
        kept = json.loads(files.read_text(path))
        if all(kept.get(field) == key[field] for field in KEY_FIELDS):
            return kept
    problem, model, checkpoint = run_dir.open_run(run_directory, chosen)
    decoder = runner.make_decoder(model, decode_hparams)
    metrics = runner.decode_split(decoder, problem, data_dir, split, max_examples)
    metrics.update(_key(checkpoint, data_dir, stamp, max_examples, decode_hparams))
    files.write_atomically(path, files.strict_json(metrics))
    return metrics


def _key(
    checkpoint: str, data_dir: str, stamp: str, max_examples: int, decode_hparams: str
) -> dict:
    """What a decoded result depends on: the checkpoint (a retrained run reuses its
    names, not its values: `checkpoints.fingerprint`), the data dir and its files (`data_stamp`:
    regenerated data is other data), the example count and the decode setting."""
    return {
        "checkpoint": os.path.basename(checkpoint),
        "checkpoint_fingerprint": checkpoints.fingerprint(checkpoint),
        "data_dir": files.absolute(data_dir),
        "data_stamp": stamp,
        "max_examples": max_examples,
        "decode_hparams": decode_hparams,
    }
