"""Where each symbol sits: a model's position policy and explicit per-row positions.

`Policy` answers the models' questions (the first position of each stack
in training and at evaluation, the encoder's and decoder's positions,
coupled or not); the models only turn positions into signals.

A position "start" is an int offset (consecutive positions from it),
a drawn table [B, K] (`draw_positions`, randomized positions in training),
or a `Spread` (evaluation's positions spread like training's draws); `place`
maps position indices (coupled ones included) through any of them.
"""

import dataclasses
import functools
from typing import Any

import keras
from keras import ops

from t2t_lite.layers import masks, universal


def draw_positions(batch_size, count, limit: int, seed):
    """Randomized positions: per row, a sorted random subset of `count` distinct
    positions of [0, max(limit, count)) -> int32 [B, count]."""
    span = ops.maximum(limit, count)
    keys = keras.random.uniform((batch_size, span), seed=seed)  # [B, span]
    _, chosen = ops.top_k(keys, k=count)  # [B, count]: distinct, in random order
    return ops.sort(ops.cast(chosen, "int32"), axis=-1)


@dataclasses.dataclass(frozen=True)
class Spread:
    """Evaluation's positions for randomized training: index k of a row whose
    source has n positions (EOS included) at floor(k * limit / n), the mean
    of training's sorted draws, so evaluation reads distances like training's
    instead of the consecutive positions training almost never drew.
    Deterministic and per row, so cached decoding computes the same ones.
    lengths: int32 [B], each row's n."""

    lengths: object  # a tensor
    limit: int


def is_explicit(start) -> bool:
    """Whether a position start gives each row its own positions: a drawn
    table [B, K] or a Spread."""
    return isinstance(start, Spread) or (ops.is_tensor(start) and len(start.shape) == 2)


def place(start, index):
    """Position indices [B or 1, L] (0 the first) -> positions: start + index, or,
    with a drawn table [B, K], each index's drawn position, or with a Spread,
    floor(index * limit / n) per row -> [B, L]."""
    if isinstance(start, Spread):
        n = ops.maximum(start.lengths, 1)[:, None]  # [B, 1]
        return (index * start.limit) // n  # [B, L]: integer, exact
    if not is_explicit(start):
        return start + index
    index = ops.broadcast_to(index, (ops.shape(start)[0], ops.shape(index)[1]))  # [B, L]
    return ops.take_along_axis(start, index, axis=1)  # [B, L]


@dataclasses.dataclass(frozen=True)
class Policy:
    """Which position each encoder and decoder symbol is at: the model asks,
    the position hparams decide (transformer_hparams: position_start_index,
    position_start_max, position_eval, position_coupling,
    position_separator_id).

    input_encoding: the problem's (sequences.INPUT_ENCODINGS); coupling and
    spread positions need a token source. offset_shape: one stack's offsets
    under random_per_step, () for one per stack, (max_steps,) for the UT's
    one per recurrence step. seed: the model's position seed generator
    (None where the hparams draw nothing).
    """

    hparams: Any
    input_encoding: str
    offset_shape: tuple[int, ...] = ()
    seed: keras.random.SeedGenerator | None = None

    def __post_init__(self):
        hp = self.hparams
        if hp.position_coupling != "none" and self.input_encoding != "tokens":
            raise ValueError(
                f"position_coupling={hp.position_coupling!r} ties target positions to "
                f"source positions and needs a token source, not "
                f"input_encoding={self.input_encoding!r}"
            )
        if hp.position_eval == "spread" and self.input_encoding != "tokens":
            raise ValueError(
                "position_eval=spread spreads positions over the source's length and needs "
                f"a token source, not input_encoding={self.input_encoding!r}"
            )

    def starts(self, features, training: bool) -> tuple:
        """The first position's index for the encoder and for the decoder.

        0 at evaluation and with position_start_index "none". In training,
        "random" draws one offset per batch in [0, position_start_max),
        shared by encoder and decoder, so a target keeps its relative
        position to the source; "random_per_step" is tensor2tensor's UT
        offsets: each stack its own (the UT: one per recurrence step,
        `offset_shape`), so positions carry nothing across the stacks;
        "randomized" draws each row's positions (`draw_positions`: a sorted
        subset of [0, position_start_max) as long as the batch's longer side),
        one [B, K] table for encoder and decoder, which `place` maps every
        position index through (coupled ones included).
        At evaluation 0, or None under position_eval="spread": each stack
        then spreads them over the source's length (`evaluation_start`).
        """
        hp = self.hparams
        if not training and hp.position_eval == "spread":
            return None, None
        if not training or hp.position_start_index == "none":
            return 0, 0
        has_encoder = self.input_encoding != "none"
        source = features["inputs"] if has_encoder else features["targets"]
        limit = hp.position_start_max or ops.shape(source)[1]
        if hp.position_start_index == "randomized":
            count = ops.maximum(ops.shape(source)[1], ops.shape(features["targets"])[1])
            table = draw_positions(ops.shape(source)[0], count, limit, self.seed)
            return table, table

        def draw(shape):
            return keras.random.randint(shape, 0, limit, dtype="int32", seed=self.seed)

        if hp.position_start_index == "random":
            start = draw(())
            return start, start
        return draw(self.offset_shape), draw(self.offset_shape)

    def evaluation_start(self, lengths) -> Spread | int:
        """Evaluation's position start: 0 (consecutive positions), or with
        position_eval="spread" a Spread over lengths() [B], each row's source
        positions (EOS included)."""
        if self.hparams.position_eval != "spread":
            return 0
        return Spread(lengths(), self.hparams.position_start_max)

    def encoder(self, inputs, start=None):
        """The encoder's positions for inputs [B, S] from `start`: start itself
        (consecutive positions) unless position_coupling="addition", then
        explicit positions [B, S] that restart at start after each separator:
        "3 1 + 4 5 EOS" -> start + [0, 1, 2, 0, 1, 2] (the separator and EOS
        one past their number's last digit). start None: evaluation's.
        """
        if start is None:  # evaluation's; a spread counts each row's tokens [B]
            start = self.evaluation_start(
                lambda: ops.cast(ops.sum(masks.padding_mask(inputs), 1), "int32")
            )
        length = ops.shape(inputs)[1]
        if self.hparams.position_coupling != "addition":
            if is_explicit(start):  # randomized or spread positions: [B, S]
                return place(start, ops.arange(length, dtype="int32")[None])
            return start
        index = ops.arange(length, dtype="int32")  # [S]
        # A separator at j restarts the count at j + 1 (it ends its own number).
        after = ops.where(ops.equal(inputs, self.hparams.position_separator_id), index + 1, 0)
        before = index[:, None] < index[None]  # [S, S]: j < i
        restart = ops.max(
            ops.where(before[None], after[:, :, None], 0), axis=1
        )  # [B, S(j), S(i)] -> [B, S]: the newest restart before each position
        return place(start, index[None] - restart)  # [B, S]

    def decoder(self, length, encoder_bias, start=None, rows=None, first=0):
        """The decoder's positions for targets first..first+length-1 from `start`:
        start + first itself (consecutive positions) without coupling; with
        position_coupling="reverse", explicit positions [B, length]: for a
        source of n symbols, target t < n at start + n - 1 - t (the source
        symbol it reverses) and the EOS target t = n at start + n (the
        source's EOS), so every target, EOS included, reads the source at its
        own position; t > n continue at start + t. n is read off the encoder
        bias [B', 1, 1, S] (its zero entries are the symbols and EOS). `rows`:
        the number of decoder rows when they are hypotheses, rows / B'
        consecutive ones per source (beam search). start None: evaluation's
        (`evaluation_start`).
        """
        # [B]: each row's source positions (EOS included), read off the bias at most once.
        lengths = functools.cache(lambda: universal.source_lengths(encoder_bias, rows))
        if start is None:
            start = self.evaluation_start(lengths)
        if self.hparams.position_coupling != "reverse":
            if is_explicit(start):  # randomized or spread positions: [B, length]
                return place(start, first + ops.arange(length, dtype="int32")[None])
            return start + first
        symbols = lengths() - 1  # [B] without EOS
        n = symbols[:, None]  # [B, 1]
        steps = first + ops.arange(length, dtype="int32")[None]  # [1, length]
        return place(start, ops.where(steps < n, n - 1 - steps, steps))  # [B, length]

    def per_row_in_decoding(self) -> bool:
        """Whether a cached decoding step's position differs per row ([B, 1]:
        coupled or spread positions) rather than being the step's index."""
        return self.hparams.position_coupling == "reverse" or self.hparams.position_eval == "spread"
