"""In-graph tokenizers agree with the problems' Python text encoding."""

import os
import subprocess
import sys

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


def test_eager_and_graph_cut_symbols_at_the_same_white_space():
    """Every character Python calls white space: t2t-decode's eager encoding and
    the export's graph tokenizer agree (the graph's WhitespaceTokenizer alone
    cut U+00A0 and U+2028 inside their UTF-8 bytes, and kept U+001C..U+001F)."""
    import pytest
    import tensorflow as tf

    from t2t_lite.data import problem as problem_lib

    prob = problem_lib.get("algorithmic_identity_decimal40")
    tokenizer = prob.graph_tokenizer("")
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    assert {"\u00a0", "\u2028", "\x1c"} <= set(spaces)
    for space in spaces:
        line = f"1{space}2 {space}3"
        ids, known = tokenizer.tokenize(tf.constant([line]))
        if bool(known[0]):
            assert prob.encode_text(line) == ids[0].numpy().tolist(), hex(ord(space))
        else:
            with pytest.raises(ValueError, match="unknown symbol"):
                prob.encode_text(line)


def test_a_decode_start_up_imports_neither_tensorflow_text_nor_tensorflow_datasets():
    """Their imports cost a second of every program's start-up (docs/benchmarks.md,
    start-up): the decoder, every registered problem and a word vocabulary's
    Python encoding load without them; a graph's first tokenize imports tf-text."""
    code = (
        "import sys\n"
        "from t2t_lite.decoding import runner\n"
        "from t2t_lite.data import graph_tokenizer, problem\n"
        "problem.get('algorithmic_reverse_binary20')\n"
        "words = graph_tokenizer.WordTokenizer(['<pad>', '<EOS>', '[UNK]', 'a', 'b'], '[UNK]')\n"
        "assert words.encode('a b c') == [3, 4, 2]\n"
        "print(*sorted({'tensorflow_text', 'tensorflow_datasets'} & set(sys.modules)))\n"
        "words.tokenize(graph_tokenizer.tf.constant(['a b']))\n"
        "print('tensorflow_text' in sys.modules)\n"
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.splitlines() == ["", "True"]
