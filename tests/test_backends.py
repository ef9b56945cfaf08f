"""The models on Keras's JAX and PyTorch backends (slow): a model saved under
TensorFlow, loaded under each backend, gives TensorFlow's logits and ponder
statistics for the same weights, and a few `fit` steps there lower the loss.

Needs `pip install -e .[backends]` (jax and torch, CPU; .ci/run installs them).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import t2t_lite.models  # noqa: F401  (registers the models and hparams sets)
from t2t_lite import hparams as hparams_lib
from t2t_lite import registry

TESTS = os.path.dirname(os.path.abspath(__file__))
VOCAB = 20
FEATURES = {
    "inputs": np.array(
        [[3, 4, 5, 6, 1, 0, 0], [7, 8, 9, 10, 11, 12, 1], [5, 1, 0, 0, 0, 0, 0]], np.int32
    ),
    "targets": np.array([[6, 5, 4, 3, 1], [12, 11, 1, 0, 0], [5, 1, 0, 0, 0]], np.int32),
}
CASES = {
    # The Transformer with relative positions and the scalable softmax: every
    # branch of the attention layer.
    "transformer": (
        "transformer",
        "transformer_test",
        "max_relative_position=3,attention_length_scale=8",
    ),
    # The UT with a learned step signal and the separable-convolution transition.
    "universal": (
        "universal_transformer",
        "universal_transformer_test",
        "step_timing_signal_type=learned,transformer_ffn_type=sepconv",
    ),
    # ACT in both stacks: the fixed-trip loop against TensorFlow's early exit.
    "act": ("universal_transformer", "adaptive_universal_transformer_test", ""),
    # An encoder-only tagger under ACT (models/encoder_only.py): each target
    # position reads its input position (here the first 5 of 7).
    "tagger": ("universal_transformer_encoder", "adaptive_universal_transformer_test", ""),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each case's model (seeded init) saved under TensorFlow with its logits."""
    keras.utils.set_random_seed(7)
    out = {}
    for case, (model_name, hparams_set, overrides) in CASES.items():
        hp = registry.HPARAMS.get(hparams_set)()
        hp = hparams_lib.override(hp, overrides) if overrides else hp
        model = registry.MODELS.get(model_name)(hp, VOCAB)
        model.build_variables()
        logits, aux = model.logits_and_aux(FEATURES, training=False)
        directory = tmp_path_factory.mktemp(case)
        model.save(str(directory / "model.keras"))
        np.savez(directory / "features.npz", **FEATURES)
        out[case] = (str(directory), logits.numpy(), {k: float(v) for k, v in aux.items()})
    return out


def run_check(backend: str, directory: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": ""}
    script = os.path.join(TESTS, "backend_check.py")
    done = subprocess.run(
        [sys.executable, script, directory], check=False, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{backend}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_same_weights_give_tensorflows_logits_and_fit_lowers_the_loss(saved, backend, case):
    directory, logits, aux = saved[case]
    result = run_check(backend, directory)
    assert result["backend"] == backend
    np.testing.assert_allclose(np.array(result["logits"]), logits, atol=1e-4, rtol=1e-4)
    assert result["aux"].keys() == aux.keys()
    for name, value in aux.items():  # ACT's ponder time and steps
        assert result["aux"][name] == pytest.approx(value, abs=1e-4), name
    losses = result["losses"]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_keras_pages_act_example_runs_as_printed_on_each_backend(backend, tmp_path):
    """docs/keras.md's UT-with-ACT classifier, the page's code unchanged, in its
    own process under each backend: it trains, saves, loads and ponders."""
    from test_keras import keras_example

    script = tmp_path / "example.py"
    script.write_text(keras_example())
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, str(script)], check=False, env=env, capture_output=True, text=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, f"{backend}:\n{done.stderr[-3000:]}"
    line = done.stdout.strip().splitlines()[-1]
    losses = json.loads(line.split("loss ", 1)[1].split(" ponder")[0])
    assert losses[-1] < losses[0] and "ponder time" in line


FACTS_CHECK = """
import json
import keras
import numpy as np
from t2t_lite.layers import embedding, facts
layer = facts.FactEmbedding(embedding.SharedEmbedding(11, 8, name="words"))
# Two rows of bAbI-shaped ids: facts ended by FACT_END (2), then EOS (1) and PAD (0).
ids = np.array([[3, 4, 2, 5, 2, 1, 0], [6, 2, 1, 0, 0, 0, 0]], "int32")
layer(ids)  # built, then the same weights on every backend
layer.set_weights([np.linspace(-1, 1, int(np.prod(w.shape))).reshape(w.shape) for w in layer.weights])
out, nonpadding = layer(ids)
print(json.dumps([keras.ops.convert_to_numpy(t).tolist() for t in (out, nonpadding)]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_fact_embedding_takes_ids_with_eos_and_padding_on_each_backend(backend, tmp_path):
    """Well-formed bAbI input (EOS and PAD after the last fact) on each backend,
    against TensorFlow's output for the same weights, fact by fact."""
    outputs = {}
    for name in ("tensorflow", backend):
        env = {**os.environ, "KERAS_BACKEND": name, "CUDA_VISIBLE_DEVICES": ""}
        script = FACTS_CHECK
        done = subprocess.run(
            [sys.executable, "-c", script], check=False, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{name}:\n{done.stderr[-3000:]}"
        outputs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    (tf_out, tf_mask), (out, mask) = outputs["tensorflow"], outputs[backend]
    facts = len(tf_mask[0])  # JAX keeps one slot per token; the real facts come first
    np.testing.assert_allclose(np.array(out)[:, :facts], tf_out, atol=1e-5)
    assert np.array(mask)[:, :facts].tolist() == tf_mask
