"""t2t-decode end to end on a tiny model trained on copy.

Only the dev-split test asserts how well the model learned (with a margin);
the others check decoding's contracts against the model's own decodes, so
they hold whatever the training's floating-point luck on this CPU.
"""

import io
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import run_binary

from t2t_lite import run_dir as run_dir_lib
from t2t_lite import sequences
from t2t_lite.data import problem, tfrecord
from t2t_lite.decoding import runner


def test_the_trained_fixtures_plateau(copy_run):
    # The fixture's one learning assertion, with a wide margin (conftest.py).
    from conftest import PLATEAU

    assert PLATEAU["test_identity_small"] >= 0.9, PLATEAU


@pytest.mark.parametrize(
    ("decode_hparams", "xla"),
    [("", False), ("beam_size=3,alpha=0.6", False), ("", True), ("beam_size=3,alpha=0.6", True)],
)
def test_decoding_the_dev_split_copies_nearly_every_input(copy_run, decode_hparams, xla):
    data_dir, run_dir = copy_run
    prob, model, _ = run_dir_lib.open_run(run_dir)
    decoder = runner.make_decoder(model, decode_hparams, xla)
    metrics = runner.decode_split(decoder, prob, data_dir, "dev")
    assert metrics["examples"] == 40
    assert metrics["sequence_accuracy"] >= 0.9 and metrics["char_accuracy"] >= 0.95


def dev_inputs(data_dir):
    paths = problem.get("test_identity_small").filepaths(data_dir, "dev")
    return [sequences.strip_eos(e["inputs"]) for e in tfrecord.read_examples(paths, -1)]


@pytest.mark.slow  # the fast tier's budget: test_cached_decoding holds cached steps to teacher forcing
def test_greedy_decodes_are_the_models_teacher_forced_argmax(copy_run):
    """Each greedy token is the argmax of the full pass over input and decode so far."""
    data_dir, run_dir = copy_run
    _, model, _ = run_dir_lib.open_run(run_dir)
    inputs = dev_inputs(data_dir)
    eager = runner.make_decoder(model, "", xla_compile=False).decode_ids(inputs)
    compiled = runner.make_decoder(model, "", xla_compile=True).decode_ids(inputs)
    assert [h[0][0] for h in compiled] == [h[0][0] for h in eager]
    for source, hypotheses in zip(inputs, eager, strict=True):
        output = [*hypotheses[0][0], sequences.EOS_ID]
        features = {
            "inputs": tf.constant([[*source, sequences.EOS_ID]]),
            "targets": tf.constant([output]),
        }
        logits = model.logits_and_aux(features, training=False)[0][0].numpy()
        # The chosen token's logit is the row's maximum (up to float ties).
        chosen = logits[np.arange(len(output)), output]
        np.testing.assert_allclose(chosen, logits.max(axis=-1), rtol=0, atol=1e-4)


def run_decode(*args):
    return run_binary("t2t-decode", *args)


def test_binary_decodes_a_file_in_order_and_reports_bad_lines(copy_run, tmp_path):
    _, run_dir = copy_run
    source = tmp_path / "in.txt"
    lines = ["3 1 2", "0", "", "1 1 2 3 0 2", "2 9 1", "3 3"]  # "9" is not a base-4 symbol
    source.write_text("\n".join(lines) + "\n")
    target = tmp_path / "out.txt"
    result = run_decode(
        f"--output_dir={run_dir}",
        f"--decode_from_file={source}",
        f"--decode_to_file={target}",
        "--decode_hparams=batch_size=2",
    )
    assert result.returncode == 1
    assert f"{source}:5: unknown symbol '9'" in result.stderr
    assert "Traceback" not in result.stderr
    # Every other line is decoded, in input order, as the library decodes it
    # (batch_size does not change a decode); bad and empty lines give "".
    prob, model, _ = run_dir_lib.open_run(run_dir)
    good = ["3 1 2", "0", "1 1 2 3 0 2", "3 3"]
    inputs, _ = runner.encode_lines(prob, good, "test")
    decoded = [prob.decode_text(h[0][0]) for h in runner.make_decoder(model, "").decode_ids(inputs)]
    expected = [decoded[0], decoded[1], "", decoded[2], "", decoded[3]]
    assert target.read_text().split("\n")[:-1] == expected
    # The search's speed: the written outputs' tokens (one a symbol here) over its seconds.
    tokens = sum(len(line.split()) for line in decoded)
    assert f"Search: {tokens} output tokens of 6 lines in " in result.stderr


def test_the_search_report_counts_each_lines_best_hypothesis_without_eos():
    outputs = [[([5, 6, 7], -1.0), ([5], -2.0)], [([], 0.0)], [([4], -0.5)], []]
    assert runner.search_report(outputs, 2.0) == (
        "Search: 4 output tokens of 4 lines in 2.00 s (2.0 tokens/s)"
    )


def test_binary_writes_beams_with_scores(copy_run, tmp_path):
    _, run_dir = copy_run
    source = tmp_path / "in.txt"
    source.write_text("2 0 1\n")
    result = run_decode(
        f"--output_dir={run_dir}",
        f"--decode_from_file={source}",
        "--decode_hparams=beam_size=2,return_beams=true,write_beam_scores=true",
    )
    assert result.returncode == 0, result.stderr
    fields = (tmp_path / "in.txt.decoded").read_text().rstrip("\n").split("\t")
    assert len(fields) == 4 and fields[0] == "2 0 1"
    assert float(fields[1]) >= float(fields[3])


def test_interactive_mode_answers_each_line(copy_run):
    _, run_dir = copy_run
    prob, model, _ = run_dir_lib.open_run(run_dir)
    decoder = runner.make_decoder(model, "")
    out = io.StringIO()
    runner.decode_interactive(decoder, prob, ["1 2 3\n", "x\n", "0 0\n"], out)
    error = (
        "error: <stdin>:2: unknown symbol 'x'; test_identity_small expects space-separated "
        "symbols from 0 1 2 3"
    )
    assert out.getvalue().splitlines() == ["1 2 3", error, "0 0"]


def test_long_inputs_are_truncated_with_a_warning(copy_run, caplog):
    _, run_dir = copy_run
    prob, model, _ = run_dir_lib.open_run(run_dir)
    decoder = runner.make_decoder(model, "max_input_length=4")
    inputs, errors = runner.encode_lines(prob, ["1 2 3 0 1 2"], "f.txt")
    assert inputs == [[3, 4, 5, 2, 3, 4]] and not errors
    # The Decoder truncates, whoever calls it, and names the line.
    assert decoder.decode_ids(inputs, "f.txt") == decoder.decode_ids([[3, 4, 5, 2]])
    assert "f.txt:1: 6 symbols, longer than max_input_length=4; truncated" in caplog.text


def test_missing_checkpoint_and_bad_decode_hparams_are_clear(copy_run, tmp_path):
    _, run_dir = copy_run
    result = run_decode(f"--output_dir={run_dir}", "--decode_hparams=beam=4", "--data_dir=x")
    assert result.returncode == 1 and "unknown hparam 'beam'" in result.stderr.lower()
    result = run_decode(f"--output_dir={run_dir}", f"--checkpoint_path={tmp_path}/nope")
    assert result.returncode == 1 and "no checkpoint at" in result.stderr
    # A device as input: no "/dev/null.decoded" is written; the output must be named.
    result = run_decode(f"--output_dir={run_dir}", "--decode_from_file=/dev/null")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "'/dev/null' is not a regular file" in result.stderr
    assert not os.path.exists("/dev/null.decoded")
    assert problem.get("test_identity_small").decode_text([3, 4, 1, 5]) == "1 2"


@pytest.mark.slow  # fast tier budget: test_scale_out holds the train and eval steps to one trace a shape
def test_search_is_traced_once_per_padded_shape(copy_run):
    _, run_dir = copy_run
    _, model, _ = run_dir_lib.open_run(run_dir)
    decoder = runner.make_decoder(model, "batch_size=4")
    # Lengths 1..6 (+EOS) all pad to the 8-wide bucket; short batches fill to 4 rows.
    inputs = [[2], [3, 4, 5], [2, 2, 2, 2, 2], [5, 4, 3, 2, 5, 4], [4]]
    first = decoder.decode_ids(inputs[:3])
    second = decoder.decode_ids(inputs[3:])
    assert decoder.search.experimental_get_tracing_count() == 1
    # A decode does not depend on the rows it was batched with.
    single = runner.make_decoder(model, "batch_size=1")  # each input in a batch of its own
    alone = [single.decode_ids([x])[0] for x in inputs]
    assert [h[0][0] for h in first + second] == [h[0][0] for h in alone]
    assert single.search.experimental_get_tracing_count() == 1


def test_a_long_decode_logs_progress_with_an_estimate(copy_run, monkeypatch, caplog):
    """Lines due at every batch (EVERY_S 0): 7 inputs in batches of 2; the rate
    starts after the first batch, so lines follow batches 2, 3 and 4 (6 of the
    7 inputs done: an estimate; then all: none)."""
    from t2t_lite import progress

    _, run_dir = copy_run
    _, model, _ = run_dir_lib.open_run(run_dir)
    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    inputs = [[2], [3, 4], [2, 2, 2], [5, 4, 3], [4], [2, 3], [3]]
    with caplog.at_level("INFO"):
        runner.make_decoder(model, "batch_size=2").decode_ids(inputs, "in.txt")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("decoding")]
    assert [line.split(" lines")[0] for line in lines] == [
        "decoding in.txt: 4/7", "decoding in.txt: 6/7", "decoding in.txt: 7/7"
    ]  # fmt: skip
    assert "eta=" in lines[1] and "eta=" not in lines[2]


def test_binary_decodes_an_eval_split_with_metrics(copy_run):
    data_dir, run_dir = copy_run
    result = run_decode(f"--output_dir={run_dir}", f"--data_dir={data_dir}", "--max_examples=10")
    assert result.returncode == 0, result.stderr
    prob, model, _ = run_dir_lib.open_run(run_dir)
    metrics = runner.decode_split(runner.make_decoder(model, ""), prob, data_dir, "dev", 10)
    assert result.stdout.strip() == (
        f"char_accuracy={metrics['char_accuracy']:.4f} "
        f"sequence_accuracy={metrics['sequence_accuracy']:.4f} examples=10"
    )


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ("beam_size=100000", r"\(beam_size\): must be in \[1, 256\], got 100,000"),
        ("extra_length=100000000", r"\(extra_length\): must be in \[1, 16,384\], got 100,000,000"),
        ("max_input_length=0", r"\(max_input_length\): must be in \[1, 16,384\], got 0"),
        ("batch_size=10000000", r"\(batch_size\): must be in \[1, 65,536\], got 10,000,000"),
    ],
)
def test_decode_hparams_past_their_bounds_are_one_line_not_an_out_of_memory(overrides, named):
    # beam_size=100000 once ran 103 s to a 20 GB out-of-memory traceback.
    from t2t_lite import hparams
    from t2t_lite.decoding import decoder

    with pytest.raises(ValueError, match=r"invalid hparams " + named):
        hparams.override(decoder.DecodeHParams(), overrides)


def test_interactive_mode_answers_a_line_its_text_handling_fails_and_goes_on(copy_run, monkeypatch):
    _, run_dir = copy_run
    prob, model, _ = run_dir_lib.open_run(run_dir)
    decoder = runner.make_decoder(model, "")
    plain = prob.input_lines

    def input_lines(lines, hp):  # a tokenizer that fails on one line, as a deep recursion did
        if lines[0].startswith("3"):
            raise RecursionError("maximum recursion depth exceeded")
        return plain(lines, hp)

    monkeypatch.setattr(prob, "input_lines", input_lines)
    out = io.StringIO()
    runner.decode_interactive(decoder, prob, ["1 2\n", "3 3 3\n", "0 0\n"], out)
    assert out.getvalue().splitlines() == [
        "1 2",
        "error: <stdin>:2: maximum recursion depth exceeded",
        "0 0",
    ]
