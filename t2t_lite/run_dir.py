"""A run directory: what a t2t-train run holds, and how a trained run is opened.

<output_dir>/
  experiment.json          model, problem, hparams set and hparams (experiment.py)
  model.ckpt-<step>.*      checkpoints of model, optimizer and step (checkpoints.py)
  checkpoint               TensorFlow's index of the kept checkpoints
  train_time.json          seconds of training up to each kept checkpoint (time budgets)
  metrics.json             final evaluation of every split, its step, what stopped the
                           run, and what the figures depend on (`metrics_depend_on`)
  <vocabulary files>       the problem's assets, e.g. vocab.subwords (Problem.save_assets)
  train/, eval_<split>/    TensorBoard summaries
  averaged/                t2t-avg-checkpoints' default output
  best/                    the best checkpoint by --keep_best's metric, and best.json
                           (training/best.py)
  metrics_best.json        the final evaluation of best/'s checkpoint (--keep_best)
  .t2t-train.lock          the running trainer's lock (run_lock.py)

The trainer claims and fills a run through here (`claim`, `save_vocabulary`);
t2t-decode, t2t-export, t2t-visualize (`open_run`) and t2t-avg-checkpoints
(`kept_checkpoints`) read runs through here; every path goes through
tf.io.gfile.
"""

import json
import os

import keras
import tensorflow as tf
from absl import logging

from t2t_lite import checkpoints, experiment, files, run_lock, stamp
from t2t_lite.data import problem as problem_lib

EXPERIMENT_FILE = experiment.EXPERIMENT_FILE
METRICS_FILE = "metrics.json"
# Where metrics files written before `stamp`'s form kept their depends_on.
LEGACY_METRICS_SOURCE = "source"
METRICS_KIND = "a valid metrics file"  # a damaged one's error: "<path>: not a valid metrics file"
LOCK_FILE = run_lock.LOCK_FILE
AVERAGED_DIR = "averaged"
BEST_DIR = "best"
METRICS_BEST_FILE = "metrics_best.json"
TRAIN_TIME_FILE = "train_time.json"
# Following a run's newest checkpoint, a reader retries this many times when
# the trainer deletes the one it chose (keep_checkpoint_max) during the read.
READ_ATTEMPTS = 5


def metrics_depend_on(
    problem,
    data_dir: str,
    random_seed: int,
    train_minutes: float,
    keep_best: str = "",
    checkpoint: str = "",
) -> dict:
    """What a run's final figures depend on besides its experiment (experiment.json
    holds that): the data dir and its files, the seed and the time budget, for
    the best checkpoint's figures the --keep_best it was chosen by, and the
    checkpoint evaluated (name and content: one replaced under its name by a
    restore or a copy is other weights)."""
    depends_on = {
        **stamp.data(problem, data_dir),
        "random_seed": random_seed,
        "train_minutes": train_minutes,
    }
    if keep_best:
        depends_on["keep_best"] = keep_best
    if checkpoint:
        depends_on.update(stamp.checkpoint(checkpoint))
    return depends_on


def read_metrics(path: str) -> tuple[dict, dict] | None:
    """(depends_on, figures) of a metrics file (None: none there; depends_on {} for
    one written before it named its source); a damaged one is a ValueError."""
    return stamp.read(path, _legacy_metrics, kind=METRICS_KIND)


def _legacy_metrics(old: dict) -> tuple[dict, dict]:
    """A metrics file written before `stamp`'s form: its depends_on under "source",
    with what stopped the run (not a dependency) beside it; none at all in the
    first ones."""
    source = dict(old.pop(LEGACY_METRICS_SOURCE, None) or {})
    if "stopped_by" in source:
        old["stopped_by"] = source.pop("stopped_by")
    return source, old


def is_run(directory: str) -> bool:
    """True for a directory a trainer has written experiment.json into."""
    return tf.io.gfile.exists(os.path.join(directory, EXPERIMENT_FILE))


def claim(exp: experiment.Experiment, output_dir: str) -> None:
    """Refuses a run directory that holds another experiment; writes experiment.json."""
    exp.check_matches(output_dir)
    exp.save(output_dir)


def save_vocabulary(problem: problem_lib.Problem, output_dir: str) -> None:
    """Copies the problem's vocabulary into the run, so readers need only the run."""
    problem.save_assets(output_dir)


def trained_seconds(output_dir: str, step: int) -> float:
    """Seconds of training up to the checkpoint of `step` (0: none recorded, or step 0)."""
    path = os.path.join(output_dir, TRAIN_TIME_FILE)
    if not step or not tf.io.gfile.exists(path):
        return 0.0
    try:
        return float(json.loads(files.read_text(path)).get(str(step), 0.0))
    except (ValueError, AttributeError, TypeError):
        logging.warning("%s cannot be read; counting this run's time budget from 0.", path)
        return 0.0


def record_trained_seconds(output_dir: str, step: int, seconds: float) -> None:
    """Records the training time of the checkpoint just saved at `step` (and
    keeps only the entries of checkpoints still on disk)."""
    path = os.path.join(output_dir, TRAIN_TIME_FILE)
    kept = {str(step): round(seconds, 3)}
    if tf.io.gfile.exists(path):
        try:
            previous = json.loads(files.read_text(path))
        except ValueError:
            previous = {}
        for key, value in previous.items() if isinstance(previous, dict) else ():
            prefix = os.path.join(output_dir, f"{checkpoints.CHECKPOINT_NAME}-{key}")
            if key != str(step) and tf.io.gfile.exists(prefix + ".index"):
                kept[key] = value
    files.write_atomically(path, json.dumps(kept, indent=1, sort_keys=True))


def kept_checkpoints(output_dir: str) -> list[str]:
    """The checkpoint prefixes the run keeps, oldest first (an error when none)."""
    state = tf.train.get_checkpoint_state(output_dir)
    listed = state.all_model_checkpoint_paths if state else []
    kept = [path for path in listed if tf.io.gfile.exists(path + ".index")]
    if not kept:  # no list, or it names only deleted ones: what is on disk
        kept = list(reversed(checkpoints.by_step(output_dir)))
    if not kept:
        checkpoints.latest(output_dir)  # raises: no checkpoint
    return kept


def resolve_checkpoint(output_dir: str, checkpoint_path: str = "") -> str:
    """The checkpoint prefix to read: the given one (a prefix, or a directory
    such as averaged/ whose newest is taken) or the run's newest."""
    path = checkpoint_path or checkpoints.latest(output_dir)
    # A prefix first: ram:// calls any prefix of a file name a directory.
    if not tf.io.gfile.exists(path + ".index") and tf.io.gfile.isdir(path):
        path = checkpoints.latest(path)
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"--checkpoint_path: no checkpoint at {path!r}")
    return path


def open_run(
    output_dir: str, checkpoint_path: str = ""
) -> tuple[problem_lib.Problem, keras.Model, str]:
    """(problem bound to the run's vocabulary, model with a checkpoint's weights, its path)."""
    exp = experiment.Experiment.load(output_dir)
    problem = exp.build_problem()
    problem.bind(output_dir)  # the vocabulary t2t-train saved there, if any
    model = exp.build_model(problem.vocab_size)
    attempt = 1
    while True:
        path = resolve_checkpoint(output_dir, checkpoint_path)
        try:
            checkpoints.restore_model(model, path)
            return problem, model, path
        except ValueError:
            if checkpoint_path or attempt == READ_ATTEMPTS or still_there(path):
                raise
        logging.warning(
            "Checkpoint %s was deleted while it was read (a running trainer keeps only "
            "its newest); reading the run's newest again.",
            path,
        )
        attempt += 1


def still_there(path: str) -> bool:
    """Whether a checkpoint's index and data files are all on disk."""
    return tf.io.gfile.exists(path + ".index") and bool(tf.io.gfile.glob(path + ".data-*"))
