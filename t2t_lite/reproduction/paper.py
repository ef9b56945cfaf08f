"""The UT paper's figures a comparison sets its rows beside.

Table 4 (algorithmic tasks, train length 40, test length 400) and Tables 5
and 6 (Learning to Execute), and the task a problem's name stands for.
"""

# UT paper, Table 4 (train length 40, test length 400): (char-acc, seq-acc).
PAPER_TABLE4 = {
    "copy": {"transformer": (0.53, 0.03), "universal_transformer": (0.91, 0.35)},
    "reverse": {"transformer": (0.13, 0.06), "universal_transformer": (0.96, 0.46)},
    "addition": {"transformer": (0.07, 0.0), "universal_transformer": (0.34, 0.02)},
}
TASKS = {
    "identity": "copy",
    "reverse": "reverse",
    "addition": "addition",
    "parity": "parity",
    "sort": "sort",
}
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
