import pytest

import t2t_lite.models  # registers the models and hparams sets
import t2t_lite.problems  # noqa: F401  (registers the problems)
from t2t_lite import registry


def test_builtin_names_follow_tensor2tensor():
    assert "transformer" in registry.MODELS.names()
    for name in ("transformer_base", "transformer_big", "transformer_tiny", "transformer_test"):
        assert name in registry.HPARAMS
    for task in ("identity", "reverse", "addition"):
        for base in ("binary", "decimal"):
            assert f"algorithmic_{task}_{base}40" in registry.PROBLEMS


def test_unknown_name_lists_known_ones():
    with pytest.raises(KeyError, match=r"unknown model 'transformr'; known models: .*transformer"):
        registry.MODELS.get("transformr")


def test_duplicate_name_is_an_error():
    reg = registry.Registry("thing")
    reg.register("a")(1)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(2)


def test_names_must_be_snake_case():
    with pytest.raises(ValueError, match="snake_case"):
        registry.Registry("thing").register("CamelCase")
