"""bAbI results beside the UT paper's Table 1, and its ponder analysis.

The paper (section 3.1) reports the average error over the 20 tasks and
the number of failed tasks (error > 5%), and observes (Figure 3) that the
adaptive UT ponders longer on tasks that need more supporting facts. A
bAbI problem here has one evaluation split per task (..._qa<k>), so a
run's metrics.json holds each task's error (1 - sequence accuracy) and,
under ACT, the encoder's mean ponder time over the facts.
"""

import json
import os
import re

import numpy as np

from t2t_lite import files, run_dir, sequences
from t2t_lite.data import tfrecord
from t2t_lite.reproduction import seed_stats
from t2t_lite.visualization import inspection, plots

# UT paper, Table 1, 10k training examples: (average error %, failed tasks of 20).
PAPER_TABLE1 = {"transformer": (15.2, 10), "universal_transformer": (0.21, 0)}
FAILED_ABOVE = 5.0  # error %, bAbI's convention
_TASK_SPLIT = re.compile(r"_qa(\d+)$")


def task_splits(results: dict) -> dict[int, str]:
    """{task: split} for the per-task splits among a run's results."""
    found = {}
    for split in results:
        match = _TASK_SPLIT.search(split)
        if match:
            found[int(match.group(1))] = split
    return dict(sorted(found.items()))


def task_errors(results: dict) -> dict[int, float]:
    """{task: error %} of one run's final metrics."""
    return {
        task: 100.0 * (1.0 - results[split]["sequence_accuracy"])
        for task, split in task_splits(results).items()
    }


def task_ponder(results: dict) -> dict[int, float]:
    """{task: the encoder's mean ponder time over facts} (adaptive UT runs; else empty)."""
    return {
        task: results[split]["encoder_ponder_time"]
        for task, split in task_splits(results).items()
        if "encoder_ponder_time" in results[split]
    }


def markdown_table(rows: list[dict]) -> str:
    """One line per model: error % per task, average, failed tasks, the paper's, ponder.

    Rows of several seeds print each figure as "median [min, max]" over seeds.
    """
    tasks = sorted({t for row in rows for r in seed_stats.per_seed(row) for t in task_errors(r)})
    header = (
        "| problem | model | "
        + " | ".join(f"task {t} error %" for t in tasks)
        + " | average error % | failed (> 5%) | paper average error % (10k, 20 tasks)"
        " | paper failed of 20 | encoder ponder time per task |"
    )
    lines = [header, "| --- | --- |" + " ---: |" * (len(tasks) + 4) + " --- |"]
    for row in rows:
        entry = row["entry"]
        paper = PAPER_TABLE1.get(entry.paper_row, (None, None))
        errors = seed_stats.values(row, task_errors)  # [{task: error %}] per seed
        cells = [
            seed_stats.spread([e[t] for e in errors], 1) if t in errors[0] else "-" for t in tasks
        ]
        average = seed_stats.spread([float(np.mean(list(e.values()))) for e in errors], 1)
        failed = seed_stats.spread([sum(v > FAILED_ABOVE for v in e.values()) for e in errors], 0)
        ponder = seed_stats.values(row, task_ponder)
        ponder_text = (
            " / ".join(seed_stats.spread([p[t] for p in ponder]) for t in sorted(ponder[0])) or "-"
        )
        lines.append(
            f"| {row['problem']} | {entry.label} | {' | '.join(cells)} | {average} "
            f"| {failed}/{len(errors[0])} | {_cell(paper[0])} | {_cell(paper[1])} "
            f"| {ponder_text} |"
        )
    return "\n".join(lines)


def _cell(value) -> str:
    return "-" if value is None else f"{value}"


def ponder_maps(
    run_directory: str, results: dict, data_dir: str, directory: str, examples: int = 1
) -> list[str]:
    """For an adaptive UT run, each task's first test stories: the ponder time
    per fact as JSON (and a PNG when matplotlib is there) -> paths written."""
    problem, model, _ = run_dir.open_run(run_directory)
    if not getattr(model.hparams, "adaptive", False):
        return []
    files.check_writable_dir(directory, "ponder maps directory")
    written = []
    for task, split in task_splits(results).items():
        paths = problem.split_files(data_dir, split)
        for number, example in enumerate(tfrecord.read_examples(paths, examples), 1):
            found = inspection.inspect(
                model,
                problem,
                sequences.strip_eos(example["inputs"]),
                sequences.strip_eos(example["targets"]),
            )
            record = inspection.ponder_record(found)
            base = os.path.join(directory, f"task{task}_{number}_ponder")
            files.write_atomically(base + ".json", json.dumps(record, indent=1))
            written.append(base + ".json")
            if plots.available():
                title = f"task {task}: ponder time per fact (the question last)"
                plots.save(plots.ponder_figure(record, title), base + ".png")
                written.append(base + ".png")
    return written
