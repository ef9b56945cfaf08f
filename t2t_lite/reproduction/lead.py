"""The Universal Transformer's lead over the Transformer, per task, under a comparison table.

For each task whose rows hold both families, and for each accuracy (teacher-
forced and greedy character accuracy on the long split): the UT row with the
highest median, its median minus the highest Transformer median, and whether
its range lies above every Transformer row's range over the seeds ("apart")
or not ("overlap"; "one seed" where a row has one). This is the reading the
issue of the UT's own edge asks of its table (docs/length_depth.md): a lead of
at least 0.3 with ranges apart over three seeds.
"""

from t2t_lite.reproduction import seed_stats
from t2t_lite.reproduction.paper import task_of

UT = "universal_transformer"
METRICS = (("accuracy", "char-acc"), ("greedy_accuracy", "greedy char-acc"))


def _values(row: dict, split: str, key: str) -> list[float] | None:
    """One value per seed, or None where a seed lacks the figure."""
    if any(key not in results.get(split, {}) for results in seed_stats.per_seed(row)):
        return None
    return seed_stats.values(row, lambda results: results[split][key])


def _lead(uts: list[tuple[str, list]], others: list[tuple[str, list]]) -> str:
    """ "<UT label>: +0.40 over <best Transformer label>, apart"."""
    label, best = max(uts, key=lambda pair: seed_stats.median(pair[1]))
    rival, rival_values = max(others, key=lambda pair: seed_stats.median(pair[1]))
    delta = seed_stats.median(best) - seed_stats.median(rival_values)
    if min(len(best), *(len(values) for _, values in others)) < 2:
        spread = "one seed"
    else:
        apart = all(seed_stats.above(best, values) for _, values in others)
        spread = "apart" if apart else "overlap"
    return f"{label}: {delta:+.2f} over {rival}, {spread}"


def section(rows: list[dict], split: str = "test") -> str:
    """ "\\n\\n" and the lead table, or "" where no task has rows of both families."""
    tasks: dict[str, list[dict]] = {}
    for row in rows:
        tasks.setdefault(row["problem"], []).append(row)
    lines = []
    for problem, task_rows in tasks.items():
        cells = []
        for key, _ in METRICS:
            uts, others = [], []
            for row in task_rows:
                values = _values(row, split, key)
                if values is not None:
                    side = uts if row["entry"].model == UT else others
                    side.append((row["entry"].label, values))
            cells.append(_lead(uts, others) if uts and others else "-")
        if any(cell != "-" for cell in cells):
            lines.append(f"| {task_of(problem) or problem} | {' | '.join(cells)} |")
    if not lines:
        return ""
    head = "| task | " + " | ".join(f"UT's lead, {name}" for _, name in METRICS) + " |"
    rule = "| --- |" + " --- |" * len(METRICS)
    return "\n\n" + "\n".join([head, rule, *lines])
