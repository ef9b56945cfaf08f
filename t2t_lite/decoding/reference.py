"""Uncached decoding: the teacher-forced decoder re-run over the whole output every step.

tensor2tensor's only way to decode its Universal Transformer. Here it is the
benchmark's reference and a test oracle for the cached `decode_step`.
"""

import keras
import tensorflow as tf

from t2t_lite import sequences


def uncached_step_fn(model: keras.Model, max_length: tf.Tensor):
    """A search step function with the cache API that runs `model.decode` in full.

    Its cache holds the encoder output and an output buffer [B, T]; step
    `index` writes the previous id at index - 1 and a placeholder (EOS) at
    index, so ACT treats the position as real, decodes all T positions
    (causality makes later ones irrelevant) and returns the logits at index.
    A chosen PAD id is padding to the teacher-forced pass (halted under ACT),
    unlike the cached step, so the two agree on outputs without PAD.
    """

    def init_cache(encoded: tf.Tensor, encoder_bias: tf.Tensor) -> dict:
        buffer = tf.zeros([tf.shape(encoded)[0], max_length], tf.int32)  # [B, T]
        return {"encoded": encoded, "encoder_bias": encoder_bias, "targets": buffer}

    def step_fn(ids: tf.Tensor, index: tf.Tensor, cache: dict) -> tuple[tf.Tensor, dict]:
        length = tf.shape(cache["targets"])[1]
        previous = tf.one_hot(index - 1, length, dtype=tf.int32)  # [T], zero at index 0
        current = tf.one_hot(index, length, dtype=tf.int32)  # [T]
        targets = cache["targets"] * (1 - previous) + ids[:, tf.newaxis] * previous  # [B, T]
        placeholder = targets * (1 - current) + sequences.EOS_ID * current  # [B, T]
        logits = model.decode(placeholder, cache["encoded"], cache["encoder_bias"])  # [B, T, V]
        return tf.gather(logits, index, axis=1), {**cache, "targets": targets}

    return init_cache, step_fn
