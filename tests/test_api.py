"""The Python API: train, load (newest, averaged, best, a path) and decode strings."""

import os

import pytest

from t2t_lite import api, checkpoints
from t2t_lite.decoding import runner


def test_a_loaded_run_decodes_strings_as_t2t_decode_writes_a_file(copy_run, tmp_path):
    """Greedy and beam decodes of a list equal decode_file's lines for the same
    lines (t2t-decode's path), at the newest and at the averaged checkpoint."""
    _, run = copy_run
    lines = ["1 2 3", "3 3 0 1", "2", "0 1 2 3 0 1"]
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines))
    newest = api.load(run)
    assert newest.checkpoint == checkpoints.latest(run)
    for search in ("", "beam_size=2,alpha=0.6"):
        written = tmp_path / "out.txt"
        decoder = runner.make_decoder(newest.model, search)
        assert runner.decode_file(decoder, newest.problem, str(source), str(written)) == []
        assert newest.decode(lines, search) == written.read_text().splitlines()
    # Keywords are --decode_hparams settings; translate is decode.
    assert newest.translate(lines, beam_size=2, alpha=0.6) == newest.decode(
        lines, "beam_size=2,alpha=0.6"
    )
    both = newest.decode(lines[:1], beam_size=2, return_beams=True)[0].split("\t")
    assert len(both) == 2
    averaged = api.load(run, checkpoint="average")
    assert os.path.dirname(averaged.checkpoint) == os.path.join(run, "averaged")
    assert len(averaged.decode(lines)) == len(lines)
    with pytest.raises(ValueError, match="lines:1"):
        newest.decode(["1 x"])  # not a word of the copy problem's vocabulary
    with pytest.raises(
        FileNotFoundError, match="no best checkpoint: the run was trained without keep_best"
    ):
        api.load(run, checkpoint="best")  # trained without --keep_best


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_the_apis_arguments_are_checked_each_on_its_own(copy_run, tmp_path):
    _, run = copy_run
    loaded = api.load(run)
    lines = ["1 2 3", "3 0"]
    # One string would decode each character as a line: refused, naming the argument.
    with pytest.raises(TypeError, match="lines must be a list of strings, not one str"):
        loaded.decode("1 0 1")
    with pytest.raises(TypeError, match="lines must be a list of strings, not one bytes"):
        loaded.translate(b"1 0 1")
    # Any iterable of strings is read once.
    assert loaded.decode(line for line in lines) == loaded.decode(lines)
    for items, message in (
        ([1, 0], r"lines\[0\] must be str, not int"),
        (["1", None], r"lines\[1\] must be str, not NoneType"),
        ([b"1 0"], r"lines\[0\] must be str, not bytes"),
    ):
        with pytest.raises(TypeError, match=message):
            loaded.decode(items)
    # A keyword's value sets that setting only.
    with pytest.raises(ValueError, match="beam_size='2,return_beams=True': expected one value"):
        loaded.decode(lines, beam_size="2,return_beams=True")
    assert loaded.decode(lines, beam_size="2") == loaded.decode(lines, beam_size=2)
    with pytest.raises(ValueError, match="beam_size"):
        loaded.decode(lines, beam_size=2.5)
    out = str(tmp_path / "never")
    for arguments, message in (
        ({"hparams": None}, "hparams must be str, not NoneType"),
        ({"train_steps": "2"}, "train_steps must be int, not str '2'"),
        ({"train_minutes": True}, "train_minutes must be float, not bool"),
    ):
        with pytest.raises(TypeError, match=message):
            api.train(
                "test_identity_small", "transformer", "transformer_test", out, out, **arguments
            )
    assert not os.path.exists(out)


@pytest.mark.slow
def test_train_takes_t2t_trains_settings_and_resumes(small_data, tmp_path):
    out = str(tmp_path / "run")

    def train(**config):
        problem, model = "test_identity_small", "transformer"
        return api.train(problem, model, "transformer_test", small_data, out, **config)

    settings = {"hparams": "batch_size=64,max_length=8", "local_eval_frequency": 2}
    first = train(train_steps=2, eval_steps=1, **settings)
    assert set(first) >= {"dev", "test"}
    assert checkpoints.latest(out).endswith("model.ckpt-2")
    more = train(train_steps=3, eval_steps=1, **settings)  # resumed at step 2
    assert checkpoints.latest(out).endswith("model.ckpt-3") and set(more) == set(first)
    with pytest.raises(TypeError, match="train_step"):
        train(train_step=4)


@pytest.mark.slow
def test_the_example_notebook_runs_end_to_end(tmp_path, monkeypatch, capsys):
    """examples/python_api.ipynb's code cells, in order, in one namespace (as a
    kernel runs them), from an empty folder; the copy model it trains decodes
    its own inputs back."""
    import json

    from conftest import ROOT

    with open(os.path.join(ROOT, "examples", "python_api.ipynb")) as f:
        notebook = json.load(f)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), "python_api.ipynb", "exec"), namespace)  # noqa: S102
    assert namespace["metrics"]["dev"]["sequence_accuracy"] >= 0.8  # as test_end_to_end asks
    assert namespace["run"].decode(namespace["lines"]) == namespace["lines"]
    assert "averaged" in namespace["averaged"].checkpoint
    assert capsys.readouterr().out.count("\n") == 5


@pytest.mark.slow
def test_the_python_api_pages_block_runs_as_printed(tmp_path, monkeypatch):
    """docs/python_api.md's block, as a reader pastes it, from an empty folder."""
    from conftest import python_blocks

    [code] = python_blocks("python_api.md")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "docs/python_api.md", "exec"), namespace)  # noqa: S102
    run = namespace["run"]
    [beams] = run.translate(["2 7 1 8"], beam_size=4, return_beams=True)
    assert beams.split("\t")[0] == "2 7 1 8"  # the copy model copies
    assert (tmp_path / "t2t_runs" / "copy" / "best").is_dir()
