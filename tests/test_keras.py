"""Keras citizenship: every public layer and both models through one harness
(`run_layer_test`): config round trip, .keras round trip, output shape, padding
that changes nothing, a training step, and mixed precision; and for every
layer, its weights made in `build(input_shape)`, a symbolic call in a
Functional model (the layers Keras calls), and a `fit` step."""

import dataclasses
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import python_blocks, run_binary
from keras import ops

from t2t_lite import registry
from t2t_lite.layers import (
    act,
    attention,
    dense,
    embedding,
    facts,
    masks,
    nesting,
    transformer_layers,
    transition,
    universal,
)

C, H = 16, 4  # channels, heads
BLOCK = transformer_layers.BlockConfig(
    hidden_size=C,
    filter_size=32,
    num_heads=H,
    norm_position="pre",
    layer_prepostprocess_dropout=0.1,
    attention_dropout=0.1,
    relu_dropout=0.1,
)


def states(batch=2, length=5, seed=0):
    return tf.random.stateless_normal([batch, length, C], [seed, 1])


# The second row's last two positions are padding.
NONPADDING = tf.constant([[1.0] * 5, [1.0, 1.0, 1.0, 0.0, 0.0]])
BIAS = masks.nonpadding_bias(NONPADDING)  # [B, 1, 1, L]


@dataclasses.dataclass(frozen=True)
class Case:
    """A layer, how to run it on its test inputs, and the output shape."""

    make: object  # (**layer keywords, e.g. dtype) -> layer
    run: object  # (layer, inputs, training) -> output tensor
    inputs: tuple
    shape: tuple
    # Positions whose inputs may change without changing the others' outputs:
    # (input index, [B, L] mask of padded positions); None: no padding semantics.
    padding: tuple | None = None
    # Position and step signals are float32 by design (added to the states, then cast).
    float16_output: bool = True


def _ut(halting: bool, **kwargs):
    block = transformer_layers.EncoderBlock(BLOCK, name="block")
    signal = universal.StepSignal("sinusoid", 4, C, name="step_signal")
    ponder = act.AdaptiveComputationTime(4, 0.01, name="act") if halting else None
    return universal.UniversalStack(block, 4, signal, "pre", halting=ponder, name="ut", **kwargs)


def _run_ut(stack, inputs, training):
    x, nonpadding = inputs
    bias = masks.nonpadding_bias(nonpadding)
    out, _ = stack.apply(
        x, lambda y: stack.block(y, bias, training=training), 0, nonpadding, training=training
    )
    return out


PADDED = tf.constant([[False] * 5, [False, False, False, True, True]])

CASES = {
    "attention": Case(
        lambda **kw: attention.MultiHeadAttention(
            C, H, 0.1, key_channels=8, max_relative_position=2, **kw
        ),
        lambda layer, i, training: layer(i[0], i[0], i[1], training=training),
        (states(), BIAS),
        (2, 5, C),
    ),
    "feed_forward": Case(
        lambda **kw: transition.FeedForward(C, 32, 0.1, **kw),
        lambda layer, i, training: layer(i[0], training=training),
        (states(),),
        (2, 5, C),
    ),
    "separable_convolution": Case(
        lambda **kw: transition.SeparableConvolution(C, 32, 0.1, causal=True, **kw),
        lambda layer, i, training: layer(i[0], i[1][..., None], training=training),
        (states(), NONPADDING),
        (2, 5, C),
    ),
    "residual": Case(
        lambda **kw: transformer_layers.Residual("post", 0.1, **kw),
        lambda layer, i, training: layer.apply(i[0], lambda y: 2.0 * y, training=training),
        (states(),),
        (2, 5, C),
    ),
    "encoder_block": Case(
        lambda **kw: transformer_layers.EncoderBlock(BLOCK, **kw),
        lambda layer, i, training: layer(i[0], BIAS, training=training),
        (states(),),
        (2, 5, C),
        padding=(0, PADDED),
    ),
    "decoder_block": Case(
        lambda **kw: transformer_layers.DecoderBlock(BLOCK, **kw),
        lambda layer, i, training: layer(i[0], i[1], masks.causal_bias(5), BIAS, training=training),
        (states(), states(seed=1)),
        (2, 5, C),
        padding=(1, PADDED),  # padded encoder positions
    ),
    "stack": Case(
        lambda **kw: transformer_layers.Stack(
            tuple(transformer_layers.EncoderBlock(BLOCK, name=f"layer_{i}") for i in range(2)),
            "pre",
            **kw,
        ),
        lambda layer, i, training: layer(i[0], BIAS, training=training),
        (states(),),
        (2, 5, C),
        padding=(0, PADDED),
    ),
    "step_signal": Case(
        lambda **kw: universal.StepSignal("learned", 4, C, **kw),
        lambda layer, i, training: layer(i[0]),
        (tf.constant(2),),
        (1, 1, C),
        float16_output=False,
    ),
    "universal_stack": Case(
        lambda **kw: _ut(halting=False, **kw),
        _run_ut,
        (states(), NONPADDING),
        (2, 5, C),
        padding=(0, PADDED),
    ),
    "universal_stack_act": Case(
        lambda **kw: _ut(halting=True, **kw),
        _run_ut,
        (states(), NONPADDING),
        (2, 5, C),
        padding=(0, PADDED),
    ),
    "shared_embedding": Case(
        lambda **kw: embedding.SharedEmbedding(11, C, **kw),
        lambda layer, i, training: layer(i[0]),
        (tf.constant([[3, 4, 1, 0], [5, 1, 0, 0]]),),
        (2, 4, C),
    ),
    "learned_positions": Case(
        lambda **kw: embedding.LearnedPositions(8, C, **kw),
        lambda layer, i, training: layer.signal(3, i[0]),
        (tf.constant([[0, 1, 2], [5, 6, 7]]),),
        (2, 3, C),
        float16_output=False,
    ),
    "dense": Case(
        lambda **kw: dense.Dense(8, **kw),
        lambda layer, i, training: layer(i[0]),
        (states(),),
        (2, 5, 8),
    ),
    # ACT on its own (not inside a UT stack), its "basic" halting, over a step
    # function without weights of its own: the halting unit is what trains.
    "act_basic": Case(
        lambda **kw: act.AdaptiveComputationTime(4, 0.01, act_type="basic", **kw),
        lambda layer, i, training: layer.apply(
            i[0], lambda s, t: ops.tanh(s * 0.5 + 0.1), i[1], training=training
        )[0],
        (states(), NONPADDING),
        (2, 5, C),
        padding=(0, PADDED),
    ),
    "fact_embedding": Case(
        lambda **kw: facts.FactEmbedding(embedding.SharedEmbedding(11, C, name="words"), **kw),
        lambda layer, i, training: layer(i[0])[0],
        (tf.constant([[3, 4, 2, 5, 2, 1]]),),
        None,
    ),
}


@keras.saving.register_keras_serializable(package="t2t_lite_tests")
class Holder(keras.Model):
    """A user's model around one layer (the harness's .keras round trip)."""

    def __init__(self, layer, case: str, **kwargs):
        super().__init__(**kwargs)
        self.layer, self.case = layer, case

    def get_config(self):
        layer = keras.saving.serialize_keras_object(self.layer)
        return {**super().get_config(), "layer": layer, "case": self.case}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        layer = keras.saving.deserialize_keras_object(config.pop("layer"))
        return cls(layer, **config)

    def get_build_config(self):
        return {"case": self.case}

    def build_from_config(self, config):
        self(None)

    def call(self, inputs, training=False):
        case = CASES[self.case]
        return case.run(self.layer, case.inputs, training)


def run_layer_test(name: str, tmp_path):
    case = CASES[name]
    layer = case.make()
    out = case.run(layer, case.inputs, False)
    if case.shape is not None:
        assert tuple(out.shape) == case.shape
    # The config round trip: JSON, and the same config from the rebuilt layer.
    config = layer.get_config()
    written = json.dumps(config, sort_keys=True)
    clone = type(layer).from_config(json.loads(written))
    case.run(clone, case.inputs, False)
    assert json.dumps(clone.get_config(), sort_keys=True) == written
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(case.run(clone, case.inputs, False), out, rtol=1e-6, atol=1e-6)
    # The .keras round trip inside a user's model: the same outputs.
    holder = Holder(layer, name)
    path = str(tmp_path / f"{name}.keras")
    holder(None)
    holder.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded.layer) is type(layer)
    np.testing.assert_allclose(loaded(None), out, rtol=1e-6, atol=1e-6)
    # Padding: what a padded position holds changes no real position's output.
    if case.padding is not None:
        index, padded = case.padding
        noisy = list(case.inputs)
        noise = tf.random.stateless_normal(noisy[index].shape, [7, 7]) * 100.0
        noisy[index] = tf.where(padded[..., None], noise, noisy[index])
        changed = case.run(layer, tuple(noisy), False)
        real = ~PADDED if index == 0 else tf.ones_like(PADDED)
        np.testing.assert_allclose(
            tf.boolean_mask(changed, real), tf.boolean_mask(out, real), rtol=1e-4, atol=1e-4
        )
    # A training step: every trainable weight gets a gradient, and the step changes the output.
    if layer.trainable_weights:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(case.run(layer, case.inputs, True)))
        grads = tape.gradient(loss, layer.trainable_weights)
        missing = [w.path for w, g in zip(layer.trainable_weights, grads, strict=True) if g is None]
        if name == "universal_stack_act":
            # The halting unit's weights reach the output only through the step weights.
            missing = [p for p in missing if "halting" not in p]
        assert not missing
        keras.optimizers.SGD(0.1).apply_gradients(
            [(g, w) for g, w in zip(grads, layer.trainable_weights, strict=True) if g is not None]
        )
        assert not np.allclose(case.run(layer, case.inputs, False), out)
    # Mixed precision: computed in float16, finite.
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        half = case.make()
        cast = tuple(
            tf.cast(x, tf.float16) if x.dtype == tf.float32 and x.shape.rank == 3 else x
            for x in case.inputs
        )
        result = case.run(half, cast, False)
        assert np.all(np.isfinite(tf.cast(result, tf.float32).numpy()))
        assert result.dtype == (tf.float16 if case.float16_output else tf.float32), name
    finally:
        keras.mixed_precision.set_global_policy("float32")
    # A policy given to the layer alone (keras-hub's dtype=): every layer it
    # made or holds computes in it, whatever the global policy, on float32 inputs.
    for given in ("mixed_float16", "mixed_bfloat16"):
        own = case.make(dtype=given)
        compute = keras.DTypePolicy(given).compute_dtype
        result = case.run(own, case.inputs, False)
        assert np.all(np.isfinite(tf.cast(result, tf.float32).numpy())), (name, given)
        assert result.dtype == (compute if case.float16_output else "float32"), (name, given)
        computed = {sub.compute_dtype for sub in nesting.nested(own)} | {own.compute_dtype}
        assert computed == {compute}, (name, given, computed)
        assert {w.dtype for w in own.weights} <= {"float32"}, name  # variables stay float32


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_public_layer_round_trips_trains_and_runs_in_mixed_precision(name, tmp_path):
    run_layer_test(name, tmp_path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_layer_makes_all_its_weights_in_build(name):
    """keras-hub's build check: `build(input_shape)` alone makes every weight a
    call would (containers build their sublayers there), and a call adds none."""
    case = CASES[name]
    layer = case.make()
    layer.build(tuple(case.inputs[0].shape))
    built = sorted(w.path for w in layer.weights)
    assert built, name
    case.run(layer, case.inputs, False)
    assert sorted(w.path for w in layer.weights) == built, name


# Layers called through Keras's __call__ (the others are applied: `.apply`,
# `.signal`, with a Python callable or a Python step, which no KerasTensor carries).
SYMBOLIC = sorted(
    {"attention", "feed_forward", "separable_convolution", "encoder_block", "decoder_block"}
    | {"stack", "shared_embedding", "dense", "fact_embedding"}
)


@pytest.mark.parametrize("name", SYMBOLIC)
def test_every_called_layer_runs_on_keras_inputs_in_a_functional_model(name):
    """A symbolic call on keras.Input: the output's shape and dtype are the eager
    call's, and the Functional model built on it computes the eager outputs."""
    case = CASES[name]
    layer = case.make()
    eager = case.run(layer, case.inputs, False)
    symbolic = tuple(
        keras.Input(batch_shape=tuple(x.shape), dtype=x.dtype.name) for x in case.inputs
    )
    out = case.run(layer, symbolic, False)
    assert out.dtype == eager.dtype.name, name
    # Every axis the symbolic call knows is the eager one's (the facts' count is the data's).
    assert len(out.shape) == len(eager.shape), name
    assert all(s in (None, e) for s, e in zip(out.shape, eager.shape, strict=True)), name
    functional = keras.Model(list(symbolic), out)
    np.testing.assert_allclose(functional(list(case.inputs)), eager, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_layer_with_weights_takes_a_fit_step(name):
    """Keras's own training loop (`compile`, `fit`) on a model around the layer:
    the loss is finite and every trainable weight that reaches the output moves."""
    case = CASES[name]
    keras.utils.set_random_seed(1)
    holder = Holder(case.make(), name)
    holder(None)
    before = [w.numpy().copy() for w in holder.layer.trainable_weights]
    holder.compile(optimizer=keras.optimizers.SGD(0.1), loss=lambda _, y: ops.mean(ops.square(y)))
    history = holder.fit(np.zeros((1, 1)), np.zeros((1, 1)), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0]), name
    moved = [
        not np.array_equal(w.numpy(), old)
        for w, old in zip(holder.layer.trainable_weights, before, strict=True)
    ]
    assert any(moved), name


@pytest.mark.parametrize(
    ("model", "hparams_set"),
    [
        ("transformer", "transformer_test"),
        ("transformer_encoder", "transformer_test"),
        pytest.param("universal_transformer", "universal_transformer_test", marks=pytest.mark.slow),
        pytest.param(
            "universal_transformer_encoder",
            "adaptive_universal_transformer_test",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "universal_transformer", "adaptive_universal_transformer_test", marks=pytest.mark.slow
        ),
    ],
)
def test_a_model_saved_as_keras_loads_with_identical_logits_and_cached_decodes(
    model, hparams_set, tmp_path
):
    from t2t_lite import (
        checkpoints,
        models,  # noqa: F401  (registers the models)
    )
    from t2t_lite.decoding import decoder as decoder_lib

    built = registry.MODELS.get(model)(registry.HPARAMS.get(hparams_set)(), 12)
    checkpoints.build_model(built)
    features = {"inputs": tf.constant([[3, 4, 5, 1, 0]]), "targets": tf.constant([[6, 7, 1, 0]])}
    path = str(tmp_path / "model.keras")
    built.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded) is type(built) and loaded.hparams == built.hparams
    np.testing.assert_array_equal(loaded(features), built(features))
    hp = decoder_lib.DecodeHParams(beam_size=2, extra_length=4, max_input_length=8)
    inputs = tf.constant([[3, 4, 5, 1, 0, 0, 0, 0]])
    ids, scores = decoder_lib.Decoder(built, hp).search(inputs)
    ids2, scores2 = decoder_lib.Decoder(loaded, hp).search(inputs)
    np.testing.assert_array_equal(ids, ids2)
    np.testing.assert_allclose(scores, scores2, rtol=1e-6)
    with pytest.raises(ValueError, match="t2t-export"):
        loaded.export(str(tmp_path / "export"))


def test_t2t_export_writes_a_trained_run_as_a_keras_file(copy_run, tmp_path):
    from t2t_lite import api
    from t2t_lite.export import exporter

    _, run = copy_run
    done = run_binary(
        "t2t-export", f"--output_dir={run}", f"--export_dir={tmp_path}", "--format=keras"
    )
    assert done.returncode == 0, done.stderr
    path = done.stdout.strip().splitlines()[-1]
    assert sorted(os.listdir(path)) == [exporter.KERAS_FILE, "t2t_lite_export.json", "vocab.txt"]
    loaded = keras.models.load_model(os.path.join(path, exporter.KERAS_FILE))
    trained = api.load(run)
    features = {"inputs": tf.constant([[3, 4, 5, 1]]), "targets": tf.constant([[3, 4, 5, 1]])}
    np.testing.assert_array_equal(loaded(features), trained.model(features))
    with open(os.path.join(path, "vocab.txt")) as f:
        tokens = f.read().splitlines()
    assert tokens == trained.problem.graph_tokenizer("").vocabulary()


def keras_example() -> str:
    """docs/keras.md's UT-with-ACT example (the block that defines PonderingClassifier)."""
    [code] = [block for block in python_blocks("keras.md") if "class PonderingClassifier" in block]
    return code


@pytest.mark.slow
def test_docs_keras_save_and_fit_blocks_run_as_printed(tmp_path, monkeypatch):
    """docs/keras.md's other python blocks, each run as written in a fresh
    namespace (in a scratch directory: the fit block makes its data)."""
    monkeypatch.chdir(tmp_path)
    blocks = [b for b in python_blocks("keras.md") if "class PonderingClassifier" not in b]
    assert len(blocks) == 2
    for code in blocks:
        namespace = {}
        exec(compile(code, "docs/keras.md", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "m.keras").exists() and (tmp_path / "t2t_data").is_dir()
    assert (
        namespace["model"].history.history["loss"][-1]
        < namespace["model"].history.history["loss"][0]
    )


@pytest.mark.slow
def test_docs_keras_example_trains_a_ut_act_classifier_with_fit_saves_and_loads(
    tmp_path, monkeypatch, capsys
):
    """docs/keras.md's example block, run as written (in a scratch directory)."""

    code = keras_example()
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "docs/keras.md", "exec"), namespace)  # noqa: S102
    losses = namespace["history"].history["loss"]
    assert losses[-1] < losses[0]  # fit trains it
    ponder = namespace["loaded"].ponder_time(namespace["ids"][:8])
    assert 1.0 <= ponder <= 6.0  # N + R of a position, at most max_steps
    assert "ponder time" in capsys.readouterr().out


def test_the_keras_notebook_holds_the_docs_example_executed():
    """examples/keras_ut_act.ipynb is docs/keras.md's example cell for cell (the
    slow test above runs that code), saved with the outputs of a run."""
    import json
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    code = keras_example()
    notebook = json.loads((root / "examples" / "keras_ut_act.ipynb").read_text())
    cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    lines = [line for cell in cells for line in "".join(cell["source"]).splitlines()]
    assert [line for line in lines if line.strip()] == [
        line for line in code.splitlines() if line.strip()
    ]  # the same code, blank lines between cells aside
    assert [cell["execution_count"] for cell in cells] == list(range(1, len(cells) + 1))
    printed = "".join("".join(out.get("text", "")) for out in cells[-1]["outputs"])
    assert printed.startswith("loss [") and "ponder time" in printed


@pytest.mark.slow
def test_a_problems_fit_dataset_trains_a_transformer_with_keras_fit(small_data):
    from t2t_lite import models  # noqa: F401  (registers the models)
    from t2t_lite.data import problem as problem_lib

    problem = problem_lib.get("test_identity_small")
    hp = dataclasses.replace(registry.HPARAMS.get("transformer_test")(), max_length=8)
    model = registry.MODELS.get("transformer")(hp, problem.vocab_size)
    model.compile(
        keras.optimizers.Adam(3e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    data = problem.fit_dataset(small_data, "train", 64, max_length=8, seed=1)
    features, targets = next(iter(data))
    assert set(features) >= {"inputs", "targets"} and targets.shape == features["targets"].shape
    history = model.fit(data, steps_per_epoch=10, epochs=2, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


@pytest.mark.parametrize(
    ("case", "model_name", "hparams_set", "overrides"),
    [
        ("transformer", "transformer", "transformer_test", "max_relative_position=2"),
        ("act", "universal_transformer", "adaptive_universal_transformer_test", ""),
    ],
)
def test_checkpoints_written_before_the_keras_ops_layers_restore_to_the_same_logits(
    case, model_name, hparams_set, overrides
):
    """tests/data/checkpoints_v1: a Transformer (relative positions) and an ACT
    UT written by the code at 14b3f2b, before the layers moved to keras.ops,
    each with the logits that code computed on features.npz (seeded init,
    vocabulary 20, tf.train.Checkpoint(model=...).write)."""
    import t2t_lite.models  # noqa: F401  (registers the models and hparams sets)
    from t2t_lite import checkpoints
    from t2t_lite import hparams as hparams_lib

    here = os.path.join(os.path.dirname(__file__), "data", "checkpoints_v1")
    features = dict(np.load(os.path.join(here, "features.npz")))
    hp = registry.HPARAMS.get(hparams_set)()
    model = registry.MODELS.get(model_name)(hparams_lib.override(hp, overrides), 20)
    checkpoints.restore_model(model, os.path.join(here, case, "model.ckpt-1"))
    logits, _ = model.logits_and_aux(features, training=False)
    expected = np.load(os.path.join(here, case, "logits.npy"))
    np.testing.assert_allclose(logits.numpy(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"vocab_size": 10**10}, "vocab_size must be an int from 1 to 4,194,304, got 10000000000"),
        ({"vocab_size": -5}, "vocab_size must be an int from 1 to 4,194,304, got -5"),
        ({"vocab_size": "12"}, "vocab_size must be an int"),
        ({"hparams": None}, "config has no 'hparams' dict"),
    ],
)
def test_a_tampered_keras_files_config_is_refused_before_any_variable(tmp_path, change, message):
    import zipfile

    import t2t_lite.models  # noqa: F401  (registers the models and hparams sets)

    model = registry.MODELS.get("transformer")(registry.HPARAMS.get("transformer_test")(), 12)
    model.build_variables()
    path, bad = tmp_path / "t.keras", tmp_path / "bad.keras"
    model.save(path)
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(bad, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                config["config"].update(change)
                if change.get("hparams", 1) is None:
                    del config["config"]["hparams"]
                data = json.dumps(config).encode()
            target.writestr(item, data)
    with pytest.raises(Exception, match=message) as caught:
        keras.models.load_model(bad)
    assert "OOM" not in str(caught.value)


@pytest.mark.parametrize(
    ("model_name", "hparams_set"),
    [
        ("transformer", "transformer_test"),
        ("universal_transformer", "adaptive_universal_transformer_test"),
        ("universal_transformer_encoder", "universal_transformer_test"),
    ],
)
def test_a_models_dtype_policy_reaches_every_layer_it_made(model_name, hparams_set, tmp_path):
    """keras-hub's dtype=: the model and all its layers compute in the policy
    (logits float32, variables float32), and a .keras file keeps it."""
    import t2t_lite.models  # noqa: F401  (registers the models and hparams sets)

    hp = registry.HPARAMS.get(hparams_set)()
    model = registry.MODELS.get(model_name)(hp, 12, dtype="mixed_bfloat16")
    features = {"inputs": tf.constant([[3, 4, 5, 1]]), "targets": tf.constant([[3, 4, 5, 1]])}
    logits = model(features)
    assert logits.dtype == "float32" and np.all(np.isfinite(logits.numpy()))
    assert {layer.compute_dtype for layer in nesting.nested(model)} == {"bfloat16"}
    assert {w.dtype for w in model.weights} == {"float32"}
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert {layer.compute_dtype for layer in nesting.nested(loaded)} == {"bfloat16"}
    np.testing.assert_allclose(loaded(features), logits, rtol=1e-5, atol=1e-5)


def test_keras_masks_are_honoured_and_a_mask_read_as_a_bias_is_refused():
    """Embedding(mask_zero=True) upstream, keras-hub's 0/1 padding_mask and
    attention_mask, and a bool mask where the bias goes: each hides the
    padded keys exactly as the additive bias does; a 0/1 float mask in the
    bias's place is refused; a decoder block is causal unless told otherwise."""
    block = transformer_layers.EncoderBlock(BLOCK)
    x = states()
    expected = block(x, BIAS)  # the additive bias of NONPADDING
    real = NONPADDING > 0
    rows = tf.boolean_mask(expected, real)
    for given in (
        block(x, padding_mask=tf.cast(NONPADDING, "int32")),
        block(x, real),  # a bool mask in the bias's place
        block(x, attention_mask=tf.tile(real[:, None, :], [1, 5, 1])),
    ):
        np.testing.assert_allclose(tf.boolean_mask(given, real), rows, atol=1e-5)
    # Keras's implicit mask, from an Embedding(mask_zero=True) in a Functional model.
    ids = keras.Input((5,), dtype="int32")
    embedded = keras.layers.Embedding(11, C, mask_zero=True)(ids)
    model = keras.Model(
        ids, transformer_layers.Stack((transformer_layers.EncoderBlock(BLOCK),), "pre")(embedded)
    )
    tokens = tf.constant([[3, 4, 5, 6, 7], [3, 4, 5, 0, 0]])
    stack, embed = model.layers[2], model.layers[1]
    plain = stack(embed(tokens), masks.padding_bias(tokens))
    np.testing.assert_allclose(
        tf.boolean_mask(model(tokens), tokens > 0), tf.boolean_mask(plain, tokens > 0), atol=1e-5
    )
    with pytest.raises(ValueError, match="holds positive values, as a 0/1 mask does"):
        block(x, tf.cast(NONPADDING[:, None, None, :], "float32"))
    # A decoder block without a self-attention bias is causal: position 0 does
    # not see what follows it.
    decoder = transformer_layers.DecoderBlock(BLOCK, cross_attention=False)
    first = decoder(x)[:, 0]
    changed = tf.concat([x[:, :1], x[:, 1:] * 3.0], axis=1)
    np.testing.assert_allclose(decoder(changed)[:, 0], first, atol=1e-5)
    np.testing.assert_allclose(decoder(x, None, masks.causal_bias(5)), decoder(x), atol=1e-6)


def test_a_bias_handed_down_a_stack_is_read_once_at_its_entry(monkeypatch):
    """Eagerly, the check that a floating bias is no 0/1 mask reads its values
    (a reduction and a wait): a stack reads it once, not again in each block
    and attention layer; a new bias is read anew, and a refused one stays refused."""
    stack = transformer_layers.Stack(
        tuple(transformer_layers.EncoderBlock(BLOCK, name=f"layer_{i}") for i in range(2)), "pre"
    )
    reads = []
    readable = masks._readable
    monkeypatch.setattr(masks, "_readable", lambda x: reads.append(1) or readable(x))
    bias = masks.nonpadding_bias(NONPADDING)
    stack(states(), bias)
    assert len(reads) == 1
    stack(states(), bias)  # the same tensor: already read
    assert len(reads) == 1
    stack(states(), masks.nonpadding_bias(NONPADDING))
    assert len(reads) == 2
    positive = tf.cast(NONPADDING[:, None, None, :], "float32")
    for _ in range(2):
        with pytest.raises(ValueError, match="holds positive values"):
            stack(states(), positive)
