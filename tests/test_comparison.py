import json

import pytest

from t2t_lite import comparison


def results(char, seq, dev_seq, ponder=None):
    test = {"accuracy": char, "sequence_accuracy": seq, "loss": 1.0, "examples": 10}
    if ponder:
        test.update(encoder_ponder_time=ponder[0], decoder_ponder_time=ponder[1])
    dev = {"accuracy": 1.0, "sequence_accuracy": dev_seq, "loss": 0.1, "examples": 10}
    return {"dev": dev, "test": test}


def test_table_sets_results_beside_the_paper():
    rows = [
        {
            "problem": "algorithmic_reverse_decimal20",
            "entry": comparison.ENTRIES["transformer"],
            "results": results(0.25, 0.05, 0.9),
        },
        {
            "problem": "algorithmic_identity_binary40",
            "entry": comparison.ENTRIES["adaptive_universal_transformer"],
            "results": results(0.8, 0.3, 1.0, ponder=(2.5, 3.25)),
        },
    ]
    lines = comparison.markdown_table(rows).splitlines()
    assert len(lines) == 4
    assert lines[2] == "| reverse | Transformer | 0.25 | 0.05 | 0.13 | 0.06 | 0.90 | - |"
    assert lines[3] == "| copy | UT + ACT | 0.80 | 0.30 | 0.91 | 0.35 | 1.00 | 2.50 / 3.25 |"


def test_task_names():
    assert comparison.task_of("algorithmic_identity_decimal40") == "copy"
    assert comparison.task_of("algorithmic_addition_binary20") == "addition"
    assert comparison.task_of("translate_ende") is None


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown \\['lstm'\\]; known: transformer, universal"):
        comparison.parse_entries(["transformer", "lstm"])


def test_finished_runs_are_reused_only_at_the_same_step(tmp_path):
    (tmp_path / "metrics.json").write_text(json.dumps({"step": 5, "dev": {"accuracy": 1.0}}))
    assert comparison._finished(str(tmp_path), 5) == {"dev": {"accuracy": 1.0}}
    assert comparison._finished(str(tmp_path), 6) is None
    assert comparison._finished(str(tmp_path / "missing"), 5) is None
