"""The runs a table asks for, shared by every kind of table (algorithmic,
Learning to Execute and bAbI in `comparison`, translation, parsing): the
request (`Request`, t2t-compare's flags as one object), training or reusing
each run of each entry on each problem and seed (`run`), and the rows of the
runs that finished (`finished_only`, `missing_note`)."""

import dataclasses
import os

from absl import logging

from t2t_lite import experiment, run_lock
from t2t_lite import run_dir as run_dir_lib
from t2t_lite.reproduction import finished as finished_lib
from t2t_lite.reproduction import translation
from t2t_lite.reproduction.entries import ENTRIES, Entry
from t2t_lite.training import trainer

MISSING = ("train", "skip")  # --missing: what a table does with runs not finished
DEFAULT_SEARCH = "parsing"  # a parsing table's decode (decoder.PRESETS: the paper's)


@dataclasses.dataclass(frozen=True)
class Request:
    """What t2t-compare is asked for: one table (`tables.compare` says which kind
    makes it; each reads the fields it needs).

    models: entries, translation rows or parsing rows; seeds: --seeds texts;
    missing="skip" trains nothing: the table holds the runs that finished and a
    line under it names the ones left out; records_dir: keep every figure there
    and print a run's record where its run is not there.
    """

    output_dir: str
    models: list[str]
    problems: list[str]
    data_dir: str
    config: trainer.TrainConfig
    seeds: list[str] | None = None
    hparams: str = ""
    greedy_examples: int = 0  # algorithmic tables: greedy accuracy of that many test examples
    missing: str = "train"
    records_dir: str = ""
    split: str = "dev"  # translation and parsing tables: the split scored
    search: str = DEFAULT_SEARCH  # parsing tables: --decode_hparams of every decode

    def seed_list(self) -> list[int] | None:
        """The checked seeds (None: the config's one); a bad --missing or --seeds is a
        ValueError naming the flag."""
        if self.missing not in MISSING:
            raise ValueError(
                f"--missing: expected one of {', '.join(MISSING)}, got {self.missing!r}"
            )
        return parse_seeds(self.seeds or [])


def parse_seeds(texts: list[str]) -> list[int] | None:
    """--seeds values -> distinct integers (None when none are given)."""
    if not texts:
        return None
    try:
        seeds = [int(text) for text in texts]
    except ValueError:
        raise ValueError(
            f"--seeds: expected integers such as 1,2,3, got {','.join(texts)}"
        ) from None
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds: {','.join(texts)} repeats a seed")
    return seeds


def run(
    problems: list[str],
    entries: list[Entry],
    data_dir: str,
    output_dir: str,
    config: trainer.TrainConfig,
    seeds: list[int] | None = None,
    hparams: str = "",
    names: dict[Entry, str] | None = None,
    train: bool = True,
    kept: frozenset = frozenset(),
) -> list[dict]:
    """Trains each entry on each problem with each seed (resuming finished runs) -> rows.

    seeds (default: config.random_seed alone): one seed keeps the layout
    <output_dir>/<problem>/<model> and a row's "results" is that run's final
    metrics; several put each seed's runs under <output_dir>/seed<k>/ and a
    row's "results" and "run_dirs" are lists, one per seed (tables print
    their median and range: `seed_stats`). hparams: overrides for every run,
    after each entry's own (e.g. "max_length=128"). names: the run directory's
    name of each entry (default: its key in ENTRIES). train=False trains
    nothing: a run not finished gets None for its results (`finished_only`); one
    that only lacks its final evaluation is evaluated. kept: (problem, entry,
    seed) of runs whose figures are kept elsewhere (`records`): not trained either.
    """
    seeds = list(seeds or [config.random_seed])
    keys = names or {entry: key for key, entry in ENTRIES.items()}
    experiments = [
        (problem, entry, entry_experiment(entry, keys[entry], problem, hparams))
        for problem in problems
        for entry in entries
    ]  # resolved first, so a bad name fails before any training
    rows = []
    for problem, entry, exp in experiments:
        run_dirs, results = [], []
        for seed in seeds:
            base = output_dir if len(seeds) == 1 else os.path.join(output_dir, f"seed{seed}")
            run_dir = os.path.join(base, problem, keys[entry])
            seeded = dataclasses.replace(config, random_seed=seed)
            run_dirs.append(run_dir)
            finished = finished_lib.figures(run_dir, exp, data_dir, seeded)
            if finished is None and train and (problem, entry, seed) not in kept:
                finished = trainer.train(exp, data_dir, run_dir, seeded)
            elif finished is None and _trained_through(run_dir, seeded):
                finished = _evaluate(exp, data_dir, run_dir, seeded)
            if finished is not None and config.keep_best:  # the best checkpoint's figures
                finished = finished_lib.figures(run_dir, exp, data_dir, seeded)
            results.append(finished)
        row = {"problem": problem, "entry": entry}
        if len(seeds) == 1:
            row.update(results=results[0], run_dir=run_dirs[0])
        else:
            row.update(results=results, run_dirs=run_dirs, seeds=seeds)
        rows.append(row)
    return rows


def entry_experiment(entry: Entry, key: str, problem: str, hparams: str = ""):
    """`entry` (named `key`) resolved for `problem`, `hparams` after its own overrides."""
    overrides = (entry.hparams_for(key, problem), hparams)
    return experiment.Experiment.resolve(
        entry.model,
        problem,
        entry.hparams_set_for(problem),
        ",".join(part for part in overrides if part),
    )


def finished_only(rows: list[dict], names: dict[Entry, str] | None = None) -> tuple[list, list]:
    """`run(..., train=False)`'s rows -> (the rows with their finished runs only,
    dropping a row none of whose runs finished; "problem model seed k" per run
    left out). names: each entry's run name, as `run` took it."""
    keys = names or {entry: key for key, entry in ENTRIES.items()}
    kept, missing = [], []
    for row in rows:
        name = f"{row['problem']} {keys[row['entry']]}"
        if "run_dirs" not in row:  # one seed
            if row["results"] is None:
                missing.append(name)
            else:
                kept.append(row)
            continue
        done = [i for i, results in enumerate(row["results"]) if results is not None]
        missing += [f"{name} seed {seed}" for i, seed in enumerate(row["seeds"]) if i not in done]
        if done:
            kept.append(
                {
                    **row,
                    **{
                        key: [row[key][i] for i in done] for key in ("results", "run_dirs", "seeds")
                    },
                }
            )
    return kept, missing


def missing_note(missing: list[str]) -> str:
    """The line under a table read with --missing=skip ("" when every run finished)."""
    if not missing:
        return ""
    return f"\n\nNot finished, left out (--missing=skip): {'; '.join(missing)}."


# Batches per in-training evaluation of a comparison run (its table reads the final
# evaluation's figures, which cover each split whole); --keep_best chooses on whole splits.
EVAL_STEPS = 20


def _trained_through(run_dir: str, config: trainer.TrainConfig) -> bool:
    """Whether the run's newest checkpoint spent config's budget (steps, or minutes):
    all it lacks is its final evaluation (figures missing or stale)."""
    try:
        step = translation.trained_steps(run_dir)
    except FileNotFoundError:  # no checkpoint (or no run directory) yet
        return False
    if step > config.train_steps:
        raise ValueError(trainer.past_budget(run_dir, step, config.train_steps))
    minutes = run_dir_lib.trained_seconds(run_dir, step) / 60.0
    return step >= config.train_steps or bool(
        config.train_minutes and minutes >= config.train_minutes
    )


def _evaluate(exp, data_dir: str, run_dir: str, config: trainer.TrainConfig) -> dict | None:
    """A trained run's final evaluation (the trainer, with no step left to train), or
    None while a live trainer holds the run (it is finishing it)."""
    try:
        return trainer.train(exp, data_dir, run_dir, config)
    except run_lock.RunLockedError as err:
        logging.info("%s", err)
        return None
