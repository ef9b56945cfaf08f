import dataclasses

import pytest

from t2t_lite import hparams
from t2t_lite.models import transformer_hparams


def base():
    return transformer_hparams.transformer_base()


def test_override_casts_to_field_types():
    hp = hparams.override(base(), "hidden_size=64, label_smoothing=0,norm_position=post")
    assert hp.hidden_size == 64 and isinstance(hp.hidden_size, int)
    assert hp.label_smoothing == 0.0 and isinstance(hp.label_smoothing, float)
    assert hp.norm_position == "post"


def test_override_empty_string_is_identity():
    assert hparams.override(base(), "") == base()


def test_unknown_key_names_it_and_lists_valid_keys():
    with pytest.raises(ValueError, match=r"unknown hparam 'hiden_size'.*valid keys:.*hidden_size"):
        hparams.override(base(), "hiden_size=3")


@pytest.mark.parametrize("text", ["hidden_size=abc", "hidden_size=1.5", "label_smoothing=x"])
def test_bad_value_names_key_and_type(text):
    key = text.split("=")[0]
    with pytest.raises(ValueError, match=rf"hparam '{key}' expects"):
        hparams.override(base(), text)


def test_malformed_item_is_an_error():
    with pytest.raises(ValueError, match="key=value"):
        hparams.override(base(), "hidden_size")


def test_bool_parsing():
    @dataclasses.dataclass(frozen=True)
    class HP:
        flag: bool = False

    assert hparams.override(HP(), "flag=True").flag is True
    assert hparams.override(HP(), "flag=0").flag is False
    with pytest.raises(ValueError, match="'flag' expects a value of type bool"):
        hparams.override(HP(), "flag=maybe")


def test_hparams_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        base().hidden_size = 3


@pytest.mark.parametrize(
    "text, keys",
    [
        ("num_heads=7", "num_heads, hidden_size"),
        ("norm_position=middle", "norm_position"),
        ("attention_dropout=1.5", "attention_dropout"),
        ("batch_size=10", "batch_size, max_length"),
        ("attention_length_scale=1", "attention_length_scale"),  # log 1 = 0
        ("max_relative_position=-1", "max_relative_position"),
        ("curriculum_start_length=3", "curriculum_start_length, curriculum_steps_per_length"),
    ],
)
def test_invalid_combinations_name_the_keys(text, keys):
    with pytest.raises(ValueError, match=rf"invalid hparams \({keys}\)"):
        hparams.override(base(), text)


def test_dict_round_trip():
    hp = hparams.override(base(), "hidden_size=64,num_heads=4")
    again = hparams.from_dict(transformer_hparams.TransformerHParams, hparams.to_dict(hp))
    assert again == hp


def test_a_dict_written_before_a_key_existed_reads_back_as_what_it_ran():
    # length_bucket_step came after runs that batched with doubling buckets, and
    # learning_rate_decay_steps after runs with no decay: those are their values.
    values = hparams.to_dict(transformer_hparams.transformer_tiny())
    assert values["length_bucket_step"] == 1.1
    del values["length_bucket_step"], values["learning_rate_decay_steps"]
    old = hparams.from_dict(transformer_hparams.TransformerHParams, values)
    assert old.length_bucket_step == 2.0 and old.learning_rate_decay_steps == 0
    values["length_bucket_step"] = 1.5  # a key the file holds is its own
    assert hparams.from_dict(type(old), values).length_bucket_step == 1.5


def test_sets_derive_from_parents():
    big = transformer_hparams.transformer_big()
    assert (big.hidden_size, big.filter_size, big.num_heads) == (1024, 4096, 16)
    assert big.layer_prepostprocess_dropout == 0.3
    assert big.num_hidden_layers == 6
    v1 = transformer_hparams.transformer_base_v1()
    assert v1.norm_position == "post" and v1.learning_rate_warmup_steps == 4000


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ("batch_size=1000000000", "batch_size.*must be <= 4,194,304, got 1,000,000,000"),
        ("num_hidden_layers=100000", "num_hidden_layers.*must be <= 1,024"),
        ("hidden_size=1048576", "hidden_size.*must be <= 65,536"),
    ],
)
def test_sizes_past_any_real_setting_are_refused_at_once(overrides, message):
    """They used to grow memory for minutes while building or batching."""
    from t2t_lite import experiment

    with pytest.raises(ValueError, match=message):
        experiment.Experiment.resolve(
            "transformer", "test_identity_small", "transformer_tiny", overrides
        )
    with pytest.raises(ValueError, match="num_rec_steps.*must be <= 1,024"):
        experiment.Experiment.resolve(
            "universal_transformer", "test_identity_small", "universal_transformer_tiny",
            "num_rec_steps=5000",
        )  # fmt: skip
