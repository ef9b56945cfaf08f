"""The state-tracking table (`--models=state_table`): its rows' hparams, sizes and a real run."""

import pytest
from conftest import compare_one_row, entry_experiment

from t2t_lite.reproduction import comparison, entries

PERMUTE = "algorithmic_permute_three20"
PARITY = "algorithmic_parity_binary20"


def parameters(key, problem):
    exp = entry_experiment(key, problem)
    model = exp.build_model(exp.build_problem().vocab_size)
    model(model.dummy_features())
    return model.count_params()


@pytest.mark.parametrize("problem", [PERMUTE, PARITY])
def test_every_row_shares_the_recipe_and_only_the_wavefront_steps_by_position(problem):
    """Every row: relative positions only (no sinusoid), a causal encoder, labels
    on every input position and the curriculum from 3 positions, 500 steps a
    length. The wavefront alone counts steps per position, n + 1 of them (moved
    by up to 1 in training), each position running its last one only."""
    for key in entries.STATE_TABLE:
        hp = entry_experiment(key, problem).hparams
        recipe = (hp.position_embedding, hp.max_relative_position, hp.causal_encoder)
        assert recipe == ("none", 2, True), key
        assert (hp.input_label_loss_weight, hp.curriculum_start_length) == (1.0, 3), key
        assert hp.curriculum_steps_per_length == 500, key
    wave = entry_experiment("ut_wavefront", problem).hparams
    assert (wave.rec_steps_per_symbol, wave.rec_steps_offset, wave.rec_steps_random) == (1.0, 1, 1)
    assert (wave.rec_steps_by_position, wave.rec_steps_window) == (True, 1)
    assert wave.rec_state_norm and wave.rec_input_every_step
    assert wave.step_timing_signal_type == "none" and wave.rec_decoder_steps == 4
    fixed = entry_experiment("ut_relative_fixed", problem).hparams
    assert not fixed.length_depth and fixed.num_rec_steps == 4
    assert fixed.rec_state_norm and fixed.step_timing_signal_type == "none"


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


def test_state_table_names_its_five_rows_and_unknown_names_list_the_tables():
    rows = entries.parse_entries(["state_table"])
    assert [entry.label for entry in rows] == [
        comparison.ENTRIES[key].label for key in entries.STATE_TABLE
    ]
    assert len(rows) == 5
    with pytest.raises(ValueError, match="or length_table or state_table"):
        entries.parse_entries(["state_tabel"])


def test_the_wavefront_trains_evaluates_and_greedy_decodes_through_compare(tmp_path):
    """The wavefront row through the real trainer (per-position counts, the
    window, labels and curriculum) on a small S3 problem: every figure of the
    row is there, and the run keeps the entry's hparams."""
    cells, hp = compare_one_row(tmp_path, "ut_wavefront", "test_permute_small")
    assert cells[1].startswith("UT, wavefront")
    assert all(0.0 <= float(cells[i]) <= 1.0 for i in (2, 3, 4, 5, 8))
    assert hp.rec_steps_by_position and hp.rec_steps_window == 1
    assert hp.input_label_loss_weight == 1.0
