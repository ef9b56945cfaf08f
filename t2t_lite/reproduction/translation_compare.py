"""t2t-compare's translation rows: train (or read) the runs and print Table 3 or Table 7.

The rows are `translation.ROWS`; each training row's runs are trained like
every comparison's (`runs.run`), and with --records each figure is
kept, and read back for a run that is not there (`records`).
"""

import dataclasses
import os

from t2t_lite import files
from t2t_lite.data import problem as problem_lib
from t2t_lite.reproduction import records, runs, translation


def compare(request: runs.Request) -> str:
    """Table 3 / Table 7 rows on one translation problem: perplexity and BLEU on
    request.split beside the papers' -> table.md's markdown (also written to
    output_dir).

    models: row keys, or "table3" / "table7". records_dir: keep every printed
    figure there, and print a run's record where its run is not there (named
    under the table).
    """
    seed_list = request.seed_list()
    output_dir, models, problems = request.output_dir, request.models, request.problems
    data_dir, config, hparams = request.data_dir, request.config, request.hparams
    split, records_dir = request.split, request.records_dir
    if len(problems) != 1 or not problem_lib.get(problems[0]).reports_bleu:
        raise ValueError(
            f"--models={','.join(models)}: translation rows take one text problem that "
            f"reports BLEU (e.g. translate_gettext), not {','.join(problems)}"
        )
    keys = translation.parse_rows(models)
    unknown = [key for key in keys if key not in translation.ROWS]
    if unknown:
        raise ValueError(
            f"--models: unknown {unknown}; translation rows: {', '.join(translation.ROWS)}, "
            f"or all of {' / '.join(translation.TABLES)}"
        )
    if records_dir:  # before any training: a bad --records is one line, not a lost table
        files.check_writable_dir(records_dir, "--records")
    # Every run keeps the checkpoints an averaged row reads.
    keep = max(config.keep_checkpoint_max, translation.AVERAGE_LAST)
    config = dataclasses.replace(config, eval_steps=runs.EVAL_STEPS, keep_checkpoint_max=keep)
    trained = translation.training_entries(keys)
    names = {entry: key for key, entry in trained.items()}
    kept = (
        _Kept(records_dir, keys, trained, problems[0], data_dir, split, config, seed_list, hparams)
        if records_dir
        else None
    )
    rows = runs.run(
        problems,
        list(trained.values()),
        data_dir,
        output_dir,
        config,
        seed_list,
        hparams,
        names,
        train=request.missing == "train",
        kept=kept.runs() if kept else frozenset(),
    )
    rows, left_out = runs.finished_only(rows, names)
    by_key = {names[row["entry"]]: row for row in rows}
    present = [key for key in keys if (translation.ROWS[key].trains_as or key) in by_key]
    table = translation.table_rows(present, by_key, data_dir, split)
    note = ""
    if kept:
        table, left_out, note = kept.complete(table, left_out)
    text = translation.markdown(table, split) + runs.missing_note(left_out) + note
    files.write_atomically(os.path.join(output_dir, "table.md"), text + "\n")
    return text


class _Kept:
    """A table's records (`records.Records`) with what they need of the table: the
    asked row keys, each training row's experiment and the seeds."""

    def __init__(
        self, directory, keys, trained, problem, data_dir, split, config, seed_list, hparams
    ):
        self.directory, self.keys, self.trained, self.problem = directory, keys, trained, problem
        self.data_dir, self.split, self.config = data_dir, split, config
        self.experiments = {
            key: runs.entry_experiment(entry, key, problem, hparams)
            for key, entry in trained.items()
        }
        self.seeds = seed_list or [config.random_seed]
        self.several = seed_list is not None
        self.store = None if problem_lib.get(problem).missing_data(data_dir) else self._open()

    def _open(self) -> records.Records:
        problem = problem_lib.get(self.problem)
        return records.Records.open(self.directory, problem, self.data_dir, self.split, self.config)

    def _rows_of(self, key: str) -> list[str]:
        """The asked rows that read the runs of training row `key`."""
        return [k for k in self.keys if (translation.ROWS[k].trains_as or k) == key]

    def _recorded(self, key: str, seed: int) -> bool:
        exp = self.experiments[key]
        rows = self._rows_of(key)
        return all(self.store.recall(k, translation.ROWS[k], exp, seed) is not None for k in rows)

    def runs(self) -> frozenset:
        """(problem, entry, seed) of each run every asked row of which has a matching record:
        not trained again."""
        if self.store is None:  # no data yet: nothing can match
            return frozenset()
        return frozenset(
            (self.problem, entry, seed)
            for key, entry in self.trained.items()
            for seed in self.seeds
            if self._recorded(key, seed)
        )

    def complete(self, table: list, left_out: list[str]) -> tuple[list, list[str], str]:
        """The table completed from (and kept in) the records -> (table, the runs
        still left out, the note naming the runs read from records)."""
        self.store = self.store or self._open()  # the data a first run generated
        table, recalled = records.complete(
            self.store, self.keys, table, self.experiments, self.seeds, self.several
        )
        had = set(recalled)
        names = {
            f"{self.problem} {key}" + (f" seed {seed}" if self.several else ""): (key, seed)
            for key in self.trained
            for seed in self.seeds
        }  # finished_only's names of the runs it leaves out

        def covered(name: str) -> bool:  # every asked row of that run was read from records
            key, seed = names[name]
            return all((k, seed) in had for k in self._rows_of(key))

        still = [name for name in left_out if not covered(name)]
        runs = [key + (f" seed {seed}" if self.several else "") for key, seed in recalled]
        return table, still, records.note(self.directory, runs)
