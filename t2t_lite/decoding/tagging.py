"""Greedy search for an encoder-only tagger (models/encoder_only.py): one
batched forward pass, then the constraint's walk over its logits.

A tagger's step logits do not depend on what it chose before, so the
generic search's loop of cached model steps (decoder.py) is nothing but a
loop over columns of logits computed once. Here that is said directly:

1. `model.tag_logits` runs the encoder once per batch and multiplies only
   the softmax columns the constraint can ever allow (`Constraint.narrowed`:
   a label vocabulary's few hundred of its thousands of symbols);
2. a loop over positions applies the constraint's mask and takes the
   argmax, as the generic greedy search does (EOS only past a row's EOS;
   a row is finished at its EOS; scores are the log-probabilities of the
   masked distribution), on the narrowed columns, and maps the choices back
   to vocabulary ids.

The walk is traced once (its signature serves every batch shape); the
encoder's pass runs eagerly until a call holds enough input symbols to
repay its trace (TRACE_FROM_SYMBOLS), and batches are padded to their own
longest row. Neither function is converted by AutoGraph: both are
written in TensorFlow's own loops and conditions, and the conversion was
most of their trace time.

The outputs are the generic greedy search's
(tests/test_tagging_search.py): the narrowed columns keep the vocabulary's
order, so ties break alike, and a column the constraint masks adds
exp(NEG) = 0 to the softmax.
"""

import numpy as np
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import decode_constraint
from t2t_lite.decoding import search

# From this many input symbols in one call, the encoder's pass is traced: on
# the round 6 recipe (a UT encoder, d = 256, 4 steps; one thread of an AMD
# EPYC) its trace, without AutoGraph, cost 0.9 s and saved 0.24 ms per input
# symbol against eager calls (0.19 ms against 0.43; docs/benchmarks.md,
# start-up): even at 4,000 symbols.
TRACE_FROM_SYMBOLS = 4_000


def applies(model, hp) -> bool:
    """Whether decode hparams `hp` on `model` are this search's: a tagger,
    greedy (no sampling, no beam), no minimum length."""
    return (
        getattr(model, "tags_inputs", False)
        and hp.beam_size == 1
        and hp.temperature == 0
        and hp.min_length == 0
    )


class TaggingSearch:
    """inputs [B, S] (EOS-terminated, PAD after) -> (ids [B, 1, T], scores [B, 1])."""

    def __init__(self, model, constraint: decode_constraint.Constraint | None):
        self.model = model
        narrowed = constraint.narrowed() if constraint is not None else None
        if narrowed is None:
            self.columns, self.constraint = None, constraint
        else:
            columns, self.constraint = narrowed
            self.columns = tf.constant(columns, tf.int32)  # [L] vocabulary ids
        ids = tf.TensorSpec([None, None], tf.int32)
        # One trace each for every batch shape: the walk's is cheap; the
        # encoder's costs most of a second, so it runs eagerly until a call
        # is long enough to repay it (`trace`).
        self.walk = tf.function(
            self._walk,
            input_signature=[tf.TensorSpec([None, None, None], tf.float32), ids],
            autograph=False,
        )
        self.traced_logits = tf.function(self._logits, input_signature=[ids], autograph=False)

    def _logits(self, inputs: tf.Tensor) -> tf.Tensor:
        return self.model.tag_logits(inputs, self.columns)  # [B, S, L]

    def _walk(self, logits: tf.Tensor, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """logits [B, S, L], inputs [B, S] -> (narrowed ids [B, T], scores [B]):
        the generic greedy search (search.sample) over steps that read a column."""
        # As the tagger's decode_step: its own logits up to the EOS position
        # (trained to put EOS there), only EOS past it.
        lengths = sequences.symbol_lengths(inputs) + 1  # [B]
        is_eos = tf.range(tf.shape(logits)[-1]) == sequences.EOS_ID  # [L]: EOS keeps its id
        eos_only = tf.where(is_eos, 0.0, search.NEG)[tf.newaxis]  # [1, L]
        constraint = self.constraint
        cache = {} if constraint is None else {"state": constraint.initial_state(inputs, 0)}

        def step_fn(previous, index, cache):
            column = tf.minimum(index, tf.shape(logits)[1] - 1)
            step = tf.gather(logits, column, axis=1)  # [B, L]
            step = tf.where((index >= lengths)[:, tf.newaxis], eos_only, step)
            if constraint is None:
                return step, cache
            step, state = constraint.step(previous, step, cache["state"], search.NEG)
            return step, {"state": state}

        # Every row ends by its EOS one position past its own at the latest.
        return search.sample(step_fn, cache, tf.shape(inputs)[0], tf.shape(inputs)[1] + 1)

    def __call__(self, inputs: np.ndarray, trace: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """`trace`: the encoder's pass as a traced function (faster per batch
        once its trace, seconds, is paid)."""
        inputs = tf.constant(inputs, tf.int32)
        logits = self.traced_logits(inputs) if trace else self._logits(inputs)
        ids, scores = self.walk(logits, inputs)
        if self.columns is not None:
            ids = tf.gather(self.columns, ids)  # [B, T] vocabulary ids (PAD, EOS kept)
        return ids.numpy()[:, np.newaxis], scores.numpy()[:, np.newaxis]
