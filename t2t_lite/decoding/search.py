"""Greedy, temperature/top-k sampling and beam search over a cached step function.

Every search sees only `step_fn(ids [N], index, cache) -> (logits [N, V],
cache)`, where ids are the decoder inputs at position `index` (PAD, 0, at
position 0) and every cache entry is batch-major; caches that grow along
time (`attention.GrowingKVCache`) get loop shape invariants. Searches run `max_length`
positions at most, stop early when every row is finished, and return fixed
shapes: ids [B, T] (or [B, K, T]) with PAD after EOS, and scores.
"""

from collections.abc import Callable

import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.layers import attention

# Large and finite, so arithmetic on dead beams never makes NaN under fp16.
NEG = -1e9

StepFn = Callable[[tf.Tensor, tf.Tensor, dict], tuple[tf.Tensor, dict]]


def _write_column(buffer: tf.Tensor, column: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
    """buffer [..., T] with `column` [...] written at position index."""
    slot = tf.one_hot(index, tf.shape(buffer)[-1], dtype=buffer.dtype)  # [T]
    return buffer * (1 - slot) + column[..., tf.newaxis] * slot


def _choose(
    logits: tf.Tensor, temperature: float, top_k: int, seed: tf.Tensor | None, index
) -> tf.Tensor:
    """Next ids [B] from logits [B, V]: argmax at temperature 0, else a seeded sample."""
    if temperature == 0.0:
        return tf.argmax(logits, axis=-1, output_type=tf.int32)
    scaled = logits / temperature
    if top_k > 0:
        kth = exact_top_k(scaled, top_k)[0][:, -1:]  # [B, 1]
        scaled = tf.where(scaled < kth, NEG, scaled)
    step_seed = tf.stack([seed[0], seed[1] + tf.cast(index, seed.dtype)])
    sample = tf.random.stateless_categorical(scaled, 1, seed=step_seed, dtype=tf.int32)
    return sample[:, 0]


def sample(
    step_fn: StepFn,
    cache: dict,
    batch_size: tf.Tensor,
    max_length: tf.Tensor,
    temperature: float = 0.0,
    top_k: int = 0,
    seed: tuple[int, int] = (0, 0),
) -> tuple[tf.Tensor, tf.Tensor]:
    """Greedy (temperature 0) or sampled decoding -> (ids [B, T], log-prob scores [B]).

    Scores are the summed log-probabilities (under the unscaled model) of the
    chosen ids up to and including EOS.
    """
    seed_tensor = tf.constant(seed, tf.int64)

    def body(index, ids, previous, scores, finished, cache):
        logits, cache = step_fn(previous, index, cache)
        chosen = _choose(logits, temperature, top_k, seed_tensor, index)
        chosen = tf.where(finished, sequences.PAD_ID, chosen)
        log_probs = tf.nn.log_softmax(logits)  # [B, V]
        gained = tf.gather(log_probs, chosen, batch_dims=1)  # [B]
        scores += tf.where(finished, 0.0, gained)
        ids = _write_column(ids, chosen, index)
        finished = tf.logical_or(finished, tf.equal(chosen, sequences.EOS_ID))
        return index + 1, ids, chosen, scores, finished, cache

    def cond(index, ids, previous, scores, finished, cache):
        return tf.logical_and(index < max_length, tf.logical_not(tf.reduce_all(finished)))

    initial = (
        tf.constant(0),
        tf.zeros([batch_size, max_length], tf.int32),
        tf.fill([batch_size], sequences.PAD_ID),
        tf.zeros([batch_size]),
        tf.zeros([batch_size], tf.bool),
        cache,
    )
    _, ids, _, scores, _, _ = tf.while_loop(
        cond, body, initial, shape_invariants=attention.shape_invariants(initial)
    )
    return ids, scores


# The exact top-k of a wide row by chunks: wider rows than CHUNK * k * 4 only.
CHUNK = 32


def exact_top_k(x: tf.Tensor, k: int) -> tuple[tf.Tensor, tf.Tensor]:
    """tf.math.top_k(x [B, N], k) -> (values, indices) [B, k], the same ties included.

    TensorFlow's top-k costs about 4 ns per element on a CPU; this takes
    the max of every CHUNK consecutive elements (a vectorized reduction),
    the k chunks with the largest maxima, and the top k of their k * CHUNK
    elements, 4x faster on beam search's [B, K * V] candidates. Exact: an
    element outside those chunks has k chunk maxima ahead of it, each
    larger or equal and at a lower index, so it is not in the top k; the
    chunks are read in index order, so equal values keep the lower index.
    """
    n = x.shape[-1]
    if n is None or n < CHUNK * k * 4:
        return tf.math.top_k(x, k=k)
    rows = tf.shape(x)[0]
    padded = tf.pad(x, [[0, 0], [0, -n % CHUNK]], constant_values=float("-inf"))
    chunks = tf.reshape(padded, [rows, -1, CHUNK])  # [B, N / CHUNK, CHUNK]
    _, chosen = tf.math.top_k(tf.reduce_max(chunks, axis=-1), k=k)  # [B, k]
    chosen = tf.sort(chosen, axis=-1)
    candidates = tf.reshape(tf.gather(chunks, chosen, batch_dims=1), [rows, k * CHUNK])
    values, picked = tf.math.top_k(candidates, k=k)  # [B, k]
    indices = tf.gather(chosen, picked // CHUNK, batch_dims=1) * CHUNK + picked % CHUNK
    return values, indices


def length_penalty(length: tf.Tensor, alpha: float) -> tf.Tensor:
    """GNMT's ((5 + length) / 6) ** alpha."""
    return ((5.0 + tf.cast(length, tf.float32)) / 6.0) ** alpha


def tile_beams(tensor: tf.Tensor, beam_size: int) -> tf.Tensor:
    """[B, ...] -> [B * K, ...], each row repeated K times in a block."""
    return tf.repeat(tensor, beam_size, axis=0)


def _gather_beams(tensor: tf.Tensor, indices: tf.Tensor) -> tf.Tensor:
    """tensor [B, K, ...], indices [B, K'] -> [B, K', ...] taken per batch row."""
    return tf.gather(tensor, indices, batch_dims=1)


def _reorder(cache: dict, rows: tf.Tensor) -> dict:
    """The cache of the hypotheses at `rows` [B*K] of the tiled batch (static entries kept)."""
    return {
        key: value
        if key == sequences.STATIC_CACHE
        # Static shapes stay (a batch of one tiles to a known K rows).
        else tf.nest.map_structure(lambda t: tf.ensure_shape(tf.gather(t, rows), t.shape), value)
        for key, value in cache.items()
    }


def beam_search(
    step_fn: StepFn,
    cache: dict,
    batch_size: tf.Tensor,
    max_length: tf.Tensor,
    beam_size: int,
    alpha: float,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Beam search -> (ids [B, K, T], scores [B, K]), best first.

    Scores are log-probabilities divided by the length penalty of the
    hypothesis (EOS included). `cache` (a dict) is for B rows; it is tiled to
    B * K rows (each row's K hypotheses consecutive) once and gathered by beam
    index every step, except its sequences.STATIC_CACHE entry, the same for
    every hypothesis of a row: it stays at B rows, and the step function
    reads it once per group of K consecutive rows. A hypothesis that emits EOS is
    finished and never extended; the search stops early once no alive beam
    can beat the worst of the K finished ones. Beams still alive at
    max_length (no EOS) compete with finished ones on their penalized score.
    """
    k = beam_size
    # Static entries stay one per input row; the step reads them per group of K.
    cache = {
        key: value
        if key == sequences.STATIC_CACHE
        else tf.nest.map_structure(lambda t: tile_beams(t, k), value)
        for key, value in cache.items()
    }
    # Only beam 0 is alive at first, so the K beams do not start as copies.
    initial_log_probs = tf.tile(tf.constant([[0.0] + [NEG] * (k - 1)]), [batch_size, 1])

    def body(index, alive_ids, alive_log_probs, finished_ids, finished_scores, finished, cache):
        previous = tf.where(
            index > 0,
            tf.gather(alive_ids, tf.maximum(index - 1, 0), axis=2),
            sequences.PAD_ID,
        )  # [B, K]
        logits, cache = step_fn(tf.reshape(previous, [-1]), index, cache)
        vocab = logits.shape[-1] or tf.shape(logits)[-1]  # static when known (`exact_top_k`)
        log_probs = tf.nn.log_softmax(logits)  # [B*K, V]
        log_probs = tf.reshape(log_probs, [batch_size, k, vocab])  # [B, K, V]
        candidates = alive_log_probs[..., tf.newaxis] + log_probs  # [B, K, V]
        flat = tf.reshape(candidates, [batch_size, k * vocab])  # [B, K*V]
        # 2K candidates: even if K of them end in EOS, K stay alive.
        top_scores, top_indices = exact_top_k(flat, 2 * k)  # [B, 2K]
        top_beams, top_tokens = top_indices // vocab, top_indices % vocab
        top_ids = _write_column(_gather_beams(alive_ids, top_beams), top_tokens, index)
        ends = tf.equal(top_tokens, sequences.EOS_ID)  # [B, 2K]

        # Alive: the best K candidates that did not end.
        alive_candidates = tf.where(ends, NEG, top_scores)
        alive_scores, alive_pick = tf.math.top_k(alive_candidates, k=k)  # [B, K]
        alive_ids = _gather_beams(top_ids, alive_pick)
        flat_pick = tf.reshape(
            _gather_beams(top_beams, alive_pick) + k * tf.range(batch_size)[:, tf.newaxis], [-1]
        )  # [B*K] rows of the tiled cache
        cache = _reorder(cache, flat_pick)

        # Finished: the best K among those already finished and the new ends.
        penalized = top_scores / length_penalty(index + 1, alpha)
        new_finished_scores = tf.where(ends, penalized, NEG)
        pool_scores = tf.concat([finished_scores, new_finished_scores], axis=1)  # [B, 3K]
        pool_ids = tf.concat([finished_ids, top_ids], axis=1)  # [B, 3K, T]
        pool_flags = tf.concat([finished, ends], axis=1)
        finished_scores, pick = tf.math.top_k(pool_scores, k=k)
        finished_ids = _gather_beams(pool_ids, pick)
        finished = _gather_beams(pool_flags, pick)
        return index + 1, alive_ids, alive_scores, finished_ids, finished_scores, finished, cache

    def cond(index, alive_ids, alive_log_probs, finished_ids, finished_scores, finished, cache):
        # Log-probs only fall, so the best an alive beam can still score is
        # its current log-prob under the largest penalty (at max_length).
        best_alive = alive_log_probs[:, 0] / length_penalty(max_length, alpha)
        worst_finished = tf.where(
            tf.reduce_all(finished, axis=1), tf.reduce_min(finished_scores, axis=1), NEG
        )
        done = tf.reduce_all(worst_finished > best_alive)
        return tf.logical_and(index < max_length, tf.logical_not(done))

    zeros_ids = tf.zeros([batch_size, k, max_length], tf.int32)
    initial = (
        tf.constant(0),
        zeros_ids,
        initial_log_probs,
        zeros_ids,
        tf.fill([batch_size, k], NEG),
        tf.zeros([batch_size, k], tf.bool),
        cache,
    )
    _, alive_ids, alive_log_probs, finished_ids, finished_scores, _, _ = tf.while_loop(
        cond, body, initial, shape_invariants=attention.shape_invariants(initial)
    )
    # Beams still alive at max_length compete with the finished ones on
    # their penalized scores (an unlikely finished one must not win by default).
    alive_scores = alive_log_probs / length_penalty(max_length, alpha)
    pool_scores = tf.concat([finished_scores, alive_scores], axis=1)  # [B, 2K]
    scores, pick = tf.math.top_k(pool_scores, k=k)
    ids = _gather_beams(tf.concat([finished_ids, alive_ids], axis=1), pick)  # [B, K, T]
    return ids, scores
