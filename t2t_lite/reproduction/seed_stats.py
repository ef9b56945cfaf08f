"""Figures over training seeds: the median and the range, as result tables print them.

A comparison row holds one run's final metrics, or a list of them (one per
seed). Tables read every figure through `values` and print it with `spread`:
one seed prints the plain figure, several print "median [min, max]".
"""

import statistics


def per_seed(row: dict) -> list[dict]:
    """A row's final metrics, one dict per seed (a single run counts as one)."""
    results = row["results"]
    return results if isinstance(results, list) else [results]


def runs(row: dict) -> list[tuple[int | None, str, dict]]:
    """(seed, run directory, final metrics) per run of a row; seed None for a single run."""
    if "run_dirs" not in row:
        return [(None, row["run_dir"], row["results"])]
    return list(zip(row["seeds"], row["run_dirs"], row["results"], strict=True))


def values(row: dict, figure) -> list[float]:
    """figure(results) for each seed's results -> one value per seed."""
    return [figure(results) for results in per_seed(row)]


def spread(numbers: list[float], digits: int = 2) -> str:
    """[0.5] -> "0.50"; [0.5, 0.1, 0.3] -> "0.30 [0.10, 0.50]" (median [min, max])."""
    if not numbers:
        raise ValueError("spread of no values")
    if len(numbers) == 1:
        return f"{numbers[0]:.{digits}f}"
    middle = statistics.median(numbers)
    return f"{middle:.{digits}f} [{min(numbers):.{digits}f}, {max(numbers):.{digits}f}]"


def median(numbers: list[float]) -> float:
    """The median (what a plot draws for several seeds)."""
    return float(statistics.median(numbers))


def above(higher: list[float], lower: list[float]) -> bool:
    """Whether every value of `higher` exceeds every value of `lower` (their seed
    ranges do not overlap, `higher`'s on top)."""
    return min(higher) > max(lower)
