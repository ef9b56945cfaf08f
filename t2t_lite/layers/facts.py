"""The UT paper's bAbI input encoding: one encoder position per fact.

Inputs are facts, each ending with FACT_END_ID (the question is the last
fact), then EOS. Fact k with words w_1..w_n is embedded as
sum_j e(w_j) * f_j, where e is the shared word embedding and f_j [C] a
learned multiplicative positional mask for the word's place in its fact
(Dehghani et al. 2019, section 3.1; Sukhbaatar et al. 2015's position
encoding made learnable). Permuting the words of a fact changes its
embedding only through the f_j.
"""

import keras
from keras import ops

from t2t_lite import sequences
from t2t_lite.layers import einsum, nesting, serialization
from t2t_lite.layers import embedding as embedding_lib

# Words past this place in a fact share the last mask row (bAbI facts have
# at most a dozen words).
MAX_FACT_WORDS = 32


def fact_structure(ids):
    """ids [B, L] -> (membership [B, F, L] float32, word place [B, L] int32, nonpadding [B, F]).

    membership[b, k, t] is 1 when token t is a word of fact k; F is the
    batch's largest fact count (under JAX, whose compiled shapes cannot
    depend on values, L: the facts past a row's last are padding, which
    attention and the ponder statistics leave out, so the outputs at the
    real facts are the same). FACT_END, EOS and PAD belong to no fact.
    """
    is_end = ops.cast(ops.equal(ids, sequences.FACT_END_ID), "int32")  # [B, L]
    is_word = ops.cast(ids > sequences.FACT_END_ID, "float32")  # [B, L]
    fact_index = ops.cumsum(is_end, axis=1) - is_end  # [B, L] exclusive running count
    num_facts = ops.sum(is_end, axis=1)  # [B]
    if keras.backend.backend() == "jax":
        max_facts = ops.shape(ids)[1]
    else:
        max_facts = ops.max(num_facts)
    # EOS and PAD after a row's last fact count as fact number num_facts, past
    # the last slot of the row with the most: they are in no fact (is_word
    # clears them), so any slot will do, and the last is one every backend's
    # one_hot takes (TensorFlow and JAX make zeros of an index out of range,
    # PyTorch refuses it).
    fact_index = ops.minimum(fact_index, ops.maximum(max_facts - 1, 0))
    membership = ops.one_hot(fact_index, max_facts, axis=1)  # [B, F, L]
    membership = membership * is_word[:, None, :]
    # Words of the same fact before each token: an exclusive running count
    # per fact, read at the token's own fact.
    before = ops.cumsum(membership, axis=2) - membership  # [B, F, L]
    place = ops.cast(ops.sum(before * membership, axis=1), "int32")  # [B, L]
    facts = ops.arange(max_facts, dtype="int32")[None, :]  # [1, F]
    nonpadding = ops.cast(facts < num_facts[:, None], "float32")
    return membership, place, nonpadding  # [B, F, L], [B, L], [B, F]


@serialization.serializable
class FactEmbedding(keras.layers.Layer):
    """Token ids [B, L] -> fact embeddings [B, F, C] and their nonpadding [B, F]."""

    def __init__(self, word_embedding: embedding_lib.SharedEmbedding, **kwargs):
        super().__init__(**kwargs)
        self.word_embedding = word_embedding

    def build(self, input_shape=None):
        nesting.build_each(input_shape, self.word_embedding)  # the words' matrix it holds
        # Ones: at initialisation a fact is the plain sum of its words.
        self.position_mask = self.add_weight(
            name="position_mask",
            shape=(MAX_FACT_WORDS, self.word_embedding.hidden_size),
            initializer="ones",
        )

    def call(self, ids):
        membership, place, nonpadding = fact_structure(ids)
        words = self.word_embedding.embed(ids)  # [B, L, C]
        mask = ops.take(
            ops.cast(self.position_mask, words.dtype), ops.minimum(place, MAX_FACT_WORDS - 1), 0
        )  # [B, L, C]
        facts = einsum.einsum("bfl,blc->bfc", ops.cast(membership, words.dtype), words * mask)
        return facts, nonpadding  # [B, F, C], [B, F]
