"""t2t-decode end to end: a tiny model trained on copy decodes its inputs back."""

import io

import pytest
from conftest import run_binary

from t2t_lite.data import problem
from t2t_lite.decoding import runner


@pytest.mark.parametrize(
    ("decode_hparams", "xla"), [("", False), ("beam_size=3,alpha=0.6", False), ("", True)]
)
def test_decoding_the_dev_split_copies_every_input(copy_run, decode_hparams, xla):
    data_dir, run_dir = copy_run
    prob, model, _ = runner.load(run_dir)
    decoder = runner.make_decoder(model, decode_hparams, xla)
    metrics = runner.decode_split(decoder, prob, data_dir, "dev")
    assert metrics == {"char_accuracy": 1.0, "sequence_accuracy": 1.0, "examples": 40}


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
    # Every other line is decoded, in input order; bad and empty lines give "".
    assert target.read_text().split("\n")[:-1] == ["3 1 2", "0", "", "1 1 2 3 0 2", "", "3 3"]


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
    prob, model, _ = runner.load(run_dir)
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
    prob, model, _ = runner.load(run_dir)
    decoder = runner.make_decoder(model, "max_input_length=4")
    inputs, errors = runner.encode_lines(prob, ["1 2 3 0 1 2"], 4, "f.txt")
    assert inputs == [[3, 4, 5, 2]] and not errors
    assert "f.txt:1: 6 symbols, longer than max_input_length=4; truncated" in caplog.text
    assert decoder.decode_ids(inputs)[0][0][0] == [3, 4, 5, 2]


def test_missing_checkpoint_and_bad_decode_hparams_are_clear(copy_run, tmp_path):
    _, run_dir = copy_run
    result = run_decode(f"--output_dir={run_dir}", "--decode_hparams=beam=4", "--data_dir=x")
    assert result.returncode == 1 and "unknown hparam 'beam'" in result.stderr.lower()
    result = run_decode(f"--output_dir={run_dir}", f"--checkpoint_path={tmp_path}/nope")
    assert result.returncode == 1 and "no checkpoint at" in result.stderr
    assert problem.get("test_identity_small").decode_text([3, 4, 1, 5]) == "1 2"


def test_search_is_traced_once_per_padded_shape(copy_run):
    _, run_dir = copy_run
    _, model, _ = runner.load(run_dir)
    decoder = runner.make_decoder(model, "batch_size=4")
    # Lengths 1..6 (+EOS) all pad to the 8-wide bucket; short batches fill to 4 rows.
    first = decoder.decode_ids([[2], [3, 4, 5], [2, 2, 2, 2, 2]])
    second = decoder.decode_ids([[5, 4, 3, 2, 5, 4], [4]])
    assert decoder.search.experimental_get_tracing_count() == 1
    assert [hyps[0][0] for hyps in first + second] == [
        [2],
        [3, 4, 5],
        [2, 2, 2, 2, 2],
        [5, 4, 3, 2, 5, 4],
        [4],
    ]


def test_binary_decodes_an_eval_split_with_metrics(copy_run):
    data_dir, run_dir = copy_run
    result = run_decode(f"--output_dir={run_dir}", f"--data_dir={data_dir}", "--max_examples=10")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "char_accuracy=1.0000 sequence_accuracy=1.0000 examples=10"
