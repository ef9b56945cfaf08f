"""The UT's lead over the Transformer under a comparison table, by hand."""

from t2t_lite.reproduction import comparison, lead


def _row(problem, entry, chars, greedy=None):
    """A row of several seeds: teacher-forced (and greedy) char-acc per seed."""
    per_seed = []
    for k, char in enumerate(chars):
        test = {"accuracy": char, "sequence_accuracy": 0.0}
        if greedy is not None:
            test["greedy_accuracy"] = greedy[k]
        per_seed.append({"test": test, "dev": {"sequence_accuracy": 1.0}})
    return {"problem": problem, "entry": comparison.ENTRIES[entry], "results": per_seed}


S3 = "algorithmic_permute_three20"


def test_the_best_ut_median_against_the_best_transformer_median_and_every_range():
    """S3: the wavefront 1.00 [0.85, 1.00], the fixed UT 0.70; Transformers 0.60
    [0.60, 0.60] and 0.59 [0.55, 0.62]: +0.40 over the better Transformer, the
    wavefront's lowest seed (0.85) above both ranges: apart. Greedy: the
    wavefront 0.80 [0.61, 0.95] against 0.61 [0.60, 0.62]: +0.19, overlapping
    at 0.61-0.62. Reverse has UT rows only: no line."""
    rows = [
        _row(S3, "ut_wavefront", [1.0, 0.85, 1.0], [0.95, 0.61, 0.8]),
        _row(S3, "ut_relative_fixed", [0.7, 0.7, 0.7], [0.7, 0.7, 0.7]),
        _row(S3, "transformer_relative_equal_params", [0.6, 0.6, 0.6], [0.6, 0.6, 0.6]),
        _row(S3, "transformer_relative", [0.55, 0.59, 0.62], [0.62, 0.61, 0.6]),
        _row("algorithmic_reverse_decimal20", "universal_transformer", [0.9, 0.9]),
    ]
    wavefront = comparison.ENTRIES["ut_wavefront"].label
    same_size = comparison.ENTRIES["transformer_relative_equal_params"].label
    relative = comparison.ENTRIES["transformer_relative"].label
    lines = lead.section(rows).splitlines()
    assert lines[0] == ""
    assert lines[2:4] == ["| task | UT's lead, char-acc | UT's lead, greedy char-acc |",
                          "| --- | --- | --- |"]  # fmt: skip
    expected = (
        f"| {S3} | {wavefront}: +0.40 over {same_size}, apart "
        f"| {wavefront}: +0.19 over {relative}, overlap |"
    )
    assert lines[4:] == [expected]


def test_a_lead_behind_or_of_one_seed_says_so_and_one_family_prints_nothing():
    rows = [
        _row(S3, "ut_wavefront", [0.5]),
        _row(S3, "transformer_relative", [0.75]),
    ]
    wavefront = comparison.ENTRIES["ut_wavefront"].label
    relative = comparison.ENTRIES["transformer_relative"].label
    assert lead.section(rows).splitlines()[-1] == (
        f"| {S3} | {wavefront}: -0.25 over {relative}, one seed | - |"
    )
    assert lead.section(rows[:1]) == ""
