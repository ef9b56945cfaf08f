"""Input labels: each input position's label from the problem, batched beside the
inputs, and the auxiliary loss on the encoder's positions (input_label_loss_weight)."""

import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import LOOP_HPARAMS
from test_training import make_trainer, summary_tags

from t2t_lite import checkpoints, experiment, registry
from t2t_lite.data import problem, tfrecord

HPARAMS = LOOP_HPARAMS


def labels_of(name, ids):
    prob = registry.PROBLEMS.get(name)()
    return prob.input_labels(tf.constant(ids, tf.int32)).numpy().tolist()


def test_labels_by_hand():
    # Permute: "| 120 120 021" then EOS; the marker starts at "012" (id 2), 120
    # moves the first item to the end (120, id 5; then 201, id 6), 021 swaps
    # the last two of 201 (210, id 7), which EOS repeats: the answer.
    assert labels_of("algorithmic_permute_three20", [8, 5, 5, 3, 1]) == [2, 5, 6, 7, 7]
    # Parity: bits 1 0 1 1 (ids 3 2 3 3) have prefix parities 1 1 0 1.
    assert labels_of("algorithmic_parity_binary40", [3, 2, 3, 3, 1]) == [3, 3, 2, 3, 3]
    assert not registry.PROBLEMS.get("algorithmic_reverse_decimal40").has_input_labels


def test_labels_of_a_padded_batch_by_hand():
    """The input pipeline labels whole batches: rows of different lengths, 0 at padding."""
    batch = problem.get("test_permute_small").with_input_labels({"inputs": FEATURES["inputs"]})
    assert batch["input_labels"].numpy().tolist() == FEATURES["input_labels"].numpy().tolist()
    bits = tf.constant([[3, 2, 3, 3, 1], [2, 3, 1, 0, 0]], tf.int32)  # 1011, 01
    parity = problem.get("algorithmic_parity_binary40").with_input_labels({"inputs": bits})
    assert parity["input_labels"].numpy().tolist() == [[3, 3, 2, 3, 3], [2, 3, 3, 0, 0]]


@pytest.mark.parametrize("name", ["test_permute_small", "algorithmic_parity_binary40"])
def test_each_label_is_the_answer_for_the_input_so_far(name, tmp_path):
    """The scan against the problem's own targets, an independent loop: position
    i's label is the target of the first i + 1 inputs, EOS's the answer."""
    cls = registry.PROBLEMS.get(name)
    small = type(cls.__name__, (cls,), {"splits": {"train": (40, 1), "dev": (10, 1)}})
    prob = small()
    prob.generate_data(str(tmp_path))
    for path in prob.filepaths(str(tmp_path), "train"):
        for ex in tfrecord.read_records(path):
            labels = prob.input_labels(tf.constant(ex["inputs"], tf.int32)).numpy().tolist()
            symbols = ex["inputs"][:-1]
            assert labels[:-1] == [prob.target(symbols[: i + 1])[0] for i in range(len(symbols))]
            assert labels[-1] == ex["targets"][0]


def test_batches_carry_labels_padded_like_the_inputs(tmp_path):
    prob = problem.get("test_permute_small")
    prob.generate_data(str(tmp_path))
    batches = list(prob.dataset(str(tmp_path), "dev", 64, input_labels=True))
    assert sum(len(b["inputs"]) for b in batches) == 40
    for batch in batches:
        inputs, labels = batch["inputs"].numpy(), batch["input_labels"].numpy()
        assert labels.shape == inputs.shape and ((labels == 0) == (inputs == 0)).all()
        for row, row_labels in zip(inputs, labels, strict=True):
            real = row[row > 0].tolist()
            assert row_labels[: len(real)].tolist() == labels_of("test_permute_small", real)
    assert "input_labels" not in next(iter(prob.dataset(str(tmp_path), "dev", 64)))


FEATURES = {  # "| 120 120 021" -> 210, and "| 102" -> 102; labels as above
    "inputs": tf.constant([[8, 5, 5, 3, 1], [8, 4, 1, 0, 0]], tf.int32),
    "targets": tf.constant([[7, 1], [4, 1]], tf.int32),
    "input_labels": tf.constant([[2, 5, 6, 7, 7], [2, 4, 4, 0, 0]], tf.int32),
}


def build(model, hparams_set, overrides):
    exp = experiment.Experiment.resolve(model, "test_permute_small", hparams_set, overrides)
    net = exp.build_model(problem.get("test_permute_small").vocab_size)
    checkpoints.build_model(net)
    return net


def by_hand(net, weight):
    """weight * the mean cross-entropy over the 8 labelled positions (padding
    not counted), and the share of them whose argmax is the label."""
    encoded, _ = net.encode(FEATURES["inputs"])
    logits = net.softmax.logits(encoded).numpy().astype(np.float64)  # [2, 5, V]
    labels = FEATURES["input_labels"].numpy()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    xent, right = [], []
    for b, s in zip(*np.nonzero(labels), strict=True):
        xent.append(-log_probs[b, s, labels[b, s]])
        right.append(logits[b, s].argmax() == labels[b, s])
    assert len(xent) == 8
    return weight * np.mean(xent), np.mean(right)


def test_the_transformer_adds_the_labels_loss_and_accuracy():
    net = build("transformer", "transformer_test", "input_label_loss_weight=0.5")
    _, aux = net.logits_and_aux(FEATURES)
    loss, accuracy = by_hand(net, 0.5)
    assert set(aux) == {"loss", "input_label_accuracy"}
    np.testing.assert_allclose(aux["loss"].numpy(), loss, rtol=1e-5)
    np.testing.assert_allclose(aux["input_label_accuracy"].numpy(), accuracy, rtol=1e-6)
    # A batch without labels (a build's dummy batch) adds nothing, nor does weight 0.
    unlabelled = {k: v for k, v in FEATURES.items() if k != "input_labels"}
    assert net.logits_and_aux(unlabelled)[1] == {}
    assert build("transformer", "transformer_test", "")(FEATURES) is not None
    assert build("transformer", "transformer_test", "").logits_and_aux(FEATURES)[1] == {}


def test_the_adaptive_ut_adds_the_labels_loss_to_its_ponder_cost():
    net = build(
        "universal_transformer", "adaptive_universal_transformer_test", "input_label_loss_weight=2"
    )
    unlabelled = {k: v for k, v in FEATURES.items() if k != "input_labels"}
    ponder = net.logits_and_aux(unlabelled)[1]["loss"].numpy()
    _, aux = net.logits_and_aux(FEATURES)
    loss, accuracy = by_hand(net, 2.0)
    assert {"encoder_ponder_time", "input_label_accuracy"} <= set(aux)
    np.testing.assert_allclose(aux["loss"].numpy(), ponder + loss, rtol=1e-5)
    np.testing.assert_allclose(aux["input_label_accuracy"].numpy(), accuracy, rtol=1e-6)


def test_the_option_is_refused_where_it_means_nothing():
    with pytest.raises(ValueError, match="input_label_loss_weight: problem 'test_identity_small'"):
        experiment.Experiment.resolve(
            "transformer", "test_identity_small", "transformer_test", "input_label_loss_weight=1"
        )
    with pytest.raises(ValueError, match="input_label_loss_weight"):
        experiment.Experiment.resolve(
            "transformer", "test_permute_small", "transformer_test", "input_label_loss_weight=-1"
        )


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_training_reports_the_labels_accuracy(tmp_path):
    data_dir = str(tmp_path / "data")
    problem.get("test_permute_small").generate_data(data_dir, seed=3)
    out = str(tmp_path / "run")
    overrides = f"{HPARAMS},input_label_loss_weight=1"
    t = make_trainer(data_dir, out, 3, overrides, problem="test_permute_small")
    results = t.train()
    assert {"aux_loss", "input_label_accuracy"} <= summary_tags(os.path.join(out, "train"))
    assert "input_label_accuracy" in summary_tags(os.path.join(out, "eval_dev"))
    assert {"input_label_accuracy"} <= set(results["dev"]) & set(results["test"])
    # The figure is the share of labelled positions whose argmax is the label:
    # counted here by hand, in numpy, on a batch of the trained model's dev split.
    from t2t_lite import sequences

    prob = problem.get("test_permute_small")
    examples = tfrecord.read_examples(prob.split_files(data_dir, "dev"), 12)
    width = max(len(e["inputs"]) for e in examples)
    inputs = tf.constant(sequences.pad_batch([e["inputs"] for e in examples], width))
    targets = sequences.pad_batch([e["targets"] for e in examples], 4)
    features = prob.with_input_labels({"inputs": inputs, "targets": tf.constant(targets)})
    _, aux = t.model.logits_and_aux(features, training=False)
    encoded, _ = t.model.encode(inputs)
    logits = t.model.softmax.logits(encoded).numpy()  # [B, S, V]
    labels = features["input_labels"].numpy()  # [B, S], 0: none
    right = (logits.argmax(-1) == labels)[labels > 0]
    assert float(aux["input_label_accuracy"]) == pytest.approx(right.mean(), abs=1e-6)
