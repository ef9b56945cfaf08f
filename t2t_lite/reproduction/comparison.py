"""Train several models on several problems and tabulate them beside the UT paper.

The Universal Transformer paper's Table 4 trains on algorithmic sequences of
length 40 and tests on length 400; its Tables 5 and 6 are the Learning to
Execute tasks (problems/learning_to_execute.py). `run` trains at any scale
and `markdown_table` sets the results beside the paper's numbers.
"""

import dataclasses
import os

import tensorflow as tf
from absl import logging

from t2t_lite import experiment, files, run_lock
from t2t_lite import run_dir as run_dir_lib
from t2t_lite.data import problem as problem_lib
from t2t_lite.reproduction import babi_report, greedy, lead, records, seed_stats, translation
from t2t_lite.reproduction import finished as finished_lib
from t2t_lite.reproduction.entries import ENTRIES, Entry, parse_entries
from t2t_lite.reproduction.paper import paper_figures, task_of
from t2t_lite.run_dir import BEST_DIR
from t2t_lite.training import trainer
from t2t_lite.visualization import curves, plots


def babi_problems(problems: list[str]) -> bool:
    """True when every problem is a bAbI one (fact encoding); mixing kinds is an error."""
    kinds = {problem_lib.get(name).input_encoding == "facts" for name in problems}
    if len(kinds) > 1:
        raise ValueError("--problems: compare bAbI problems and other problems separately")
    return kinds == {True}


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


def compare(request: Request) -> str:
    """The algorithmic, Learning to Execute or bAbI table: trains every model on
    every problem into output_dir; writes table.md there (and pictures) and
    returns its markdown.

    models: names of ENTRIES. bAbI problems get Table 1's form and, per run,
    ponder maps in <run_dir>/ponder/; the others Table 4-6's form with
    table.png and curves.png, and with greedy_examples != 0 the greedy-decoded
    accuracy of that many test examples (< 0: all) beside the teacher-forced
    one. records_dir: a run not here (or not finished) with a matching record
    prints it and is not trained (`records.RunRecords`).
    """
    seed_list = request.seed_list()
    output_dir, models, problems = request.output_dir, request.models, request.problems
    data_dir, config, hparams = request.data_dir, request.config, request.hparams
    greedy_examples, records_dir = request.greedy_examples, request.records_dir
    if translation.is_translation(models):  # raises for a mix of both kinds
        raise ValueError(
            f"--models={','.join(models)}: translation rows are compared by "
            "translation_compare.compare"
        )
    entries = parse_entries(models)
    babi = babi_problems(problems)
    if records_dir and babi:
        raise ValueError("--records: not for bAbI tables (their ponder maps read the runs)")
    config = dataclasses.replace(config, eval_steps=-1 if config.keep_best else EVAL_STEPS)
    train = request.missing == "train"
    names = {entry: key for key, entry in ENTRIES.items()}

    def experiment_of(problem: str, entry: Entry):
        return entry_experiment(entry, names[entry], problem, hparams)

    kept, recalled, store = frozenset(), [], None
    if records_dir:
        files.check_writable_dir(records_dir, "--records")
        store = records.RunRecords.open(records_dir, problems, data_dir, config, greedy_examples)
        seeds_run = seed_list or [config.random_seed]
        kept = records.recorded_runs(store, problems, entries, seeds_run, names, experiment_of)
    rows = run(
        problems, entries, data_dir, output_dir, config, seed_list, hparams, train=train, kept=kept
    )
    if store:
        if not all(store.data.values()):  # opened again: a first run generated the data
            store = records.RunRecords.open(
                records_dir, problems, data_dir, config, greedy_examples
            )
        recalled = records.recall_runs(store, rows, names, experiment_of, config.random_seed)
    rows, left_out = finished_only(rows)
    if babi:
        table = babi_report.markdown_table(rows)
        for row in rows:
            for _, run_dir, results in seed_stats.runs(row):
                ponder_dir = os.path.join(run_dir, "ponder")
                babi_report.ponder_maps(run_dir, results, data_dir, ponder_dir)
    else:
        if greedy_examples:
            add_greedy(rows, data_dir, greedy_examples, best=bool(config.keep_best))
        if store:
            records.keep_runs(store, rows, names, experiment_of, config.random_seed)
        table = markdown_table(rows) + lead.section(rows)
        if rows:
            write_plots(rows, output_dir)
    table += missing_note(left_out)
    table += records.note(records_dir, recalled)
    files.write_atomically(os.path.join(output_dir, "table.md"), table + "\n")
    return table


def add_greedy(
    rows: list[dict], data_dir: str, max_examples: int, split: str = "test", best: bool = False
) -> None:
    """Adds greedy_accuracy and greedy_sequence_accuracy to each run's `split` results
    (of its newest checkpoint, or with `best` of best/'s: --keep_best)."""
    for row in rows:
        for _, run_dir, results in seed_stats.runs(row):
            if "greedy_accuracy" in results[split]:  # read from a record that has it
                continue
            chosen = os.path.join(run_dir, BEST_DIR) if best else ""
            decoded = greedy.evaluate(
                run_dir,
                data_dir,
                split,
                max_examples,
                checkpoint_path=chosen,
                name="greedy_best" if best else "greedy",
            )
            results[split]["greedy_accuracy"] = decoded["char_accuracy"]
            results[split]["greedy_sequence_accuracy"] = decoded["sequence_accuracy"]


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


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _figure(row: dict, split: str, key: str) -> str:
    """One metric of a row's split: the value, or median [min, max] over seeds ("-": none)."""
    if any(key not in results[split] for results in seed_stats.per_seed(row)):
        return "-"
    return seed_stats.spread(seed_stats.values(row, lambda results: results[split][key]))


def markdown_table(rows: list[dict], long_split: str = "test", short_split: str = "dev") -> str:
    """One line per (problem, model): long-split char/seq accuracy beside the paper's.

    Rows of several seeds print each figure as "median [min, max]".
    """
    header = (
        "| task | model | char-acc | seq-acc | greedy char-acc | greedy seq-acc "
        "| paper char-acc | paper seq-acc | seq-acc at training lengths | ponder time (enc/dec) |"
    )
    lines = [header, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        entry = row["entry"]
        task = task_of(row["problem"])
        paper = paper_figures(row["problem"], entry.paper_row)
        ponder = (
            f"{_figure(row, long_split, 'encoder_ponder_time')} / "
            f"{_figure(row, long_split, 'decoder_ponder_time')}"
            if "encoder_ponder_time" in seed_stats.per_seed(row)[0][long_split]
            else "-"
        )
        figures = [
            _figure(row, long_split, key)
            for key in (
                "accuracy",
                "sequence_accuracy",
                "greedy_accuracy",
                "greedy_sequence_accuracy",
            )
        ]
        lines.append(
            f"| {task or row['problem']} | {entry.label} | {' | '.join(figures)} "
            f"| {_cell(paper[0])} | {_cell(paper[1])} "
            f"| {_figure(row, short_split, 'sequence_accuracy')} | {ponder} |"
        )
    return "\n".join(lines)


def write_plots(rows: list[dict], output_dir: str, long_split: str = "test") -> list[str]:
    """table.png (test char-acc per task and model, the paper's as markers) and curves.png
    (dev loss and accuracies over steps, per run) in output_dir -> paths written.

    Without matplotlib (the `viz` extra) nothing is drawn and a log line says how to get it.
    """
    if not plots.available():
        logging.info("No plots: %s", plots.INSTALL_HINT)
        return []
    bars = []
    for row in rows:
        entry, task = row["entry"], task_of(row["problem"])
        paper = paper_figures(row["problem"], entry.paper_row)[0]
        value = seed_stats.median(seed_stats.values(row, lambda r: r[long_split]["accuracy"]))
        bars.append(
            {"task": task or row["problem"], "model": entry.label, "value": value, "paper": paper}
        )
    table_path = os.path.join(output_dir, "table.png")
    plots.save(plots.comparison_figure(bars), table_path)
    runs = {}
    for row in rows:
        label = f"{task_of(row['problem']) or row['problem']}, {row['entry'].label}"
        for seed, run_dir, _ in seed_stats.runs(row):  # several seeds: a curve each
            name = label if seed is None else f"{label}, seed {seed}"
            if tf.io.gfile.exists(run_dir):
                runs[name] = curves.eval_curves(run_dir)
            elif kept := records.recorded_curves(row, run_dir):  # read from a record
                runs[name] = kept
    curves_path = os.path.join(output_dir, "curves.png")
    if not runs:  # no curve to draw (runs read from records without one), none left of others
        if tf.io.gfile.exists(curves_path):
            tf.io.gfile.remove(curves_path)
        return [table_path]
    plots.save(plots.curves_figure(runs), curves_path)
    return [table_path, curves_path]
