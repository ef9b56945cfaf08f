"""A tagger's greedy search (decoding/tagging.py): one forward pass over the
constraint's columns, then its walk, gives the generic search's ids and scores."""

import numpy as np
import pytest
import tensorflow as tf

import t2t_lite.models  # noqa: F401  (registers the models and hparams sets)
from t2t_lite import checkpoints, registry, sequences
from t2t_lite.decoding import decoder as decoder_lib
from t2t_lite.decoding import tagging
from t2t_lite.parsing import constraints

# Labels among words and shapes, so the narrowed columns are not one block.
TOKENS = [
    "<pad>", "<EOS>", "[UNK]", "+1/S/", "dog", "+0/NP/", "-1/S/", "cat", "+2/NP/", "=/",
    "ran", "=/NP", "-2/VP/", "+1/VP/", "=/S", "the", "+0/VP/", "-1/NP/", "a", "=/VP",
]  # fmt: skip
LABELS = [i for i, token in enumerate(TOKENS) if "/" in token]
# Rows of 7, 1 and 4 words: EOS after each, PAD after that.
SENTENCES = [[4, 7, 10, 15, 18, 4, 7], [10], [15, 4, 10, 7]]


def tagger(name: str, hparams_set: str):
    model = registry.MODELS.get(name)(registry.HPARAMS.get(hparams_set)(), len(TOKENS))
    checkpoints.build_model(model)
    return model


def generic(decoder, sentences):
    """The generic greedy search (the cached-step loop) on the same sentences."""
    results = []
    for sentence in sentences:
        ids, scores = decoder.search(tf.constant([sequences.with_eos(sentence)]))
        results.append((sequences.until_eos(ids.numpy()[0, 0]), float(scores.numpy()[0, 0])))
    return results


def test_narrowing_keeps_pad_eos_and_the_labels_in_vocabulary_order():
    columns, narrowed = constraints.LabelConstraint(TOKENS).narrowed()
    assert list(columns) == [sequences.PAD_ID, sequences.EOS_ID, *LABELS]
    assert narrowed.vocab_size == len(columns)
    assert (
        constraints.TreeConstraint(["<pad>", "<EOS>", "(S", ")S", "XX"], "keep").narrowed() is None
    )


UT = ("universal_transformer_encoder", "adaptive_universal_transformer_test")
TRANSFORMER = ("transformer_encoder", "transformer_test")


@pytest.mark.parametrize(
    ("name", "hparams_set", "constraint"),
    [
        (*UT, "shape"),  # the recipe's
        (*UT, "strict"),
        (*TRANSFORMER, None),
        # The other pairs: the fast tier's budget (docs/testing.md).
        pytest.param(*UT, None, marks=pytest.mark.slow),
        pytest.param(*TRANSFORMER, "shape", marks=pytest.mark.slow),
        pytest.param(*TRANSFORMER, "strict", marks=pytest.mark.slow),
    ],
)
def test_the_tagging_search_is_the_generic_greedy_search(name, hparams_set, constraint):
    model = tagger(name, hparams_set)
    made = (
        None if constraint is None else constraints.LabelConstraint(TOKENS, constraint == "strict")
    )
    hp = decoder_lib.DecodeHParams(beam_size=1, extra_length=3, max_input_length=16)
    decoder = decoder_lib.Decoder(model, hp, xla_compile=False, constraint=made)
    assert decoder.tagging is not None
    expected = generic(decoder, SENTENCES)
    got = decoder.decode_ids(SENTENCES)  # eager, batched by length
    assert [hypotheses[0][0] for hypotheses in got] == [ids for ids, _ in expected]
    np.testing.assert_allclose([h[0][1] for h in got], [s for _, s in expected], rtol=1e-5)
    if constraint is not None:  # one label per word, each a label
        for (ids, _), sentence in zip(expected, SENTENCES, strict=True):
            assert len(ids) == len(sentence) and set(ids) <= set(LABELS)
    # The traced encoder pass (long files) gives the same.
    batch = sequences.pad_batch([sequences.with_eos(s) for s in SENTENCES], 8)
    eager, traced = decoder.tagging(batch), decoder.tagging(batch, trace=True)
    np.testing.assert_array_equal(eager[0], traced[0])
    np.testing.assert_allclose(eager[1], traced[1], rtol=1e-5)


def test_only_a_taggers_plain_greedy_search_takes_the_tagging_path():
    model = tagger("transformer_encoder", "transformer_test")
    for settings, applies in [
        ({}, True),
        ({"beam_size": 4}, False),
        ({"temperature": 0.5}, False),
        ({"min_length": 2}, False),
    ]:
        hp = decoder_lib.DecodeHParams(**settings)
        assert tagging.applies(model, hp) is applies
        assert (decoder_lib.Decoder(model, hp).tagging is not None) is applies
    seq2seq = tagger("transformer", "transformer_test")
    assert not tagging.applies(seq2seq, decoder_lib.DecodeHParams())
