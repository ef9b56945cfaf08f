"""Searches on scripted logits, with hand-derived answers."""

import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.decoding import search

EPS = 1e-9
PAD, EOS, A, B = 0, 1, 2, 3


def scripted(table):
    """A step function whose next-token distribution depends on the previous token only.

    table: {previous id: {id: probability}}; missing ids get EPS. The cache
    carries a counter so the test can see it threaded through (and gathered).
    """
    rows = np.full([4, 4], EPS)
    for previous, probs in table.items():
        for token, p in probs.items():
            rows[previous, token] = p
    logits_table = tf.constant(np.log(rows), tf.float32)

    def step_fn(ids, index, cache):
        return tf.gather(logits_table, ids), {"calls": cache["calls"] + 1}

    return step_fn


# Greedy takes A then EOS (0.6 * 0.4 = 0.24); "B EOS" is better (0.4 * 0.9 = 0.36).
TRAP = {PAD: {A: 0.6, B: 0.4}, A: {EOS: 0.4, A: 0.3, B: 0.3}, B: {EOS: 0.9, A: 0.05, B: 0.05}}


def cache_for(batch):
    return {"calls": tf.zeros([batch])}


def test_greedy_follows_the_argmax_and_pads_after_eos():
    ids, scores = search.sample(scripted(TRAP), cache_for(2), 2, 5)
    np.testing.assert_array_equal(ids.numpy(), [[A, EOS, PAD, PAD, PAD]] * 2)
    np.testing.assert_allclose(scores.numpy(), [math.log(0.24)] * 2, rtol=1e-5)


def test_beam_search_finds_the_better_hypothesis_greedy_misses():
    ids, scores = search.beam_search(scripted(TRAP), cache_for(1), 1, 5, beam_size=2, alpha=0.0)
    np.testing.assert_array_equal(
        ids.numpy()[0], [[B, EOS, PAD, PAD, PAD], [A, EOS, PAD, PAD, PAD]]
    )
    np.testing.assert_allclose(scores.numpy()[0], [math.log(0.36), math.log(0.24)], rtol=1e-5)


def test_beam_size_one_equals_greedy():
    table = {PAD: {A: 0.5, B: 0.3, EOS: 0.2}, A: {B: 0.7, EOS: 0.3}, B: {A: 0.45, EOS: 0.55}}
    greedy_ids, greedy_scores = search.sample(scripted(table), cache_for(3), 3, 6)
    beam_ids, beam_scores = search.beam_search(
        scripted(table), cache_for(3), 3, 6, beam_size=1, alpha=0.0
    )
    np.testing.assert_array_equal(beam_ids.numpy()[:, 0], greedy_ids.numpy())
    np.testing.assert_allclose(beam_scores.numpy()[:, 0], greedy_scores.numpy(), rtol=1e-5)


def test_length_penalty_orders_hypotheses():
    # "A EOS": p 0.6, length 2. "A B EOS": p 0.4, length 3.
    table = {PAD: {A: 1.0}, A: {EOS: 0.6, B: 0.4}, B: {EOS: 1.0}}
    ids, scores = search.beam_search(scripted(table), cache_for(1), 1, 6, beam_size=2, alpha=0.0)
    assert ids.numpy()[0, 0, :2].tolist() == [A, EOS]
    # alpha 5: log(0.6) / (7/6)^5 = -0.2364 < log(0.4) / (8/6)^5 = -0.2174.
    ids, scores = search.beam_search(scripted(table), cache_for(1), 1, 6, beam_size=2, alpha=5.0)
    assert ids.numpy()[0, 0, :3].tolist() == [A, B, EOS]
    np.testing.assert_allclose(scores.numpy()[0, 0], math.log(0.4) / (8 / 6) ** 5, rtol=1e-4)
    np.testing.assert_allclose(scores.numpy()[0, 1], math.log(0.6) / (7 / 6) ** 5, rtol=1e-4)


def test_a_finished_hypothesis_stays_finished():
    # EOS comes first with 0.5; the alive beams keep going but never beat it.
    table = {PAD: {EOS: 0.5, A: 0.5}, A: {A: 0.9, EOS: 0.1}}
    ids, scores = search.beam_search(scripted(table), cache_for(1), 1, 4, beam_size=2, alpha=0.0)
    best = ids.numpy()[0, 0]
    assert best.tolist() == [EOS, PAD, PAD, PAD]
    np.testing.assert_allclose(scores.numpy()[0, 0], math.log(0.5), rtol=1e-5)


def test_unfinished_beams_at_max_length_beat_unlikely_finished_ones():
    table = {PAD: {A: 0.9, B: 0.1}, A: {A: 0.9, B: 0.1}, B: {B: 0.9, A: 0.1}}
    ids, _ = search.beam_search(scripted(table), cache_for(1), 1, 3, beam_size=2, alpha=0.0)
    assert ids.numpy()[0, 0].tolist() == [A, A, A]


def test_sampling_is_seeded_and_top_k_restricts():
    table = {PAD: {A: 0.4, B: 0.35, EOS: 0.25}, A: {A: 0.5, B: 0.5}, B: {A: 0.5, B: 0.5}}
    step_fn = scripted(table)
    first, _ = search.sample(step_fn, cache_for(64), 64, 4, temperature=1.0, seed=(1, 2))
    again, _ = search.sample(step_fn, cache_for(64), 64, 4, temperature=1.0, seed=(1, 2))
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert len(set(first.numpy()[:, 0].tolist())) > 1  # it does sample
    top1, _ = search.sample(step_fn, cache_for(64), 64, 1, temperature=1.0, top_k=1, seed=(3, 4))
    assert set(top1.numpy()[:, 0].tolist()) == {A}


@pytest.mark.parametrize("beam_size", [1, 3])
def test_compiled_search_is_traced_once_for_the_same_shapes(beam_size):
    step_fn = scripted(TRAP)

    @tf.function
    def run(cache):
        return search.beam_search(step_fn, cache, 2, 5, beam_size=beam_size, alpha=0.6)

    eager_ids, _ = search.beam_search(step_fn, cache_for(2), 2, 5, beam_size, 0.6)
    for _ in range(2):
        ids, _ = run(cache_for(2))
    np.testing.assert_array_equal(ids.numpy(), eager_ids.numpy())
    assert run.experimental_get_tracing_count() == 1


def prefix_model(vocab_size: int, max_length: int, seed: int):
    """A step function whose logits depend on the whole prefix, which it reads
    from its cache: the cache holds the decoder inputs so far [N, T] (written
    at `index`) and, as a static entry, a bias per input row [N, V].
    Returns (step_fn, initial cache for a batch of rows)."""
    rng = np.random.default_rng(seed)
    tables = tf.constant(rng.normal(size=[max_length, vocab_size, 8]), tf.float32)  # [T, V, F]
    projection = tf.constant(rng.normal(size=[8, vocab_size]) * 2.0, tf.float32)  # [F, V]

    def step_fn(ids, index, cache):
        slot = tf.one_hot(index, max_length, dtype=tf.int32)  # [T]
        prefix = cache["prefix"] * (1 - slot) + ids[:, tf.newaxis] * slot  # [N, T]
        seen = tf.cast(tf.range(max_length) <= index, tf.float32)  # [T]
        per_position = tf.einsum("ntv,tvf->ntf", tf.one_hot(prefix, vocab_size), tables)
        features = tf.einsum("ntf,t->nf", per_position, seen)  # [N, F]
        bias = cache[sequences.STATIC_CACHE]["bias"]  # [B, V], one per input row
        hypotheses = tf.shape(ids)[0] // tf.shape(bias)[0]  # consecutive rows per input
        logits = tf.tanh(features) @ projection + tf.repeat(bias, hypotheses, axis=0)
        return logits, {**cache, "prefix": prefix}

    def initial_cache(batch_size: int) -> dict:
        bias = tf.constant(rng.normal(size=[batch_size, vocab_size]), tf.float32)
        return {
            "prefix": tf.zeros([batch_size, max_length], tf.int32),
            sequences.STATIC_CACHE: {"bias": bias},
        }

    return step_fn, initial_cache


def rescore(step_fn, cache: dict, row: int, ids: np.ndarray, alpha: float) -> float:
    """A hypothesis' score recomputed from its own ids, one row, no search."""
    cache = tf.nest.map_structure(lambda t: t[row : row + 1], cache)
    previous, total, length = PAD, 0.0, len(ids)
    for index, token in enumerate(ids):
        logits, cache = step_fn(tf.constant([previous]), tf.constant(index), cache)
        total += float(tf.nn.log_softmax(logits)[0, token])
        previous = int(token)
        if token == EOS:
            length = index + 1
            break
    return total / float(search.length_penalty(length, alpha))


@pytest.mark.parametrize("batch_size", [1, 3])
def test_beam_search_reorders_the_cache_with_its_beams(batch_size, monkeypatch):
    """Every returned hypothesis scores what its own ids score: the logits that
    built it came from its own prefix. A cache left in place (or gathered by
    the wrong beam) feeds a hypothesis another one's prefix and fails this."""
    vocab_size, max_length, alpha = 6, 6, 0.6
    step_fn, initial_cache = prefix_model(vocab_size, max_length, seed=batch_size)
    cache = initial_cache(batch_size)

    def mismatches() -> int:
        ids, scores = search.beam_search(step_fn, cache, batch_size, max_length, 3, alpha)
        wrong = 0
        for row in range(batch_size):
            for k in range(3):
                expected = rescore(step_fn, cache, row, ids.numpy()[row, k], alpha)
                wrong += not math.isclose(float(scores[row, k]), expected, abs_tol=1e-4)
        return wrong

    assert mismatches() == 0
    monkeypatch.setattr(search, "_reorder", lambda cache, rows: cache)
    assert mismatches() > 0


@pytest.mark.parametrize("width", [1024, 1000, 3001])
def test_exact_top_k_equals_tf_top_k_ties_included(width):
    rng = np.random.default_rng(width)
    rows = [
        rng.normal(size=width),  # distinct values
        np.round(rng.normal(size=width)),  # many ties: the lower index must come first
        np.full(width, -np.inf),  # all equal (-inf): indices 0..k-1, none from the padding
        np.where(rng.random(width) < 0.99, -np.inf, rng.normal(size=width)),  # few finite
        np.zeros(width),
    ]
    x = tf.constant(np.stack(rows), tf.float32)
    values, indices = search.exact_top_k(x, 8)
    expected = tf.math.top_k(x, k=8)
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    assert indices.numpy().max() < width


def test_exact_top_k_keeps_narrow_rows_on_tf_top_k(monkeypatch):
    calls = []
    monkeypatch.setattr(
        search.tf.math, "top_k", lambda x, k: calls.append(x.shape) or tf.nn.top_k(x, k=k)
    )
    search.exact_top_k(tf.zeros([2, 100]), 8)  # narrower than CHUNK * k * 4
    assert calls == [tf.TensorShape([2, 100])]


def test_beam_search_over_a_wide_vocabulary_equals_plain_top_k(monkeypatch):
    """A 600-symbol vocabulary takes the chunked top-k; the hypotheses and scores
    are those of tf.math.top_k over every candidate."""
    vocab, k = 600, 4
    table = tf.constant(np.random.default_rng(3).normal(size=[vocab, vocab]) * 3, tf.float32)

    def step_fn(ids, index, cache):
        return tf.gather(table, ids), cache

    def run():
        return search.beam_search(step_fn, cache_for(3), 3, 6, k, 0.6)

    ids, scores = run()
    monkeypatch.setattr(search, "exact_top_k", lambda x, n: tf.math.top_k(x, k=n))
    plain_ids, plain_scores = run()
    np.testing.assert_array_equal(ids.numpy(), plain_ids.numpy())
    np.testing.assert_array_equal(scores.numpy(), plain_scores.numpy())
