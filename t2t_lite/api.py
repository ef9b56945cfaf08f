"""The Python API: train a run, load it, decode strings, from a notebook or a script.

The same code paths as the programs (t2t-train, t2t-avg-checkpoints,
t2t-decode), with the same names for settings:

    from t2t_lite import api

    api.train("algorithmic_identity_decimal20", "transformer", "transformer_algorithmic_tiny",
              data_dir="t2t_data", output_dir="t2t_runs/copy", train_steps=1000)
    run = api.load("t2t_runs/copy")                      # the newest checkpoint
    run.decode(["3 1 4 1 5"], beam_size=4, alpha=0.6)   # -> ["3 1 4 1 5"]
    api.load("t2t_runs/copy", checkpoint="average")     # the newest 5 averaged
    api.load("t2t_runs/copy", checkpoint="best")        # --keep_best's checkpoint

`train` takes t2t-train's loop settings as keywords (train_steps,
local_eval_frequency, random_seed, keep_best, train_minutes, ...: the fields
of `training.config.TrainConfig`) and returns the final evaluation's
metrics; a run resumes where it stopped. `Run.decode` takes t2t-decode's
--decode_hparams as keywords (beam_size, alpha, extra_length, return_beams,
...: `decoding.decoder.DecodeHParams`) or a preset's name (`search=`).
"""

import os
import typing

import tensorflow as tf

from t2t_lite import checkpoints, experiment, run_dir
from t2t_lite import hparams as hparams_lib
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import runner
from t2t_lite.training import averaging, trainer
from t2t_lite.training.config import TrainConfig

# checkpoint= names: the newest, the newest averaged, --keep_best's.
NEWEST, AVERAGE, BEST = "newest", "average", "best"
AVERAGED_LAST = 5  # as t2t-avg-checkpoints' default


def train(
    problem: str,
    model: str,
    hparams_set: str,
    data_dir: str,
    output_dir: str,
    hparams: str = "",
    **config,
) -> dict[str, dict[str, float]]:
    """Trains (or resumes) a run as t2t-train does -> the final metrics by split.

    config: TrainConfig's fields (a misspelt one is a TypeError naming it).
    The data is generated into data_dir first when it has none.
    """
    for name, value in {
        "problem": problem,
        "model": model,
        "hparams_set": hparams_set,
        "data_dir": data_dir,
        "output_dir": output_dir,
        "hparams": hparams,
    }.items():
        _check_type(name, value, str)
    fields = typing.get_type_hints(TrainConfig)
    for name, value in config.items():
        if name in fields:  # a misspelt name: TrainConfig's TypeError names it
            _check_type(name, value, typing.get_origin(fields[name]) or fields[name])
    exp = experiment.Experiment.resolve(model, problem, hparams_set, hparams)
    return trainer.train(exp, data_dir, output_dir, TrainConfig(**config))


def _check_type(name: str, value, expected: type) -> None:
    """TypeError naming the argument when `value` is not an `expected` (an int
    is taken where a float is expected; a bool is not an int)."""
    fits = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        fits = True
    if not fits:
        raise TypeError(f"{name} must be {expected.__name__}, not {type(value).__name__} {value!r}")


def _lines(lines) -> list[str]:
    """The lines argument as a list of strings: any iterable of str (read
    once); one string is refused, since iterating it would decode each of
    its characters as a line."""
    if isinstance(lines, str | bytes):
        raise TypeError(
            f"lines must be a list of strings, not one {type(lines).__name__}; "
            "for one line, pass [line]"
        )
    try:
        lines = list(lines)
    except TypeError:
        raise TypeError(f"lines must be a list of strings, not {type(lines).__name__}") from None
    for number, line in enumerate(lines):
        if not isinstance(line, str):
            raise TypeError(f"lines[{number}] must be str, not {type(line).__name__} {line!r}")
    return lines


def _decode_settings(search: str, keywords: dict) -> "decoder_lib.DecodeHParams":
    """search (a preset or --decode_hparams text), then each keyword on its own:
    a typed value as it is, a string value cast to the setting's type (one
    value: a ',' or '=' in it would set other settings, and is refused)."""
    _check_type("search", search, str)
    hp = decoder_lib.decode_hparams(search)
    typed = {}
    for key, value in keywords.items():
        if isinstance(value, str):
            if "," in value or "=" in value:
                raise ValueError(f"{key}={value!r}: expected one value, without ',' or '='")
            hp = hparams_lib.override(hp, f"{key}={value}")
        else:
            typed[key] = value
    return hparams_lib.override(hp, typed)


class Run:
    """A trained run's problem and model at one checkpoint; decodes strings."""

    def __init__(self, output_dir: str, checkpoint_path: str = ""):
        self.output_dir = output_dir
        self.problem, self.model, self.checkpoint = run_dir.open_run(output_dir, checkpoint_path)
        self._decoders: dict[decoder_lib.DecodeHParams, decoder_lib.Decoder] = {}

    def decode(self, lines: list[str], search: str = "", **decode_hparams) -> list[str]:
        """Each line decoded as t2t-decode writes it (the best hypothesis, or
        every beam tab-separated with return_beams=True).

        lines: a list (or any iterable) of strings; one string is a TypeError.
        search: a preset's name or t2t-decode's --decode_hparams text, applied
        first; then the keywords (e.g. beam_size=4, alpha=0.6), each checked on
        its own. A line the problem cannot encode is a ValueError naming it.
        """
        hp = _decode_settings(search, decode_hparams)
        lines = self.problem.input_lines(_lines(lines), hp)
        if hp not in self._decoders:  # one traced search per setting
            constraint = self.problem.decode_constraint(hp)
            self._decoders[hp] = decoder_lib.Decoder(self.model, hp, constraint=constraint)
        decoder = self._decoders[hp]
        inputs, errors = runner.encode_lines(self.problem, lines, "lines")
        if errors:
            raise ValueError(errors[0])
        outputs = decoder.decode_ids(inputs, "lines")
        return runner.format_outputs(self.problem, outputs, hp, lines)

    translate = decode  # the same call, by the name translation users look for


def load(output_dir: str, checkpoint: str = NEWEST, average_last: int = AVERAGED_LAST) -> Run:
    """A run at its newest checkpoint, the average of its newest `average_last`
    ("average"; all it keeps when it keeps fewer; written to
    <output_dir>/averaged/ as t2t-avg-checkpoints writes it), --keep_best's
    ("best"), or a checkpoint prefix or directory."""
    if checkpoint == NEWEST:
        return Run(output_dir)
    if checkpoint == AVERAGE:
        kept = len(run_dir.kept_checkpoints(output_dir))
        return Run(output_dir, averaging.run(output_dir, min(average_last, kept), []))
    if checkpoint == BEST:
        best = os.path.join(output_dir, run_dir.BEST_DIR)
        if not tf.io.gfile.isdir(best) or not checkpoints.by_step(best):
            raise FileNotFoundError(
                f"{output_dir}: no best checkpoint: the run was trained without keep_best "
                "(api.train(..., keep_best='dev/accuracy'), or t2t-train --keep_best)"
            )
        return Run(output_dir, best)
    return Run(output_dir, checkpoint)
