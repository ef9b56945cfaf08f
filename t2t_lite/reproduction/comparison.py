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

from t2t_lite import files
from t2t_lite.data import problem as problem_lib
from t2t_lite.reproduction import babi_report, greedy, lead, records, runs, seed_stats, translation
from t2t_lite.reproduction.entries import ENTRIES, Entry, parse_entries
from t2t_lite.reproduction.paper import paper_figures, task_of
from t2t_lite.run_dir import BEST_DIR
from t2t_lite.visualization import curves, plots


def babi_problems(problems: list[str]) -> bool:
    """True when every problem is a bAbI one (fact encoding); mixing kinds is an error."""
    kinds = {problem_lib.get(name).input_encoding == "facts" for name in problems}
    if len(kinds) > 1:
        raise ValueError("--problems: compare bAbI problems and other problems separately")
    return kinds == {True}


def compare(request: runs.Request) -> str:
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
    config = dataclasses.replace(config, eval_steps=-1 if config.keep_best else runs.EVAL_STEPS)
    train = request.missing == "train"
    names = {entry: key for key, entry in ENTRIES.items()}

    def experiment_of(problem: str, entry: Entry):
        return runs.entry_experiment(entry, names[entry], problem, hparams)

    kept, recalled, store = frozenset(), [], None
    if records_dir:
        files.check_writable_dir(records_dir, "--records")
        store = records.RunRecords.open(records_dir, problems, data_dir, config, greedy_examples)
        seeds_run = seed_list or [config.random_seed]
        kept = records.recorded_runs(store, problems, entries, seeds_run, names, experiment_of)
    rows = runs.run(
        problems, entries, data_dir, output_dir, config, seed_list, hparams, train=train, kept=kept
    )
    if store:
        if not all(store.data.values()):  # opened again: a first run generated the data
            store = records.RunRecords.open(
                records_dir, problems, data_dir, config, greedy_examples
            )
        recalled = records.recall_runs(store, rows, names, experiment_of, config.random_seed)
    rows, left_out = runs.finished_only(rows)
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
    table += runs.missing_note(left_out)
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
