"""Label-smoothed cross-entropy and accuracy counts over non-pad targets."""

import math

import tensorflow as tf

from t2t_lite.layers import masks


def smoothed_cross_entropy(
    logits: tf.Tensor, targets: tf.Tensor, label_smoothing: float
) -> tuple[tf.Tensor, tf.Tensor]:
    """Sum of per-token losses over non-pad targets, and the non-pad count.

    logits [B, T, V] (cast to float32), targets [B, T]. The smoothed target
    puts 1 - label_smoothing on the label and spreads the rest evenly over the
    other V - 1 ids. The entropy of that target is subtracted, so a perfect
    prediction scores 0 (as tensor2tensor does).
    """
    logits = tf.cast(logits, tf.float32)
    vocab_size = logits.shape[-1]
    confidence = 1.0 - label_smoothing
    low = label_smoothing / (vocab_size - 1)
    soft = tf.one_hot(targets, vocab_size, on_value=confidence, off_value=low)  # [B, T, V]
    xent = tf.nn.softmax_cross_entropy_with_logits(labels=soft, logits=logits)  # [B, T]
    entropy = -confidence * math.log(confidence)
    if low > 0:
        entropy -= (vocab_size - 1) * low * math.log(low)
    weights = masks.padding_mask(targets)
    return tf.reduce_sum((xent - entropy) * weights), tf.reduce_sum(weights)


def accuracy_counts(logits: tf.Tensor, targets: tf.Tensor) -> dict[str, tf.Tensor]:
    """Correct/total tokens and sequences (teacher forced) as float32 sums.

    A sequence is correct when every non-pad target is the argmax; all-pad
    rows are not counted.
    """
    weights = masks.padding_mask(targets)
    correct = tf.cast(
        tf.equal(tf.argmax(logits, -1, output_type=targets.dtype), targets), tf.float32
    )
    wrong_per_row = tf.reduce_sum((1.0 - correct) * weights, axis=1)  # [B]
    real_rows = tf.cast(tf.reduce_sum(weights, axis=1) > 0, tf.float32)  # [B]
    return {
        "correct_tokens": tf.reduce_sum(correct * weights),
        "tokens": tf.reduce_sum(weights),
        "correct_sequences": tf.reduce_sum(tf.cast(wrong_per_row == 0, tf.float32) * real_rows),
        "sequences": tf.reduce_sum(real_rows),
    }
