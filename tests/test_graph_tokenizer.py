"""In-graph tokenizers agree with the problems' Python text encoding."""

import tensorflow as tf

from t2t_lite.data import problem


def test_symbol_tokenizer_matches_encode_text_and_decode_text():
    prob = problem.get("algorithmic_addition_decimal20")
    tokenizer = prob.graph_tokenizer("")
    lines = ["3 1 + 4", "  9\t0 +  0 ", "", "7"]
    ids, known = tokenizer.tokenize(tf.constant(lines))
    assert known.numpy().tolist() == [True] * 4
    assert ids.to_list() == [prob.encode_text(line) for line in lines]
    text = tokenizer.detokenize(tf.ragged.constant([prob.encode_text(line) for line in lines]))
    assert [t.decode() for t in text.numpy()] == ["3 1 + 4", "9 0 + 0", "", "7"]


def test_symbol_tokenizer_flags_unknown_symbols_and_skips_reserved_ids():
    prob = problem.get("algorithmic_reverse_binary20")
    tokenizer = prob.graph_tokenizer("")
    _, known = tokenizer.tokenize(tf.constant(["1 0", "1 2", "x"]))
    assert known.numpy().tolist() == [True, False, False]
    # PAD (0), EOS (1) and ids past the vocabulary have no text.
    text = tokenizer.detokenize(tf.ragged.constant([[3, 0, 2, 1], [2, 9]]))
    assert [t.decode() for t in text.numpy()] == ["1 0", "0"]
