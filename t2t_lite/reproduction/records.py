"""Kept figures of comparison runs, so that a table outlives its run directories.

A Table 3 sweep is dozens of runs, each tens of megabytes with the five
checkpoints its averaged row reads. With --records=DIR, t2t-compare keeps
every figure it prints, one file per row and seed,

  DIR/<split>/<row>/seed<k>.json

with everything the figure depends on: the run's experiment (model, problem,
resolved hparams), its seed and budget, the row's decoding, the split and
the data's content (`Problem.data_fingerprint`: the files' bytes, so data
written again identically is the same data and any other data is not). A
later table whose run of a row and seed is not there (deleted to save space,
lost with a machine, or not finished) prints the record instead when all of
that matches, and names the runs it read from records. A finished run's own
figures always win, and rewrite its record. The other comparisons (the
algorithmic and Learning to Execute tables) keep each run's final metrics
the same way (`RunRecords`), in DIR/<problem>/<entry>/seed<k>.json, with
the run's trail beside them (`run_trail`: its training seconds and its
periodic evaluations), so that a notebook can cite a run's wall time and
curves, and curves.png draw them, once its directory is gone.
"""

import dataclasses
import os

from absl import logging

from t2t_lite import hparams as hparams_lib
from t2t_lite import run_dir as run_dir_lib
from t2t_lite import stamp
from t2t_lite.data import problem as problem_lib
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.reproduction.translation import ROWS, Figures, Row, trained_steps
from t2t_lite.visualization import curves

RECORD_FILE = "seed{seed}.json"
RECORD_KIND = "a t2t-compare record"  # a damaged one's error: "<path>: not a t2t-compare record"


def _read(path: str, wanted: dict, parse, hparams_class: type):
    """parse(the record's body) where the record at `path` depends on exactly
    `wanted` (its hparams completed with keys added since it was written); None
    where there is none or it differs (logged: in what). A damaged record is a
    ValueError naming it."""
    found = stamp.read(path, kind=RECORD_KIND)
    if found is None:
        return None
    kept, record = found
    try:
        if isinstance(kept.get("decode"), str):  # kept as the flag's text before `stamp.decode`
            kept["decode"] = stamp.decode(decoder_lib.decode_hparams(kept["decode"]))
        kept_hparams = kept["experiment"]["hparams"]
        kept["experiment"]["hparams"] = hparams_lib.complete(hparams_class, kept_hparams)
        figures = parse(record)
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not {RECORD_KIND} ({err})") from None
    differs = stamp.differs(kept, wanted)
    if differs:
        logging.info("%s: not used; its %s differ from this table's.", path, ", ".join(differs))
        return None
    return figures


class _Store:
    """The one record store both kinds of table keep their figures in:
    <directory>/<group>/<key>/seed<k>.json (group: a translation table's split,
    an algorithmic table's problem), each with what it depends on (`stamp`'s
    form): the run's experiment, seed and budget, and what the kind adds."""

    directory: str
    train_steps: int
    train_minutes: float

    def _path(self, group: str, key: str, seed: int) -> str:
        return os.path.join(self.directory, group, key, RECORD_FILE.format(seed=seed))

    def _depends_on(self, exp, seed: int, more: dict) -> dict:
        return {
            "experiment": exp.to_dict(),
            "seed": seed,
            "train_steps": self.train_steps,
            "train_minutes": self.train_minutes,
            **more,
        }

    def _keep(self, group: str, key: str, exp, seed: int, more: dict, body: dict) -> None:
        path = self._path(group, key, seed)
        stamp.keep(path, self._depends_on(exp, seed, more), body)

    def _recall(self, group: str, key: str, exp, seed: int, more: dict, parse):
        wanted = self._depends_on(exp, seed, more)
        return _read(self._path(group, key, seed), wanted, parse, type(exp.hparams))


@dataclasses.dataclass(frozen=True)
class Records(_Store):
    """One table's records: where they live and what every figure of the table
    depends on besides its row, experiment and seed."""

    directory: str
    split: str
    data: str  # Problem.data_fingerprint of the table's data dir
    train_steps: int
    train_minutes: float

    @classmethod
    def open(cls, directory: str, problem, data_dir: str, split: str, config) -> "Records":
        """The records in `directory` for a table of `problem` on data_dir's `split`
        trained with config's budget (reads the data files whole once)."""
        fingerprint = problem.data_fingerprint(data_dir)
        return cls(directory, split, fingerprint, config.train_steps, config.train_minutes)

    def path(self, key: str, seed: int) -> str:
        return self._path(self.split, key, seed)

    def _more(self, row: Row) -> dict:
        """What a row's figure depends on besides the run: the split, the row's
        decoding and average, the data's content."""
        return {
            "split": self.split,
            "decode": stamp.decode(decoder_lib.decode_hparams(row.decode)),
            "average": row.average,
            "data": self.data,
        }

    def depends_on(self, row: Row, exp, seed: int) -> dict:
        """Everything a row's figure for one seed depends on."""
        return self._depends_on(exp, seed, self._more(row))

    def keep(self, key: str, row: Row, exp, seed: int, figures: Figures) -> None:
        """Writes (or rewrites) the record of `key`'s figure for `seed`. The record
        names its own seed, whichever way the printing table labels the figure (a
        single run's without one), so its content is the run's alone."""
        body = dataclasses.asdict(dataclasses.replace(figures, seed=seed))
        self._keep(self.split, key, exp, seed, self._more(row), body)

    def recall(self, key: str, row: Row, exp, seed: int) -> Figures | None:
        """The recorded figure of `key` for `seed`, or None where there is none or it
        depends on something else (logged: which fields differ)."""
        return self._recall(self.split, key, exp, seed, self._more(row), _figures)


def _body(body: dict) -> dict:
    """An algorithmic record's figures: results per split, each split's metrics numbers."""
    results = body["results"]
    if not isinstance(results, dict):
        raise TypeError("its results are not an object")
    for split in ("dev", "test"):  # every table reads both
        if split not in results:
            raise KeyError(f"its results have no {split!r} split")
    for split, metrics in results.items():
        if not isinstance(metrics, dict):
            raise TypeError(f"results.{split} is not an object")
        for metric, value in metrics.items():
            if value is not None and not isinstance(value, int | float):
                raise TypeError(f"results.{split}.{metric} is {value!r}, not a number")
    return dict(body)


def _figures(body: dict) -> Figures:
    figures = Figures(**body)
    ponder = tuple(figures.ponder) if figures.ponder is not None else None  # a JSON list
    return dataclasses.replace(figures, ponder=ponder)


def complete(
    records: Records,
    keys: list[str],
    table: list,
    experiments: dict[str, object],
    seeds: list[int],
    several: bool,
) -> tuple[list, list[tuple[str, int]]]:
    """Keeps every figure of `table` (translation.table_rows: (row, [Figures])) and
    adds, per row key and seed it lacks, the matching record -> (the table in keys'
    order, the (key, seed) pairs read from records). experiments: each training
    row's Experiment; several: whether the table has several seeds (its figures
    name their seed; a single run's name none). A decode-only row keeps only the
    seeds its training row has, as the two are read seed for seed."""
    live = {id(row): figures for row, figures in table}
    completed, recalled = {}, []
    for key in keys:
        row = ROWS[key]
        exp = experiments[row.trains_as or key]
        by_seed = {(f.seed if several else seeds[0]): f for f in live.get(id(row), [])}
        for seed, figures in by_seed.items():
            records.keep(key, row, exp, seed, figures)
        for seed in seeds:
            if seed in by_seed:
                continue
            found = records.recall(key, row, exp, seed)
            if found is not None:
                by_seed[seed] = dataclasses.replace(found, seed=seed if several else None)
                recalled.append((key, seed))
        completed[key] = by_seed
    for key in keys:
        source = ROWS[key].trains_as
        if source in completed:
            extra = [seed for seed in completed[key] if seed not in completed[source]]
            for seed in extra:
                del completed[key][seed]
            recalled = [(k, s) for k, s in recalled if (k, s) not in {(key, e) for e in extra}]
    merged = [
        (ROWS[key], [completed[key][seed] for seed in seeds if seed in completed[key]])
        for key in keys
        if completed[key]
    ]
    return merged, recalled


@dataclasses.dataclass(frozen=True)
class RunRecords(_Store):
    """The records of a comparison of whole runs (the algorithmic and Learning to
    Execute tables, whose figures are each run's final metrics, greedy ones
    included): DIR/<problem>/<entry>/seed<k>.json, each with what it depends on
    (the experiment, seed, budget, the greedy decode's example count and the
    problem's data fingerprint)."""

    directory: str
    data: dict  # problem -> Problem.data_fingerprint ("" while its data is missing)
    train_steps: int
    train_minutes: float
    greedy_examples: int
    keep_best: str = ""  # figures of the best checkpoint by it (--keep_best), "": the last

    @classmethod
    def open(cls, directory: str, problems: list[str], data_dir: str, config, greedy_examples):
        """The records for `problems` on data_dir (reads each problem's data whole)."""
        data = {}
        for name in problems:
            problem = problem_lib.get(name)
            missing = problem.missing_data(data_dir)
            data[name] = "" if missing else problem.data_fingerprint(data_dir)
        return cls(
            directory,
            data,
            config.train_steps,
            config.train_minutes,
            greedy_examples,
            config.keep_best,
        )

    def path(self, problem: str, key: str, seed: int) -> str:
        return self._path(problem, key, seed)

    def _more(self, problem: str) -> dict:
        """What a run's figures depend on besides the run: the greedy decode's example
        count, the data's content and, for the best checkpoint's figures, keep_best
        (a last checkpoint's name none, as records kept before it did)."""
        best = {"keep_best": self.keep_best} if self.keep_best else {}
        return {"greedy_examples": self.greedy_examples, "data": self.data[problem], **best}

    def depends_on(self, problem: str, exp, seed: int) -> dict:
        return self._depends_on(exp, seed, self._more(problem))

    def keep(self, problem: str, key: str, exp, seed: int, results: dict, trail=None) -> None:
        """Writes the run's final metrics, and its trail (`run_trail`) beside them."""
        body = {"results": results, **(trail or {})}
        self._keep(problem, key, exp, seed, self._more(problem), body)

    def recall(self, problem: str, key: str, exp, seed: int) -> dict | None:
        """The record of that run, {"results": final metrics, and its trail where
        it has one}, or None (none, or another's)."""
        if not self.data[problem]:  # its data is missing: no record can be its
            return None
        return self._recall(problem, key, exp, seed, self._more(problem), _body)


def run_trail(directory: str) -> dict:
    """What a finished run's record keeps beside its figures: the seconds it
    trained to its newest checkpoint ("train_seconds"; resumed runs' sessions
    added up) and its periodic evaluations ("curves": split -> metric ->
    [[step, value], ...], from its eval_<split>/ events). {} where the run
    directory is not here."""
    try:
        step = trained_steps(directory)
    except FileNotFoundError:  # no run (or no checkpoint) here: nothing to keep
        return {}
    evaluated = {
        split: curves.eval_curves(directory, split) for split in curves.eval_splits(directory)
    }
    return {
        "train_seconds": run_dir_lib.trained_seconds(directory, step),
        "curves": {
            split: {metric: [list(point) for point in points] for metric, points in metrics.items()}
            for split, metrics in evaluated.items()
            if metrics
        },
    }


def recorded_curves(row: dict, directory: str, split: str = "dev") -> dict:
    """The `split` curves (metric -> [(step, value)]) that the record read in
    place of the run in `directory` keeps ({}: none; `recall_runs` put it there)."""
    kept = row.get("recorded", {}).get(directory, {}).get("curves", {}).get(split, {})
    return {metric: [tuple(point) for point in points] for metric, points in kept.items()}


def note(directory: str, runs: list[str]) -> str:
    """The line under a table naming the runs it read from records ("" for none)."""
    if not runs:
        return ""
    return f"\n\nRead from records ({directory}; their runs are not here): {'; '.join(runs)}."


def _runs_of(row: dict, seed: int) -> list[tuple[int | None, int, str]]:
    """(index, seed, run directory) per run of a comparison row (`runs.run`'s);
    a single run's seed is `seed`, its index None."""
    if "run_dirs" not in row:
        return [(None, seed, row["run_dir"])]
    return [(i, s, d) for i, (s, d) in enumerate(zip(row["seeds"], row["run_dirs"], strict=True))]


def recall_runs(store: RunRecords, rows: list[dict], names: dict, experiment_of, seed: int):
    """Fills each run of `rows` that has no figures with its record, where one
    matches -> ("problem entry[ seed k]" per run read from records). The whole
    record goes into the row's "recorded" (run directory -> record: its trail
    for `recorded_curves`, and `keep_runs` leaves it as it is). names: each
    entry's run name; experiment_of(problem, entry): its Experiment."""
    recalled = []
    for row in rows:
        problem, entry = row["problem"], row["entry"]
        for index, run_seed, directory in _runs_of(row, seed):
            results = row["results"] if index is None else row["results"][index]
            if results is not None:
                continue
            exp = experiment_of(problem, entry)
            found = store.recall(problem, names[entry], exp, run_seed)
            if found is None:
                continue
            row.setdefault("recorded", {})[directory] = found
            if index is None:
                row["results"] = dict(found["results"])
            else:
                row["results"][index] = dict(found["results"])
            suffix = "" if index is None else f" seed {run_seed}"
            recalled.append(f"{problem} {names[entry]}{suffix}")
    return recalled


def keep_runs(store: RunRecords, rows: list[dict], names: dict, experiment_of, seed: int):
    """Keeps every run's figures of `rows` (finished ones: `runs.finished_only`)
    with its trail; a run read from its record leaves the record as it is."""
    for row in rows:
        problem, entry = row["problem"], row["entry"]
        for index, run_seed, directory in _runs_of(row, seed):
            if directory in row.get("recorded", {}):
                continue
            results = row["results"] if index is None else row["results"][index]
            exp = experiment_of(problem, entry)
            store.keep(problem, names[entry], exp, run_seed, results, run_trail(directory))


def recorded_runs(store, problems, entries, seeds, names, experiment_of) -> frozenset:
    """(problem, entry, seed) of every run with a matching record: not trained again."""
    return frozenset(
        (problem, entry, seed)
        for problem in problems
        for entry in entries
        for seed in seeds
        if store.recall(problem, names[entry], experiment_of(problem, entry), seed) is not None
    )
