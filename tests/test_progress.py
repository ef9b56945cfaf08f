"""Progress lines: rate from the first update, the estimate of the time left."""

import pytest

from t2t_lite import progress


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0s"), (59.4, "59s"), (60, "0h01m"), (3690, "1h02m"), (-3, "0s")]
)
def test_duration(seconds, text):
    assert progress.duration(seconds) == text


def test_a_line_says_how_far_how_fast_and_the_time_left(caplog):
    """Hand-derived: the first update (100 done, t=10) starts the rate; at t=50
    500 are done: 400 in 40 s = 10.0/s, 1,500 left of 2,000 -> 150 s = 0h02m
    (rounded to minutes); lines at most every 30 s (t=20 and t=60 are too soon)."""
    now = [0.0]
    shown = progress.Progress("decoding in.txt", 2000, clock=lambda: now[0])
    with caplog.at_level("INFO"):
        for t, done in ((10, 100), (20, 200), (50, 500), (60, 600), (200, 2000)):
            now[0] = float(t)
            shown.update(done)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("decoding")]
    assert lines == [
        "decoding in.txt: 500/2,000 lines (25%), 10.0 lines/s, eta=0h02m",
        "decoding in.txt: 2,000/2,000 lines (100%), 10.0 lines/s",  # 1,900 in 190 s
    ]


def test_without_a_total_a_line_has_no_estimate():
    shown = progress.Progress("train", unit="pairs", clock=lambda: 0.0)
    shown.start = (0, 0.0)
    assert shown.line(120, 4.0) == "train: 120 pairs, 30.0 pairs/s"
    assert shown.line(0, 4.0) is None  # no progress yet: no rate


def test_generating_a_problems_data_logs_its_progress(tmp_path, monkeypatch, caplog):
    """A first run's data generation (minutes for the quickstart's copy task)
    says how far it is, as encoding and training do."""
    from t2t_lite.data import problem

    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    prob = problem.get("test_identity_small")
    with caplog.at_level("INFO"):
        prob.generate_data(str(tmp_path))
    total = prob.splits["train"][0]
    assert (
        f"test_identity_small train: generating: {total:,}/{total:,} examples (100%)" in caplog.text
    )
