"""The encoder-only taggers (models/encoder_only.py): one output per input
position, read by the same searches as the encoder-decoders."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import t2t_lite.models  # noqa: F401  (registers the models and hparams sets)
from t2t_lite import checkpoints, registry, sequences
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.models import encoder_only

VOCAB = 12
# Row 1 is two positions shorter (padding); each row ends with EOS.
INPUTS = tf.constant([[3, 4, 5, 6, 1], [7, 8, 1, 0, 0]])


def tagger(name="transformer_encoder", hparams_set="transformer_test"):
    model = registry.MODELS.get(name)(registry.HPARAMS.get(hparams_set)(), VOCAB)
    checkpoints.build_model(model)
    return model


@pytest.mark.parametrize(
    ("name", "hparams_set"),
    [
        ("transformer_encoder", "transformer_test"),
        ("universal_transformer_encoder", "adaptive_universal_transformer_test"),
    ],
)
def test_each_target_position_reads_its_input_position_and_no_target(name, hparams_set):
    model = tagger(name, hparams_set)
    assert model.decoder is None
    assert not any("decoder" in v.path for v in model.weights)
    encoded, _ = model.encode(INPUTS)
    expected = model.softmax.logits(encoded)  # [B, S, V]
    targets = tf.constant([[2, 2, 2, 2, 1], [2, 2, 1, 0, 0]])
    logits, aux = model.logits_and_aux({"inputs": INPUTS, "targets": targets})
    np.testing.assert_allclose(logits, expected, atol=1e-6)
    other, _ = model.logits_and_aux({"inputs": INPUTS, "targets": targets[::-1] + 3})
    np.testing.assert_array_equal(other, logits)  # the targets are never read
    # A shorter target reads the first positions; a longer one gets zeros past the input.
    short, _ = model.logits_and_aux({"inputs": INPUTS, "targets": targets[:, :3]})
    np.testing.assert_array_equal(short, logits[:, :3])
    long, _ = model.logits_and_aux({"inputs": INPUTS, "targets": tf.pad(targets, [[0, 0], [0, 2]])})
    np.testing.assert_array_equal(long[:, :5], logits)
    np.testing.assert_array_equal(long[:, 5:], np.zeros([2, 2, VOCAB]))
    if "universal" in name:  # ACT: the encoder's ponder cost is the auxiliary loss
        weight = model.hparams.act_loss_weight
        assert set(aux) == {"encoder_ponder_time", "encoder_act_steps", "loss"}
        np.testing.assert_allclose(aux["loss"], weight * aux["encoder_ponder_time"], rtol=1e-6)
    else:
        assert aux == {}


def test_a_step_reads_its_position_for_every_hypothesis_and_only_eos_past_the_row():
    model = tagger()
    encoded, bias = model.encode(INPUTS)
    per_position = model.softmax.logits(encoded).numpy()  # [B, S, V]
    cache = model.init_cache(encoded, bias, None)
    for index in range(7):
        ids = tf.constant([5, 5, 5, 9, 9, 9])  # three hypotheses per row; never read
        logits, _ = model.decode_step(ids, tf.constant(index), cache)
        assert logits.shape == (6, VOCAB)
        for row, length in ((0, 5), (1, 3)):
            for hypothesis in logits.numpy()[3 * row : 3 * row + 3]:
                if index < length:
                    np.testing.assert_array_equal(hypothesis, per_position[row, index])
                else:
                    assert np.argmax(hypothesis) == sequences.EOS_ID
                    assert np.sort(hypothesis)[-2] <= encoder_only.NEG


def test_greedy_search_is_the_argmax_at_each_position_up_to_the_first_eos():
    model = tagger()
    encoded, _ = model.encode(INPUTS)
    best = np.argmax(model.softmax.logits(encoded).numpy(), -1)  # [B, S]
    hp = decoder_lib.DecodeHParams(beam_size=1, extra_length=3, max_input_length=8)
    ids, _ = decoder_lib.Decoder(model, hp).search(INPUTS)
    for row, length in ((0, 5), (1, 3)):
        expected = list(best[row, :length])
        if sequences.EOS_ID in expected:
            expected = expected[: expected.index(sequences.EOS_ID) + 1]
        else:
            expected.append(sequences.EOS_ID)  # forced at the row's first padded position
        out = [int(i) for i in ids.numpy()[row].reshape(-1)]
        assert out[: len(expected)] == expected


def test_a_tagger_refuses_inputs_that_are_not_tokens():
    hp = registry.HPARAMS.get("transformer_test")()
    with pytest.raises(ValueError, match="transformer_encoder.*'facts'"):
        registry.MODELS.get("transformer_encoder")(hp, VOCAB, input_encoding="facts")


def test_a_tagger_learns_a_per_position_mapping_with_fit():
    """Keras's fit on a fixed batch: the loss of target = (input + 1) at each
    position falls (an invariant of training, not a threshold)."""
    model = tagger()
    inputs = np.array([[3, 4, 5, 6, 1], [7, 8, 9, 1, 0]], np.int32)
    targets = np.where(inputs > 1, inputs + 1, inputs).astype(np.int32)
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(
        {"inputs": inputs, "targets": targets}, targets, epochs=20, batch_size=2, verbose=0
    )
    losses = history.history["loss"]
    assert losses[-1] < losses[0] / 2, losses


def test_a_tagger_is_refused_for_targets_not_aligned_with_the_inputs():
    import t2t_lite.problems  # noqa: F401  (registers the problems)
    from t2t_lite import experiment

    with pytest.raises(ValueError, match="'parsing_from_files'.*not aligned"):
        experiment.Experiment.resolve(
            "transformer_encoder", "parsing_from_files", "transformer_parsing_tagger"
        )
    exp = experiment.Experiment.resolve(
        "universal_transformer_encoder",
        "parsing_from_files_labels",
        "universal_transformer_parsing_tagger",
    )
    assert exp.hparams.num_rec_steps == 4 and exp.hparams.hidden_size == 256


def test_the_parsing_table_has_tagger_rows_only_for_one_label_per_word():
    from t2t_lite.reproduction import parsing_table

    linearized = parsing_table.parse_rows(["parsing_table"], aligned=False)
    assert linearized == ["right_branching", "transformer_parsing", "universal_transformer_parsing"]
    labels = parsing_table.parse_rows(["parsing_table"], aligned=True)
    assert labels == [*linearized, "transformer_tagger", "universal_transformer_tagger"]


@pytest.mark.parametrize("name", ["transformer", "universal_transformer_encoder"])
def test_word_dropout_replaces_only_words_by_the_unknown_token_and_only_in_training(name):
    from t2t_lite import hparams as hparams_lib

    hparams_set = "universal_transformer_test" if "universal" in name else "transformer_test"
    hp = hparams_lib.override(registry.HPARAMS.get(hparams_set)(), "input_word_dropout=0.5")
    model = registry.MODELS.get(name)(hp, VOCAB)
    checkpoints.build_model(model)
    words = np.tile(np.arange(3, VOCAB), 30)[:199]
    inputs = tf.constant([[*words, 1], [*words[:100], 1, *[0] * 99]], tf.int32)  # [2, 200]
    table = model.source_embedding.embed(tf.range(VOCAB)).numpy()  # [V, C]
    embedded, _ = model.embed_inputs(inputs, training=True)
    # Each position's row is its token's or the unknown token's: find which.
    rows = embedded.numpy()[..., None, :] - table[None, None]  # [B, S, V, C]
    read = np.argmin(np.abs(rows).sum(-1), -1)  # [B, S]
    original = inputs.numpy()
    kept = read == original
    unknown = read == sequences.UNKNOWN_ID
    assert np.all(kept | unknown)
    assert np.all(kept[original <= sequences.EOS_ID])  # EOS and PAD are never dropped
    dropped = unknown & (original > sequences.UNKNOWN_ID)
    assert 0 < dropped.sum() < (original > sequences.UNKNOWN_ID).sum()
    unchanged, _ = model.embed_inputs(inputs, training=False)
    np.testing.assert_array_equal(unchanged, model.source_embedding.embed(inputs))
    if name == "transformer":  # (a tagger refuses facts before it reads its hparams)
        with pytest.raises(ValueError, match="input_word_dropout.*'facts'"):
            registry.MODELS.get(name)(hp, VOCAB, input_encoding="facts")


@pytest.mark.slow
def test_the_parsing_table_trains_and_scores_a_tagger_row_on_one_label_per_word(tmp_path):
    """t2t-compare's parsing table on the tagger row: a run trained (one step
    more than the rows average, a checkpoint each, though asked to keep one),
    its dev decode (of the average of its last AVERAGE_LAST checkpoints, as
    the recipe) a tree over every sentence's words, scored and kept."""
    import json

    from test_parsing import TINY_PARSER, tiny_treebank_data

    from t2t_lite import checkpoints
    from t2t_lite.reproduction import parsing_table, runs
    from t2t_lite.training import trainer

    last = parsing_table.AVERAGE_LAST
    data = tiny_treebank_data(tmp_path, "parsing_from_files_labels")
    out = tmp_path / "out"
    config = trainer.TrainConfig(
        train_steps=last + 1, local_eval_frequency=1, keep_checkpoint_max=1
    )
    request = runs.Request(
        str(out), ["right_branching", "transformer_tagger"], ["parsing_from_files_labels"],
        data, config, ["1"], TINY_PARSER, split="dev", search="beam_size=1",
    )  # fmt: skip
    text = parsing_table.compare(request)
    label = parsing_table.ENTRIES["transformer_tagger"].label
    assert any(line.startswith(f"| {label} |") for line in text.splitlines())
    run = out / "parsing_from_files_labels" / "transformer_tagger"
    assert json.loads((run / "experiment.json").read_text())["model"] == "transformer_encoder"
    kept = json.loads((run / "parse_dev.json").read_text())
    assert kept["figures"]["errors"] == 0 and kept["figures"]["sentences"] == 2
    assert f"average of each run's last {last} checkpoints" in text
    newest = f"model.ckpt-{last + 1}"
    averaged = run / "averaged" / newest
    sources = json.loads((run / "averaged" / f"{newest}.sources.json").read_text())
    names = [name for name, _ in sources["depends_on"]["sources"]]
    assert names == [f"model.ckpt-{step}" for step in range(2, last + 2)]
    # The decode read the average, not the newest checkpoint.
    assert checkpoints.fingerprint(str(averaged)) in json.dumps(kept)
    assert checkpoints.fingerprint(str(run / newest)) not in json.dumps(kept)
