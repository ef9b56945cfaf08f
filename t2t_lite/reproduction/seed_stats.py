"""Figures over training seeds: the median and the range, as result tables print them.

A comparison row holds one run's final metrics, or a list of them (one per
seed). Tables read every figure through `values` and print it with `spread`:
one seed prints the plain figure, several print "median [min, max]".

A non-finite figure (kept as null in strict JSON: a loss that diverged) is
no number to rank or average: the statistics read the finite ones, and a
printed spread says how many seeds were not finite.
"""

import math
import statistics


def _finite(numbers: list) -> list[float]:
    return [n for n in numbers if n is not None and math.isfinite(n)]


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


def spread(numbers: list[float | None], digits: int = 2) -> str:
    """[0.5] -> "0.50"; [0.5, 0.1, 0.3] -> "0.30 [0.10, 0.50]" (median [min, max]);
    non-finite values (None, nan) are counted apart: [0.5, None] -> "0.50 (1 of 2 nan)"."""
    if not numbers:
        raise ValueError("spread of no values")
    finite = _finite(numbers)
    if not finite:
        return "nan"
    if len(finite) == 1:
        text = f"{finite[0]:.{digits}f}"
    else:
        middle = statistics.median(finite)
        text = f"{middle:.{digits}f} [{min(finite):.{digits}f}, {max(finite):.{digits}f}]"
    left_out = len(numbers) - len(finite)
    return f"{text} ({left_out} of {len(numbers)} nan)" if left_out else text


def median(numbers: list[float | None]) -> float:
    """The median of the finite values (what a plot draws for several seeds); nan if none."""
    finite = _finite(numbers)
    return float(statistics.median(finite)) if finite else math.nan


def above(higher: list[float | None], lower: list[float | None]) -> bool:
    """Whether every value of `higher` exceeds every value of `lower` (their seed
    ranges do not overlap, `higher`'s on top); never when a value is not finite."""
    if len(_finite(higher)) < len(higher) or len(_finite(lower)) < len(lower):
        return False
    return min(higher) > max(lower)
