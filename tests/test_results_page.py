"""The results page and the README print the kept records' figures, not copies that drift.

Each check is a sentence of the page with `{record:field}` holes; a hole is
the median [min, max] over the seeds' records under docs/records/ (as
t2t-compare prints it), and the filled sentence must be on the page,
white space aside.
"""

import glob
import json
import os
import re

import pytest

from t2t_lite.reproduction import seed_stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "docs", "records")
# Short names of record directories in the sentences below.
SHORT = {
    "$P": "algo/algorithmic_permute_three20",
    "$Q": "algo/algorithmic_parity_binary20",
    "$T": "translate_gettext",
    "$A": "add_best/algorithmic_addition_decimal40",
}

CHECKS = [
    ("docs/results.md", "with answer accuracy {$P/ut_wavefront:test.sequence_accuracy}"),
    (
        "docs/results.md",
        (
            "a Transformer with the UT's parameters, "
            "{$P/transformer_relative_equal_params:test.sequence_accuracy} "
            "(char-acc {$P/transformer_relative_equal_params:test.accuracy})"
        ),
    ),
    (
        "docs/results.md",
        (
            "(d = 128, 2 + 2), {$P/transformer_relative:test.sequence_accuracy} "
            "({$P/transformer_relative:test.accuracy})"
        ),
    ),
    (
        "docs/results.md",
        (
            "the UT's own block at a fixed 4 steps, {$P/ut_relative_fixed:test.sequence_accuracy} "
            "({$P/ut_relative_fixed:test.accuracy})"
        ),
    ),
    (
        "docs/results.md",
        (
            "still reaches only {$P/transformer_relative_equal_compute:test.sequence_accuracy} "
            "({$P/transformer_relative_equal_compute:test.accuracy})"
        ),
    ),
    (
        "docs/results.md",
        (
            "the wavefront {$Q/ut_wavefront:test.sequence_accuracy}, the Transformer with its "
            "parameters {$Q/transformer_relative_equal_params:test.sequence_accuracy}, at d = 128 "
            "{$Q/transformer_relative:test.sequence_accuracy}, the UT's block at 4 steps "
            "{$Q/ut_relative_fixed:test.sequence_accuracy}, and at equal compute "
            "{$Q/transformer_relative_equal_compute:test.sequence_accuracy}"
        ),
    ),
    (
        "docs/results.md",
        "the base has perplexity {$T/dev/t3_base:perplexity} and BLEU {$T/dev/t3_base:bleu:1}",
    ),
    ("docs/results.md", "the base has BLEU {$T/test/t3_base:bleu:1} over three seeds"),
    # The headlines table.
    ("docs/results.md", "wavefront UT {$P/ut_wavefront:test.sequence_accuracy} answer accuracy"),
    (
        "docs/results.md",
        "base dev BLEU {$T/dev/t3_base:bleu:1}, test {$T/test/t3_base:bleu:1}",
    ),
    (
        "docs/results.md",
        (
            "UT {$A/universal_transformer_randomized:test.greedy_accuracy} greedy char-acc "
            "(4 seeds, one held out); same-size Transformer "
            "{$A/transformer_equal_params_randomized:test.greedy_accuracy}"
        ),
    ),
    ("README.md", "wavefront UT {$P/ut_wavefront:test.sequence_accuracy} answer accuracy"),
    ("README.md", "base dev BLEU {$T/dev/t3_base:bleu:1}"),
    (
        "README.md",
        (
            "UT {$A/universal_transformer_randomized:test.greedy_accuracy} greedy char-acc; "
            "same-size Transformer {$A/transformer_equal_params_randomized:test.greedy_accuracy}"
        ),
    ),
]


def recorded(hole: str) -> str:
    """`dir:field.path[:digits]` -> the spread of that field over dir's seed records."""
    directory, field, *digits = hole.split(":")
    for short, long in SHORT.items():
        directory = directory.replace(short, long)
    values = []
    for path in sorted(glob.glob(os.path.join(RECORDS, directory, "seed*.json"))):
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
        value = value.get("results", value)
        for key in field.split("."):
            value = value[key]
        values.append(value)
    assert values, f"no records in docs/records/{directory}"
    return seed_stats.spread(values, int(digits[0]) if digits else 2)


def page(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return " ".join(f.read().split())


@pytest.mark.parametrize("name, sentence", CHECKS)
def test_the_page_prints_the_records_figures(name, sentence):
    filled = re.sub(r"\{([^}]+)\}", lambda hole: recorded(hole.group(1)), sentence)
    assert filled in page(name), f"{name} does not say: {filled}"
