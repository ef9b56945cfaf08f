"""Explicit per-row positions: training's randomized draws and evaluation's spread.

A model's position "start" is an int offset (consecutive positions from it),
a drawn table [B, K] (`draw_positions`, randomized positions in training),
or a `Spread` (evaluation's positions spread like training's draws); `place`
maps position indices (coupled ones included) through any of them.
"""

import dataclasses

import keras
import tensorflow as tf


def draw_positions(batch_size, count, limit: int, seed) -> tf.Tensor:
    """Randomized positions: per row, a sorted random subset of `count` distinct
    positions of [0, max(limit, count)) -> int32 [B, count]."""
    span = tf.maximum(limit, count)
    keys = keras.random.uniform(tf.stack([batch_size, span]), seed=seed)  # [B, span]
    _, chosen = tf.math.top_k(keys, k=count)  # [B, count]: distinct, in random order
    return tf.sort(chosen, axis=-1)


@dataclasses.dataclass(frozen=True)
class Spread:
    """Evaluation's positions for randomized training: index k of a row whose
    source has n positions (EOS included) at floor(k * limit / n), the mean
    of training's sorted draws, so evaluation reads distances like training's
    instead of the consecutive positions training almost never drew.
    Deterministic and per row, so cached decoding computes the same ones.
    lengths: int32 [B], each row's n."""

    lengths: tf.Tensor
    limit: int


def is_explicit(start) -> bool:
    """Whether a position start gives each row its own positions: a drawn
    table [B, K] or a Spread."""
    return isinstance(start, Spread) or (isinstance(start, tf.Tensor) and start.shape.rank == 2)


def place(start, index: tf.Tensor) -> tf.Tensor:
    """Position indices [B or 1, L] (0 the first) -> positions: start + index, or,
    with a drawn table [B, K], each index's drawn position, or with a Spread,
    floor(index * limit / n) per row -> [B, L]."""
    if isinstance(start, Spread):
        n = tf.maximum(start.lengths, 1)[:, tf.newaxis]  # [B, 1]
        return (index * start.limit) // n  # [B, L]: integer, exact
    if not is_explicit(start):
        return start + index
    index = tf.broadcast_to(index, [tf.shape(start)[0], tf.shape(index)[1]])  # [B, L]
    return tf.gather(start, index, batch_dims=1)  # [B, L]
