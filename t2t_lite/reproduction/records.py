"""Kept figures of translation table runs, so that a table outlives its run directories.

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
figures always win, and rewrite its record.
"""

import dataclasses
import json
import os

import tensorflow as tf
from absl import logging

from t2t_lite import files
from t2t_lite.reproduction.translation import ROWS, Figures, Row

RECORD_FILE = "seed{seed}.json"


def _plain(data: dict) -> dict:
    """data as it reads back from JSON (tuples become lists), to compare with a record."""
    return json.loads(json.dumps(data))


@dataclasses.dataclass(frozen=True)
class Records:
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
        return os.path.join(self.directory, self.split, key, RECORD_FILE.format(seed=seed))

    def depends_on(self, row: Row, exp, seed: int) -> dict:
        """Everything a row's figure for one seed depends on."""
        return _plain(
            {
                "experiment": exp.to_dict(),
                "seed": seed,
                "train_steps": self.train_steps,
                "train_minutes": self.train_minutes,
                "split": self.split,
                "decode": row.decode,
                "average": row.average,
                "data": self.data,
            }
        )

    def keep(self, key: str, row: Row, exp, seed: int, figures: Figures) -> None:
        """Writes (or rewrites) the record of `key`'s figure for `seed`."""
        record = {"depends_on": self.depends_on(row, exp, seed), **dataclasses.asdict(figures)}
        files.write_atomically(self.path(key, seed), files.strict_json(record) + "\n")

    def recall(self, key: str, row: Row, exp, seed: int) -> Figures | None:
        """The recorded figure of `key` for `seed`, or None where there is none or it
        depends on something else (logged: which fields differ)."""
        path = self.path(key, seed)
        if not tf.io.gfile.exists(path):
            return None
        try:
            record = json.loads(files.read_text(path))
            kept = record.pop("depends_on")
            figures = Figures(**record)
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{path}: not a t2t-compare record ({err})") from None
        wanted = self.depends_on(row, exp, seed)
        differs = [name for name in sorted(wanted) if kept.get(name) != wanted[name]]
        if differs:
            logging.info("%s: not used; its %s differ from this table's.", path, ", ".join(differs))
            return None
        ponder = tuple(figures.ponder) if figures.ponder is not None else None
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
