"""Train several models on several problems and tabulate them beside the UT paper.

The Universal Transformer paper's Table 4 trains on algorithmic sequences of
length 40 and tests on length 400; its Tables 5 and 6 are the Learning to
Execute tasks (problems/learning_to_execute.py). `run` trains at any scale
and `markdown_table` sets the results beside the paper's numbers.
"""

import dataclasses
import json
import os

import tensorflow as tf
from absl import logging

from t2t_lite import experiment, files
from t2t_lite.data import problem as problem_lib
from t2t_lite.reproduction import babi_report, seed_stats
from t2t_lite.run_dir import METRICS_FILE
from t2t_lite.training import trainer
from t2t_lite.visualization import curves, plots

# UT paper, Table 4 (train length 40, test length 400): (char-acc, seq-acc).
PAPER_TABLE4 = {
    "copy": {"transformer": (0.53, 0.03), "universal_transformer": (0.91, 0.35)},
    "reverse": {"transformer": (0.13, 0.06), "universal_transformer": (0.96, 0.46)},
    "addition": {"transformer": (0.07, 0.0), "universal_transformer": (0.34, 0.02)},
}
TASKS = {"identity": "copy", "reverse": "reverse", "addition": "addition"}
# UT paper, Tables 5 (memorization) and 6 (program evaluation), Learning to
# Execute test sets: (char-acc, seq-acc).
PAPER_LTE = {
    "lte_copy": {"transformer": (0.98, 0.63), "universal_transformer": (1.0, 1.0)},
    "lte_double": {"transformer": (0.94, 0.55), "universal_transformer": (1.0, 1.0)},
    "lte_reverse": {"transformer": (0.81, 0.26), "universal_transformer": (1.0, 1.0)},
    "lte_program": {"transformer": (0.71, 0.29), "universal_transformer": (0.89, 0.63)},
    "lte_control": {"transformer": (0.93, 0.66), "universal_transformer": (1.0, 1.0)},
    "lte_addition": {"transformer": (1.0, 1.0), "universal_transformer": (1.0, 1.0)},
}
# Offsets shared by encoder and decoder, below 400: past the 1..200 test positions.
OFFSETS = "position_start_index=random,position_start_max=400"


@dataclasses.dataclass(frozen=True)
class Entry:
    """A model to compare: a display label, a registered model, hparams set and overrides."""

    label: str
    model: str
    hparams_set: str
    paper_row: str  # key into PAPER_TABLE4's (and babi_report.PAPER_TABLE1's) rows
    hparams: str = ""
    babi_hparams_set: str = ""  # the set for bAbI problems ("": not for bAbI)

    def hparams_set_for(self, problem: str) -> str:
        """The hparams set for `problem`: bAbI problems (fact encoding) get their own."""
        if problem_lib.get(problem).input_encoding != "facts":
            return self.hparams_set
        if not self.babi_hparams_set:
            raise ValueError(f"--models: {self.label!r} has no bAbI configuration")
        return self.babi_hparams_set


ENTRIES = {
    "transformer": Entry(
        "Transformer",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        babi_hparams_set="transformer_babi_tiny",
    ),
    "universal_transformer": Entry(
        "UT",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        babi_hparams_set="universal_transformer_babi_tiny",
    ),
    "adaptive_universal_transformer": Entry(
        "UT + ACT",
        "universal_transformer",
        "adaptive_universal_transformer_algorithmic_tiny",
        "universal_transformer",
        babi_hparams_set="adaptive_universal_transformer_babi_tiny",
    ),
    # The paper's trick for its algorithmic tasks: positions start at a random
    # offset in training, so the test's longer lengths meet trained positions.
    "universal_transformer_offsets": Entry(
        "UT, random offsets",
        "universal_transformer",
        "universal_transformer_algorithmic_tiny",
        "universal_transformer",
        OFFSETS,
    ),
    # The same offsets for the Transformer: does the trick alone explain the UT's gain?
    "transformer_offsets": Entry(
        "Transformer, random offsets",
        "transformer",
        "transformer_algorithmic_tiny",
        "transformer",
        OFFSETS,
    ),
}


def task_of(problem: str) -> str | None:
    """algorithmic_reverse_decimal20 -> "reverse", lte_copy -> "LTE copy"; else None."""
    parts = problem.split("_")
    if len(parts) == 3 and parts[0] == "algorithmic":
        return TASKS.get(parts[1])
    if problem in PAPER_LTE:
        return f"LTE {parts[1]}"
    return None


def paper_figures(problem: str, paper_row: str) -> tuple[float | None, float | None]:
    """The paper's (char-acc, seq-acc) for a problem and model row, or (None, None)."""
    table = PAPER_LTE.get(problem) or PAPER_TABLE4.get(task_of(problem), {})
    return table.get(paper_row, (None, None))


def babi_problems(problems: list[str]) -> bool:
    """True when every problem is a bAbI one (fact encoding); mixing kinds is an error."""
    kinds = {problem_lib.get(name).input_encoding == "facts" for name in problems}
    if len(kinds) > 1:
        raise ValueError("--problems: compare bAbI problems and other problems separately")
    return kinds == {True}


def parse_entries(names: list[str]) -> list[Entry]:
    """Names of ENTRIES -> entries; an unknown name is an error listing the known ones."""
    unknown = [n for n in names if n not in ENTRIES]
    if unknown:
        raise ValueError(f"--models: unknown {unknown}; known: {', '.join(ENTRIES)}")
    return [ENTRIES[n] for n in names]


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
) -> list[dict]:
    """Trains each entry on each problem with each seed (resuming finished runs) -> rows.

    seeds (default: config.random_seed alone): one seed keeps the layout
    <output_dir>/<problem>/<model> and a row's "results" is that run's final
    metrics; several put each seed's runs under <output_dir>/seed<k>/ and a
    row's "results" and "run_dirs" are lists, one per seed (tables print
    their median and range: `seed_stats`). hparams: overrides for every run,
    after each entry's own (e.g. "max_length=128").
    """
    seeds = list(seeds or [config.random_seed])
    keys = {entry: key for key, entry in ENTRIES.items()}
    experiments = [
        (
            problem,
            entry,
            experiment.Experiment.resolve(
                entry.model,
                problem,
                entry.hparams_set_for(problem),
                ",".join(part for part in (entry.hparams, hparams) if part),
            ),
        )
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
            results.append(
                _finished(run_dir, config.train_steps)
                or trainer.train(exp, data_dir, run_dir, seeded)
            )
        row = {"problem": problem, "entry": entry}
        if len(seeds) == 1:
            row.update(results=results[0], run_dir=run_dirs[0])
        else:
            row.update(results=results, run_dirs=run_dirs, seeds=seeds)
        rows.append(row)
    return rows


# Batches per in-training evaluation of a comparison run (its table reads the
# final evaluation's figures, which cover each split whole).
EVAL_STEPS = 20


def compare(
    output_dir: str,
    models: list[str],
    problems: list[str],
    data_dir: str,
    config: trainer.TrainConfig,
    seeds: list[str] | None = None,
    hparams: str = "",
) -> str:
    """t2t-compare: trains every model on every problem into output_dir; writes
    table.md there (and pictures) and returns its markdown.

    models: names of ENTRIES; seeds: --seeds texts. bAbI problems get Table 1's
    form and, per run, ponder maps in <run_dir>/ponder/; the others Table 4-6's
    form with table.png and curves.png.
    """
    entries = parse_entries(models)
    seed_list = parse_seeds(seeds or [])
    babi = babi_problems(problems)
    config = dataclasses.replace(config, eval_steps=EVAL_STEPS)
    rows = run(problems, entries, data_dir, output_dir, config, seed_list, hparams)
    if babi:
        table = babi_report.markdown_table(rows)
        for row in rows:
            for _, run_dir, results in seed_stats.runs(row):
                ponder_dir = os.path.join(run_dir, "ponder")
                babi_report.ponder_maps(run_dir, results, data_dir, ponder_dir)
    else:
        table = markdown_table(rows)
        write_plots(rows, output_dir)
    files.write_atomically(os.path.join(output_dir, "table.md"), table + "\n")
    return table


def _finished(run_dir: str, train_steps: int) -> dict | None:
    """The metrics of a run that already reached train_steps, else None."""
    path = os.path.join(run_dir, METRICS_FILE)
    if not tf.io.gfile.exists(path):
        return None
    metrics = json.loads(files.read_text(path))
    if metrics.pop("step", None) != train_steps:
        return None
    return metrics


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _figure(row: dict, split: str, key: str) -> str:
    """One metric of a row's split: the value, or median [min, max] over seeds."""
    return seed_stats.spread(seed_stats.values(row, lambda results: results[split][key]))


def markdown_table(rows: list[dict], long_split: str = "test", short_split: str = "dev") -> str:
    """One line per (problem, model): long-split char/seq accuracy beside the paper's.

    Rows of several seeds print each figure as "median [min, max]".
    """
    header = (
        "| task | model | char-acc | seq-acc | paper char-acc | paper seq-acc "
        "| seq-acc at training lengths | ponder time (enc/dec) |"
    )
    lines = [header, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
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
        lines.append(
            f"| {task or row['problem']} | {entry.label} | {_figure(row, long_split, 'accuracy')} "
            f"| {_figure(row, long_split, 'sequence_accuracy')} | {_cell(paper[0])} "
            f"| {_cell(paper[1])} | {_figure(row, short_split, 'sequence_accuracy')} | {ponder} |"
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
        bars.append({"task": task or row["problem"], "model": entry.label, "value": value,
                     "paper": paper})  # fmt: skip
    table_path = os.path.join(output_dir, "table.png")
    plots.save(plots.comparison_figure(bars), table_path)
    runs = {}
    for row in rows:
        label = f"{task_of(row['problem']) or row['problem']}, {row['entry'].label}"
        for seed, run_dir, _ in seed_stats.runs(row):  # several seeds: a curve each
            runs[label if seed is None else f"{label}, seed {seed}"] = curves.eval_curves(run_dir)
    curves_path = os.path.join(output_dir, "curves.png")
    plots.save(plots.curves_figure(runs), curves_path)
    return [table_path, curves_path]
