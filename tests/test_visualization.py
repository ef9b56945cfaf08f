"""Attention and ponder maps from the models' own layers, their pictures and t2t-visualize."""

import dataclasses
import json
import struct

import numpy as np
import pytest
import tensorflow as tf
from conftest import run_binary

from t2t_lite import checkpoints, registry
from t2t_lite import run_dir as run_dir_lib
from t2t_lite.data import problem
from t2t_lite.layers import attention
from t2t_lite.models import transformer, universal_transformer
from t2t_lite.parsing import trees
from t2t_lite.visualization import curves, inspection, plots
from t2t_lite.visualization import runner as visualize

INPUTS = tf.constant([[3, 4, 5, 6, 1], [7, 8, 1, 0, 0]])  # row 2: two pad keys
TARGETS = tf.constant([[6, 5, 4, 3, 1], [8, 7, 1, 0, 0]])


def build(model_class, hparams_set, **overrides):
    hp = dataclasses.replace(registry.HPARAMS.get(hparams_set)(), **overrides)
    model = model_class(hp, 11)
    checkpoints.build_model(model)
    return model


MODELS = {
    "transformer": lambda: build(transformer.Transformer, "transformer_test"),
    "ut": lambda: build(universal_transformer.UniversalTransformer, "universal_transformer_test"),
    "adaptive_ut": lambda: build(
        universal_transformer.UniversalTransformer,
        "adaptive_universal_transformer_test",
        act_halting_bias_init=-1.0,  # several steps, so several maps
    ),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_recorded_rows_are_distributions_over_visible_keys(name):
    model = MODELS[name]()
    with attention.recording(model) as records:
        model.logits_and_aux({"inputs": INPUTS, "targets": TARGETS})
    recorded = len(records)
    model.logits_and_aux({"inputs": INPUTS, "targets": TARGETS})
    assert records and len(records) == recorded  # nothing recorded after the block
    names = [n for n, _ in records]
    assert set(names) == {"self_attention", "encdec_attention"}
    pad_keys = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)  # [B, S] 1 = real key
    causal = np.tril(np.ones((5, 5), bool))
    decoder_self = False
    for layer, weights in records:
        w = weights.numpy()  # [B, H, Q, K]
        assert w.dtype == np.float32 and w.shape[:2] == (2, 2)
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
        if layer == "encdec_attention":
            visible = np.broadcast_to(pad_keys[:, None, None, :], w.shape)
            decoder_self = False
        elif decoder_self or np.all(w[0, :, 0, 1:] < 1e-9):  # causal rows see only the past
            visible = np.broadcast_to(causal, w.shape)
            decoder_self = True
        else:  # encoder self-attention
            visible = np.broadcast_to(pad_keys[:, None, None, :], w.shape)
        assert np.all(w[~visible] < 1e-9)  # exactly 0 after the -inf-like bias
        assert np.all(w[visible] > 0)


def test_a_recording_sees_only_its_own_model_and_nests():
    recorded, other = MODELS["transformer"](), MODELS["transformer"]()
    features = {"inputs": INPUTS, "targets": TARGETS}
    with attention.recording(recorded) as outer:
        other.logits_and_aux(features)
        assert outer == []  # another model's layers record nothing
        with attention.recording(recorded) as inner:
            recorded.logits_and_aux(features)
        assert inner and outer == []  # the innermost block gets them
        recorded.logits_and_aux(features)
    assert len(outer) == len(inner)  # the outer recording resumed after the inner one


def test_the_ponder_map_is_the_models_ponder_stats():
    model = MODELS["adaptive_ut"]()
    prob = problem.get("test_identity_small")
    found = inspection.inspect(model, prob, [3, 4, 5], [3, 4])
    assert found.unit == "step" and set(found.ponder) == {"encoder", "decoder"}
    encoded, bias, stats = model.encode_with_stats(tf.constant([[3, 4, 5, 1]]))
    _, decoder_stats = model.decode_with_stats(tf.constant([[3, 4, 1]]), encoded, bias)
    np.testing.assert_array_equal(found.ponder["encoder"][0], stats.n_updates.numpy()[0])
    np.testing.assert_array_equal(found.ponder["encoder"][1], stats.remainders.numpy()[0])
    np.testing.assert_array_equal(found.ponder["decoder"][0], decoder_stats.n_updates.numpy()[0])
    # One attention map per executed ACT step, of the right shapes.
    steps = int(max(stats.steps, decoder_stats.steps))
    assert found.attention["encoder"].shape == (int(stats.steps), 2, 4, 4)
    assert found.attention["encdec"].shape == (int(decoder_stats.steps), 2, 3, 4)
    # The loop runs until the last position halts: as many trips as the largest N.
    assert steps == int(max(stats.n_updates.numpy().max(), decoder_stats.n_updates.numpy().max()))
    record = inspection.ponder_record(found)
    assert record["encoder"]["tokens"] == ["1", "2", "3", "<EOS>"]
    n, r = found.ponder["decoder"]
    assert record["decoder"]["ponder_time"] == pytest.approx((n + r).tolist())


def test_transformer_maps_have_one_entry_per_layer():
    model = MODELS["transformer"]()
    found = inspection.inspect(model, problem.get("test_identity_small"), [3, 4], [5, 3, 2])
    assert found.unit == "layer" and not found.ponder
    assert found.attention["encoder"].shape == (2, 2, 3, 3)
    assert found.attention["decoder"].shape == (2, 2, 4, 4)
    assert found.attention["encdec"].shape == (2, 2, 4, 3)
    assert found.axes("encdec") == (["3", "1", "0", "<EOS>"], ["1", "2", "<EOS>"])


def peak_positions(weights: np.ndarray) -> np.ndarray:
    """[N, H, Q, K] -> per query row, the key with the most attention (heads, layers mean)."""
    return weights.mean(axis=(0, 1)).argmax(axis=-1)


def test_a_trained_copy_model_attends_along_the_diagonal(copy_run):
    _, run_dir = copy_run
    prob, model, _ = run_dir_lib.open_run(run_dir)
    source = [2, 5, 3, 4, 4, 5]
    found = inspection.inspect(model, prob, source, source)  # the teacher-forced copy
    peaks = peak_positions(found.attention["encdec"])[: len(source)]
    assert np.mean(peaks == np.arange(len(source))) >= 0.8


@pytest.mark.slow
def test_a_trained_reverse_model_attends_along_the_anti_diagonal(reverse_run):
    from conftest import PLATEAU

    assert PLATEAU["test_reverse_small"] >= 0.9, PLATEAU  # the fixture learned reverse
    prob, model, _ = run_dir_lib.open_run(reverse_run)
    source = [2, 5, 3, 4, 4, 5]
    found = inspection.inspect(model, prob, source, source[::-1])
    peaks = peak_positions(found.attention["encdec"])[: len(source)]
    assert np.mean(peaks == np.arange(len(source))[::-1]) >= 0.8


def png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_the_binary_writes_pictures_with_their_data(copy_run, tmp_path):
    _, run_dir = copy_run
    out = tmp_path / "viz"
    result = run_binary(
        "t2t-visualize",
        f"--output_dir={run_dir}",
        "--inputs=1 2 3",
        "--inputs=0 3",
        f"--visualize_dir={out}",
        "--heads=all",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == [f"{i:03d}_{k}_attention.png" for i in (1, 2) for k in sorted(inspection.KINDS)]
    assert sorted(result.stdout.split()) == [str(out / name) for name in pngs]
    width, height = png_size(out / "001_encdec_attention.png")
    assert 200 < width < 4000 and 100 < height < 4000  # 4 heads x 2 layers of small maps
    data = np.load(out / "001_encdec_attention.npz")
    assert data["weights"].shape == (2, 4, 4, 4)  # layers, heads, "1 2 3 <EOS>" twice
    assert data["key_tokens"].tolist() == ["1", "2", "3", "<EOS>"]
    np.testing.assert_allclose(data["weights"].sum(-1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_the_binary_draws_ponder_time_for_the_adaptive_ut(tmp_path, small_data):
    from t2t_lite import experiment
    from t2t_lite.training import trainer

    run = str(tmp_path / "run")
    exp = experiment.Experiment.resolve(
        "universal_transformer", "test_identity_small", "adaptive_universal_transformer_test",
        "batch_size=64,max_length=8",
    )  # fmt: skip
    trainer.train(exp, small_data, run, trainer.TrainConfig(train_steps=2, local_eval_frequency=2))
    lines = tmp_path / "in.txt"
    lines.write_text("1 2 3\n0\n3 3\n")
    out = str(tmp_path / "viz")
    written = visualize.visualize(run, out, ["1 2 3"], "--inputs")
    assert f"{out}/001_ponder.png" in written
    with open(f"{out}/001_ponder.json", encoding="utf-8") as f:
        record = json.load(f)
    assert record["encoder"]["tokens"] == ["1", "2", "3", "<EOS>"]
    assert all(1 <= n <= 8 for n in record["decoder"]["n_updates"])
    # Event files carry the ponder image and histogram of the evaluation's example.
    tags = {tag for tag in curves.read_scalars(f"{run}/eval_dev")}
    assert {"loss", "accuracy", "sequence_accuracy"} <= tags
    assert {"ponder_time/encoder", "ponder_time/decoder"} <= event_tags(f"{run}/eval_dev")
    # Bad input: one line naming it.
    with pytest.raises(ValueError, match="exactly one of --inputs and --decode_from_file"):
        visualize.read_inputs(["1"], str(lines), 4)
    with pytest.raises(ValueError, match=r"^--inputs:2: unknown symbol 'x'"):
        visualize.visualize(run, out, ["1", "1 x"], "--inputs")
    with pytest.raises(ValueError, match=r"^in.txt:1: empty input"):
        visualize.visualize(run, out, [""], "in.txt")
    (tmp_path / "file").write_text("")
    with pytest.raises(
        ValueError, match=f"--visualize_dir '{tmp_path}/file/viz' is not a writable"
    ):
        visualize.visualize(run, f"{tmp_path}/file/viz", ["1"], "--inputs")
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        visualize.visualize(run, out, ["1"], "--inputs", checkpoint_path=f"{tmp_path}/none")
    result = run_binary("t2t-visualize", f"--output_dir={run}", "--inputs=1 x",
                        f"--visualize_dir={out}")  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "t2t-visualize: error: --inputs:1: unknown symbol 'x'; test_identity_small expects "
        "space-separated symbols from 0 1 2 3"
    )


def event_tags(event_dir: str) -> set[str]:
    tags = set()
    for path in tf.io.gfile.glob(f"{event_dir}/events.out.tfevents.*"):
        for record in tf.data.TFRecordDataset(path):
            tags |= {v.tag for v in tf.compat.v1.Event.FromString(record.numpy()).summary.value}
    return tags


def test_comparison_plots_and_curves(tmp_path, monkeypatch):
    bars = [
        {"task": "copy", "model": "Transformer", "value": 0.3, "paper": 0.53},
        {"task": "copy", "model": "UT", "value": 0.8, "paper": 0.91},
        {"task": "reverse", "model": "Transformer", "value": 0.1, "paper": None},
    ]
    plots.save(plots.comparison_figure(bars), str(tmp_path / "table.png"))
    curve = {"loss": [(100, 2.0), (200, 1.0)], "accuracy": [(100, 0.5), (200, 0.9)]}
    plots.save(plots.curves_figure({"a": curve, "b": {}}), str(tmp_path / "curves.png"))
    assert png_size(tmp_path / "table.png")[0] > 100 and png_size(tmp_path / "curves.png")[0] > 300
    assert not list(tmp_path.glob("*.tmp*"))

    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # not installed
    assert not plots.available()
    with pytest.raises(plots.PlottingUnavailable, match=r"pip install -e '.\[viz\]'"):
        visualize.visualize(str(tmp_path), str(tmp_path / "v"), ["1"], "--inputs")


def test_a_tree_is_drawn_words_in_order_and_constituents_over_their_children(tmp_path):
    tree = next(iter(trees.read_trees("(S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .))", "t")))[0]
    placed = [(p.label, p.x, p.depth, p.parent, p.word) for p in plots.tree_layout(tree)]
    # Words at 0..3; NP over (0 + 1) / 2, VP over its one child, S over (0.5 + 3) / 2.
    assert placed == [
        ("S", 1.75, 0, -1, None),
        ("NP", 0.5, 1, 0, None),
        ("DT", 0.0, 2, 1, "the"),
        ("NN", 1.0, 2, 1, "cat"),
        ("VP", 2.0, 1, 0, None),
        ("VBD", 2.0, 2, 4, "sat"),
        (".", 3.0, 1, 0, "."),
    ]
    path = tmp_path / "tree.png"
    plots.save(plots.tree_figure([("decoded", tree), ("gold", tree)]), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
