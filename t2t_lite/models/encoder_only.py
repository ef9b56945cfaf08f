"""Encoder-only taggers: one output per input position (tensor2tensor's
`transformer_encoder`; `universal_transformer_encoder` is its UT).

For problems whose target is aligned with the source, symbol for symbol
(the target's i-th symbol labels the input's i-th, EOS under EOS): part of
speech, or a tree as one label per word (`parsing_from_files_labels`). The
encoder reads the whole sentence in both directions and the shared softmax
reads each of its positions; there is no decoder, so nothing is generated
from the labels before it and a label can never drift off its word.

Decoding keeps the model API (models/transformer.py), so greedy, beam
search and the tree constraint run unchanged: `init_cache` computes every
position's logits once and `decode_step` reads position `index` (EOS only
past the row's length). Without a dependency between steps, greedy and beam
search find the same best sequence; a constraint (one label per word, a
tree's labels) is what makes beam search worth its cost.
"""

import keras
import tensorflow as tf
from keras import ops

from t2t_lite import registry, sequences
from t2t_lite.layers import universal
from t2t_lite.models import input_labels, transformer, universal_transformer

NEG = -1e9  # decoding.search.NEG: a logit no search picks


def aligned(logits, length):
    """Logits of the encoder's S positions [B, S, V] -> [B, T, V] for T
    targets: the first T, or all S and zeros after them (a target longer
    than its input has nothing to read there)."""
    logits = logits[:, :length]
    source = ops.shape(logits)[1]
    if isinstance(length, int) and isinstance(source, int):  # static (JAX, PyTorch)
        missing = max(length - source, 0)
    else:  # TensorFlow's dynamic lengths
        missing = ops.maximum(length - source, 0)
    return ops.pad(logits, [[0, 0], [0, missing], [0, 0]])


class EncoderOnly:
    """What both taggers share; placed before the model class in the MRO."""

    tags_inputs = True  # for problems with aligned_targets only (experiment.py)

    def __init__(self, hparams, vocab_size: int, input_encoding: str = "tokens", **kwargs):
        if input_encoding != "tokens":
            raise ValueError(
                f"model {self.model_name!r} tags a token sequence, one output per input "
                f"position; the problem's inputs are encoded as {input_encoding!r}"
            )
        super().__init__(hparams, vocab_size, input_encoding, **kwargs)

    def make_stacks(self, config) -> tuple[keras.layers.Layer, None]:
        """The encoder alone: the decoder the family would build is dropped
        before it is built, so it holds no variables."""
        encoder, _ = super().make_stacks(config)
        return encoder, None

    def decode(self, targets, encoded, encoder_bias, training: bool = False, position_start=None):
        """Teacher forcing reads no target: each target position gets the
        logits of its input position. targets [B, T] -> float32 [B, T, V]."""
        del encoder_bias, training, position_start
        return aligned(self.softmax.logits(encoded), ops.shape(targets)[1])

    def decode_with_stats(
        self, targets, encoded, encoder_bias, training=False, position_start=None, jitter=None
    ):
        """As the UT's (the inspection and the evaluation call it): the tagger's
        logits, and no decoder to ponder (None)."""
        del jitter
        return self.decode(targets, encoded, encoder_bias, training, position_start), None

    def encoded_and_aux(self, inputs, training: bool, position_start) -> tuple:
        """(encoded [B, S, C], bias [B, 1, 1, S], auxiliary outputs)."""
        encoded, bias = self.encode(inputs, training, position_start)
        return encoded, bias, {}

    def logits_and_aux(self, features, training=False) -> tuple:
        encoder_start, _ = self.position_policy.starts(features, training)
        encoded, bias, aux = self.encoded_and_aux(features["inputs"], training, encoder_start)
        logits = self.decode(features["targets"], encoded, bias)
        return logits, input_labels.merged(aux, input_labels.terms(self, features, encoded))

    def tag_logits(self, inputs, columns=None):
        """The search's one forward pass (decoding/tagging.py): inputs [B, S]
        -> float32 logits [B, S, V] of every position, or [B, S, len(columns)]
        of only the vocabulary ids `columns` (what a constraint can ever
        allow: a label vocabulary's 701 of 6,000 symbols), whose product with
        the softmax matrix is all the cost saved."""
        encoded, _ = self.encode(inputs)  # [B, S, C]
        kernel = self.softmax.softmax_kernel()  # [C, V]
        if columns is not None:
            kernel = ops.take(kernel, columns, axis=1)  # [C, len(columns)]
        return self.softmax.logits(encoded, kernel)

    def init_cache(self, encoded: tf.Tensor, encoder_bias: tf.Tensor, max_length) -> dict:
        """Every position's logits [B, S, V] and the rows' lengths [B], both
        static (one row per input under beam search)."""
        del max_length  # nothing grows
        static = {
            "encoder_bias": encoder_bias,
            "logits": self.softmax.logits(encoded),
            "lengths": universal.source_lengths(encoder_bias),
        }
        return {sequences.STATIC_CACHE: static}

    def decode_step(self, ids: tf.Tensor, index: tf.Tensor, cache: dict) -> tuple[tf.Tensor, dict]:
        """The logits [N, V] of input position `index` for the N = B * K rows
        (K consecutive hypotheses per input row); only EOS at or past a
        row's padding. The ids chosen so far change nothing."""
        static = cache[sequences.STATIC_CACHE]
        logits = static["logits"]  # [B, S, V]
        group = tf.shape(ids)[0] // tf.shape(logits)[0]
        column = tf.minimum(index, tf.shape(logits)[1] - 1)
        step = tf.gather(logits, column, axis=1)  # [B, V]
        past = (index >= static["lengths"])[:, tf.newaxis]  # [B, 1]
        eos_only = tf.where(tf.range(tf.shape(step)[-1]) == sequences.EOS_ID, 0.0, NEG)  # [V]
        step = tf.where(past, eos_only, step)
        return tf.repeat(step, group, axis=0), cache  # [B * K, V]


@registry.MODELS.register("transformer_encoder")
@keras.saving.register_keras_serializable(package="t2t_lite")
class TransformerEncoder(EncoderOnly, transformer.Transformer):
    """The Transformer's encoder as a tagger (module docstring); its
    hparams: num_encoder_layers (or num_hidden_layers) blocks."""

    model_name = "transformer_encoder"


@registry.MODELS.register("universal_transformer_encoder")
@keras.saving.register_keras_serializable(package="t2t_lite")
class UniversalTransformerEncoder(EncoderOnly, universal_transformer.UniversalTransformer):
    """The UT's encoder (fixed steps or ACT) as a tagger; under ACT its
    ponder cost is the encoder's alone."""

    model_name = "universal_transformer_encoder"

    def encoded_and_aux(self, inputs, training: bool, position_start) -> tuple:
        jitter = None
        if training and self.length_depth is not None:
            jitter = self.length_depth.jitter(ops.shape(inputs)[0], self.seed_generator)
        encoded, bias, stats = self.encode_with_stats(inputs, training, position_start, jitter)
        if stats is None:
            return encoded, bias, {}
        sides = [("encoder", stats, self.encoder_nonpadding(inputs))]
        return encoded, bias, self.ponder_aux(sides)
