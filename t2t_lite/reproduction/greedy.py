"""Decoding a comparison run's split (greedy by default), beside its teacher-forced figures.

The UT paper reports teacher-forced accuracies (each position is given the
true prefix); a decode that feeds back its own outputs must also stop in the
right place, and its figure can be far lower (a misplaced EOS costs the rest
of the string). Each result is kept in the run directory with the checkpoint
it came from, so a rerun of the table decodes only new checkpoints.
"""

import os

from t2t_lite import experiment, run_dir, stamp
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import runner

# <run_dir>/<name>_<split>.json: char_accuracy, sequence_accuracy, examples
# (bleu for text problems) and what they came from (`depends_on`, in `stamp`'s form).
RESULT_FILE = "{name}_{split}.json"
# What such a file kept at its top level before `stamp`'s form.
LEGACY_KEY_FIELDS = (
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
    when what it depends on changed (`depends_on`)."""
    path = os.path.join(run_directory, RESULT_FILE.format(name=name, split=split))
    chosen = run_dir.resolve_checkpoint(run_directory, checkpoint_path)
    problem = experiment.Experiment.load(run_directory).build_problem()
    wanted = depends_on(chosen, problem, data_dir, max_examples, decode_hparams)
    kept = stamp.kept_body(path, wanted, _legacy)
    if kept is not None:
        return kept
    problem, model, _ = run_dir.open_run(run_directory, chosen)
    decoder = runner.make_decoder(model, decode_hparams)
    metrics = runner.decode_split(decoder, problem, data_dir, split, max_examples)
    stamp.keep(path, wanted, metrics)
    return metrics


def depends_on(
    checkpoint: str, problem, data_dir: str, max_examples: int, decode_hparams: str
) -> dict:
    """What a decoded result depends on: the checkpoint (its name and content), the
    data dir and its files (regenerated data is other data), the example count
    and the decode settings, resolved (`stamp.decode`)."""
    return {
        **stamp.checkpoint(checkpoint),
        **stamp.data(problem, data_dir),
        "max_examples": max_examples,
        "decode_hparams": stamp.decode(decoder_lib.decode_hparams(decode_hparams)),
    }


def _legacy(old: dict) -> tuple[dict, dict] | None:
    """A result kept before `stamp`'s form: its key fields beside its figures."""
    if not all(field in old for field in LEGACY_KEY_FIELDS):
        return None
    body = {key: value for key, value in old.items() if key not in LEGACY_KEY_FIELDS}
    return {field: old[field] for field in LEGACY_KEY_FIELDS}, body
