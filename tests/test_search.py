"""Searches on scripted logits, with hand-derived answers."""

import math

import numpy as np
import pytest
import tensorflow as tf

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
