"""Strategies, mixed precision and gradient accumulation: same updates, finite losses."""

import json
import math
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import ROOT

from t2t_lite import experiment, sequences
from t2t_lite.data import problem
from t2t_lite.reproduction import entries, runs
from t2t_lite.training import distribution, evaluation, steps, trainer

VOCAB = 12


def fresh_state(mixed_precision: str = "none"):
    exp = experiment.Experiment.resolve("transformer", "test_identity_small", "transformer_test")
    keras.utils.set_random_seed(7)
    model, optimizer, step = steps.build_training_state(exp, VOCAB, mixed_precision)
    return model, optimizer, step


def random_batch(seed: int, rows: int, length: int, vocab: int = VOCAB) -> dict[str, tf.Tensor]:
    rng = np.random.default_rng(seed)
    batch = {}
    for key in ("inputs", "targets"):
        ids = rng.integers(2, vocab, size=[rows, length])
        lengths = rng.integers(1, length + 1, size=rows)
        ids[np.arange(length)[None, :] >= lengths[:, None]] = sequences.PAD_ID
        batch[key] = tf.constant(ids, tf.int32)
    return batch


def union(a: dict, b: dict) -> dict:
    """Rows of a and b in one batch, padded to the longer length."""
    length = max(a["inputs"].shape[1], b["inputs"].shape[1])

    def pad(t):
        return tf.pad(t, [[0, 0], [0, length - t.shape[1]]])

    return {key: tf.concat([pad(a[key]), pad(b[key])], axis=0) for key in a}


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_accumulating_micro_batches_equals_one_step_on_their_union():
    first, second = random_batch(1, 3, 5), random_batch(2, 4, 7)  # different shapes
    strategy = tf.distribute.get_strategy()

    model, optimizer, step = fresh_state()
    accumulate = steps.make_train_step(model, optimizer, strategy, 0.1, step, False, 2)
    loss_a, weight_a, _, _ = accumulate((first, second))
    accumulated = [v.numpy() for v in model.trainable_variables]

    model, optimizer, step = fresh_state()
    single = steps.make_train_step(model, optimizer, strategy, 0.1, step)
    loss_b, weight_b, _, _ = single((union(first, second),))
    once = [v.numpy() for v in model.trainable_variables]

    assert float(weight_a) == float(weight_b)
    assert float(loss_a) == pytest.approx(float(loss_b), rel=1e-5)
    moved = 0
    for a, b, start in zip(accumulated, once, fresh_state()[0].trainable_variables, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
        moved += int(np.abs(a - start.numpy()).max() > 1e-4)
    assert moved > 0.9 * len(once)  # the update happened


@pytest.fixture(scope="module")
def permute_data(tmp_path_factory) -> str:
    """A data dir of test_permute_small, generated once for the module."""
    data_dir = str(tmp_path_factory.mktemp("permute"))
    problem.get("test_permute_small").generate_data(data_dir, seed=1)
    return data_dir


@pytest.mark.parametrize(
    "key",
    [
        "transformer",
        pytest.param("adaptive_universal_transformer", marks=pytest.mark.slow),
        pytest.param("ut_wavefront", marks=pytest.mark.slow),
        pytest.param("transformer_relative", marks=pytest.mark.slow),
    ],
)
def test_train_and_eval_steps_are_traced_once_over_every_bucket_shape(permute_data, key):
    """Each family trains and evaluates on batches of several bucket lengths and
    rows (a bucket per length 8..13, as step 1 gives) through one step function
    each, traced once beforehand for any shape (steps.trace_for_every_shape, as
    the trainer does), not once per bucket; every loss finite."""
    prob = problem.get("test_permute_small")
    exp = runs.entry_experiment(entries.ENTRIES[key], key, "test_permute_small")
    batches = prob.dataset(
        permute_data, "test", 64, input_labels=exp.hparams.input_label_loss_weight > 0,
        length_bucket_step=1.0,
    )  # fmt: skip
    keras.utils.set_random_seed(7)
    model, optimizer, step = steps.build_training_state(exp, prob.vocab_size)
    strategy = tf.distribute.get_strategy()
    train_step = steps.make_train_step(model, optimizer, strategy, 0.1, step, False)
    eval_step = evaluation.make_eval_step(model, strategy, 0.1)
    steps.trace_for_every_shape(train_step, batches.element_spec, copies=1)
    steps.trace_for_every_shape(eval_step, batches.element_spec)
    shapes = set()
    for batch in batches:
        shapes.add(tuple(batch["targets"].shape))
        assert math.isfinite(float(train_step((batch,))[0]))
        assert math.isfinite(float(eval_step(batch)["loss_sum"]))
    assert len(shapes) >= 3
    assert train_step.experimental_get_tracing_count() == 1
    assert eval_step.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("precision", ["fp16", pytest.param("bf16", marks=pytest.mark.slow)])
def test_mixed_precision_trains_with_finite_loss_and_float32_variables(precision, tmp_path, caplog):
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", "batch_size=64"
    )
    config = trainer.TrainConfig(
        train_steps=6, local_eval_frequency=6, log_step_count_steps=3, mixed_precision=precision
    )
    run = trainer.Trainer(exp, str(tmp_path / "data"), str(tmp_path / "run"), config)
    compute = {"fp16": "float16", "bf16": "bfloat16"}[precision]
    assert run.model.embedding.compute_dtype == compute
    assert {v.dtype for v in run.model.trainable_variables} == {"float32"}
    assert isinstance(run.optimizer, keras.optimizers.LossScaleOptimizer) == (precision == "fp16")
    logits, _ = run.model.logits_and_aux(random_batch(3, 2, 4, run.problem.vocab_size))
    assert logits.dtype == tf.float32
    results = run.train()
    assert math.isfinite(results["dev"]["loss"])
    assert keras.mixed_precision.global_policy().name == "float32"  # restored


def test_bad_distribution_settings_are_clear(monkeypatch):
    with pytest.raises(ValueError, match="--strategy='ring' is not one of"):
        trainer.TrainConfig(strategy="ring")
    with pytest.raises(ValueError, match="--mixed_precision='fp8'"):
        trainer.TrainConfig(mixed_precision="fp8")
    with pytest.raises(ValueError, match="--accumulation_steps must be >= 1"):
        trainer.TrainConfig(accumulation_steps=0)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs the TF_CONFIG environment variable"):
        distribution.make_strategy("multi_worker")
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {}}')
    with pytest.raises(ValueError, match="TF_CONFIG is not valid"):
        distribution.make_strategy("multi_worker")
    # --devices: devices this machine has, one for one_device, none for default.
    with pytest.raises(ValueError, match=r"this machine has no '/gpu:7'; it has .*/cpu:0"):
        distribution.make_strategy("one_device", ["/gpu:7"])
    with pytest.raises(ValueError, match="one_device runs on one device"):
        distribution.make_strategy("one_device", ["/cpu:0", "/cpu:0"])
    with pytest.raises(ValueError, match="not a device name"):
        distribution.make_strategy("mirrored", ["cpu-zero"])
    with pytest.raises(ValueError, match="not --strategy=default"):
        distribution.make_strategy("default", ["/cpu:0"])
    assert distribution.make_strategy("one_device", ["/cpu:0"]).num_replicas_in_sync == 1


# Two logical CPUs must be configured before TensorFlow starts, so this runs
# in a fresh process: a mirrored step over the two halves of a global batch
# against a default-strategy step on the whole batch, for the trainer's Adam
# and for SGD (whose update is lr times the applied gradient), with clipping
# on and under fp16 loss scaling.
MIRRORED = """
import json, sys
import keras
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import test_scale_out as t
from t2t_lite.training import schedules, steps

class SGD(schedules.SummedGradients, keras.optimizers.SGD):
    pass

batch = t.union(t.random_batch(1, 4, 6), t.random_batch(2, 4, 6))  # 8 rows
CASES = [("adam", "none", 0.0), ("sgd", "none", 0.05), ("sgd", "fp16", 0.05)]
for optimizer_name, precision, clip in CASES:
    results = {}
    for name in ("default", "mirrored"):
        if name == "default":
            strategy = tf.distribute.get_strategy()
            distributed = batch
        else:
            strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
            distributed = strategy.experimental_distribute_values_from_function(
                lambda ctx: {k: v[ctx.replica_id_in_sync_group * 4:][:4] for k, v in batch.items()}
            )
        with strategy.scope():
            model, optimizer, step = t.fresh_state(precision)
            if optimizer_name == "sgd":
                optimizer = SGD(learning_rate=0.5)
                if precision == "fp16":
                    optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
                optimizer.build(model.trainable_variables)
        start = [v.numpy() for v in model.trainable_variables]
        train_step = steps.make_train_step(model, optimizer, strategy, 0.1, step, clip_grad_norm=clip)
        loss, weight, norm, _ = train_step((distributed,))
        update = [v.numpy() - s for v, s in zip(model.trainable_variables, start)]
        results[name] = (float(loss), float(weight), float(norm), update)
    (la, wa, na, ua), (lb, wb, nb, ub) = results["default"], results["mirrored"]
    scale = max(float(np.abs(u).max()) for u in ua)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(ua, ub))
    update_norm = [float(np.sqrt(sum(float((u ** 2).sum()) for u in us))) for us in (ua, ub)]
    print(json.dumps({"case": [optimizer_name, precision, clip], "loss": [la, lb],
                      "weight": [wa, wb], "grad_norm": [na, nb], "update_norm": update_norm,
                      "update_diff": diff / scale, "abs_diff": diff, "replicas": strategy.num_replicas_in_sync}))
"""


def run_python(code: str, env_extra: dict | None = None, timeout: int = 300):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(env_extra or {}))
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "tests")])
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_mirrored_step_equals_a_single_device_step_with_clipping_and_fp16():
    process = run_python(MIRRORED)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    results = [json.loads(line) for line in out.strip().splitlines() if line.startswith("{")]
    assert len(results) == 3
    for result in results:
        optimizer_name, precision, clip = result["case"]
        # Tolerances: float32 sums in another order (per-replica partial sums),
        # weights equal to rounding; float16 activations computed on 4 rows
        # rather than 8, updates equal to 1% of the largest.
        rel = 1e-5 if precision == "none" else 1e-2
        assert result["replicas"] == 2
        assert result["weight"][0] == result["weight"][1]
        assert result["loss"][0] == pytest.approx(result["loss"][1], rel=rel)
        # The logged norm is the global norm of the reduced gradient on both.
        assert result["grad_norm"][0] == pytest.approx(result["grad_norm"][1], rel=rel)
        if precision == "none":
            assert result["abs_diff"] < 1e-6, result
        else:
            assert result["update_diff"] < rel, result
        if optimizer_name == "sgd":  # clipped to the global norm: |update| = lr * clip
            assert result["grad_norm"][0] > 2 * clip  # clipping acted
            for update_norm in result["update_norm"]:
                assert update_norm == pytest.approx(0.5 * clip, rel=max(rel, 1e-4))


WORKER = """
import sys
import conftest
from absl import logging
from t2t_lite import experiment
from t2t_lite.training import trainer
logging.set_verbosity(logging.INFO)
exp = experiment.Experiment.resolve(
    "transformer", "test_identity_small", "transformer_test", "batch_size=64")
config = trainer.TrainConfig(train_steps=int(sys.argv[3]), local_eval_frequency=2, eval_steps=2,
                             keep_checkpoint_max=1, strategy="multi_worker")
results = trainer.train(exp, sys.argv[1], sys.argv[2], config)
print("done", results["dev"]["loss"])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def run_workers(data: str, run: str, train_steps: int) -> list[str]:
    """Two workers on loopback ports, each with its TF_CONFIG; returns their stderr."""
    workers = [f"localhost:{free_port()}", f"localhost:{free_port()}"]
    processes = []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        code = WORKER.replace("sys.argv[1], sys.argv[2]", f"{data!r}, {run!r}")
        code = code.replace("int(sys.argv[3])", str(train_steps))
        processes.append(run_python(code, {"TF_CONFIG": json.dumps(tf_config)}))
    outputs = [p.communicate(timeout=600) for p in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err[-3000:]
        assert "done" in out
    return [err for _, err in outputs]


@pytest.mark.slow
def test_two_local_workers_train_and_the_chief_writes_one_checkpoint(tmp_path):
    """Checkpoints at steps 2 and 4 (keeping 1), then both workers restart to step 6."""
    data, run = str(tmp_path / "data"), str(tmp_path / "run")
    problem.get("test_identity_small").generate_data(data)
    run_workers(data, run, train_steps=4)
    assert tf.train.latest_checkpoint(run).endswith("model.ckpt-4")
    names = sorted(os.listdir(run))
    assert [n for n in names if n.startswith("model.ckpt")] == [
        "model.ckpt-4.data-00000-of-00001",
        "model.ckpt-4.index",
    ]
    assert not [n for n in names if n.startswith(".worker")]  # workers' copies removed
    assert "metrics.json" in names and "train" in names  # the chief's files

    logs = run_workers(data, run, train_steps=6)  # restarted workers resume
    assert all("Resumed from" in log and "at step 4" in log for log in logs)
    assert tf.train.latest_checkpoint(run).endswith("model.ckpt-6")
