"""The state-tracking table (`--models=state_table`): its rows' hparams, sizes and a real run."""

import pytest
import tensorflow as tf
from conftest import compare_one_row, entry_experiment

from t2t_lite.reproduction import entries

PERMUTE = "algorithmic_permute_three20"
PARITY = "algorithmic_parity_binary20"


def parameters(key, problem):
    exp = entry_experiment(key, problem)
    model = exp.build_model(exp.build_problem().vocab_size)
    model(model.dummy_features())
    return model.count_params()


RECIPE = (
    "position_embedding", "max_relative_position", "causal_encoder", "input_label_loss_weight",
    "curriculum_start_length", "curriculum_steps_per_length", "batch_size", "max_length",
    "learning_rate_constant", "learning_rate_warmup_steps",
)  # fmt: skip


@pytest.mark.parametrize("problem", [PERMUTE, PARITY])
def test_every_row_shares_the_recipe_and_only_the_wavefront_steps_by_position(problem):
    """A fair table: the five rows agree on every training-recipe key (whatever
    its value), and no row adds absolute positions to its relative ones. The
    wavefront alone counts steps per position: measured through its step
    counter, position i of an n-symbol input (EOS included) gets i + 2 steps
    (n + 1 for the last), training moving each row by at most 1."""
    from t2t_lite.layers import universal

    rows = {key: entry_experiment(key, problem).hparams for key in entries.STATE_TABLE}
    for key in RECIPE:
        assert len({getattr(hp, key) for hp in rows.values()}) == 1, key
    assert all(hp.position_embedding == "none" and hp.max_relative_position for hp in rows.values())
    by_position = [key for key, hp in rows.items() if getattr(hp, "rec_steps_by_position", False)]
    assert by_position == ["ut_wavefront"]
    wave = rows["ut_wavefront"]
    counter = universal.LengthDepth(
        wave.rec_steps_per_symbol, wave.rec_steps_offset, wave.rec_steps_random,
        wave.act_max_steps, wave.rec_steps_by_position, wave.rec_steps_window,
    )  # fmt: skip
    steps = counter.position_steps(tf.constant([5]), 5).numpy().tolist()
    assert steps == [[2, 3, 4, 5, 6]]
    moved = counter.steps(tf.constant([5] * 200), counter.jitter(tf.constant(200), seed=1))
    assert set(moved.numpy().tolist()) <= {5, 6, 7}


def test_the_equal_compute_transformer_is_as_deep_as_the_wavefronts_longest_training_count():
    """20 symbols and EOS in training: ceil(1.0 * 21) + 1 = 22 encoder layers,
    the decoder as deep as the UT's fixed decoder, the UT's width."""
    hp = entry_experiment("transformer_relative_equal_compute", PERMUTE).hparams
    assert (hp.encoder_layers, hp.decoder_layers, hp.hidden_size) == (22, 4, 64)
    length_table = entry_experiment(
        "transformer_equal_compute", "algorithmic_sort_decimal20"
    ).hparams
    assert length_table.encoder_layers == 12  # ceil(21 / 2) + 1, unchanged


def test_the_equal_parameter_transformer_has_the_uts_weights_but_its_state_norms():
    """The UT's encoder and decoder blocks unshared once: the counts differ by
    the UT's state and input layer norms alone, 2 (gain, bias) * 64 each, in
    both stacks."""
    ut = parameters("ut_wavefront", PERMUTE)
    assert parameters("ut_relative_fixed", PERMUTE) == ut
    assert ut - parameters("transformer_relative_equal_params", PERMUTE) == 2 * 2 * (2 * 64)


def test_state_table_expands_to_the_state_rows_and_unknown_names_list_the_tables():
    """`state_table` is a name for its rows: the same entries as naming them one
    by one, in order; a misspelt table name lists the tables."""
    named = entries.parse_entries(list(entries.STATE_TABLE))
    assert entries.parse_entries(["state_table"]) == named
    assert len({entry.label for entry in named}) == len(named)  # rows told apart
    with pytest.raises(ValueError, match="or length_table or state_table"):
        entries.parse_entries(["state_tabel"])


@pytest.mark.slow
def test_the_wavefront_trains_evaluates_and_greedy_decodes_through_compare(tmp_path):
    """The wavefront row through the real trainer (per-position counts, the
    window, labels and curriculum) on a small S3 problem: every figure of the
    row is there, and the run keeps the entry's hparams."""
    cells, hp = compare_one_row(tmp_path, "ut_wavefront", "test_permute_small")
    assert cells[1].startswith("UT, wavefront")
    assert hp.rec_steps_by_position and hp.rec_steps_window == 1
    assert hp.input_label_loss_weight == 1.0
