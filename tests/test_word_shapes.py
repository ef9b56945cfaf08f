"""Unknown words read as their shapes (parsing/word_shapes.py), in Python and in the graph."""

import pytest
import tensorflow as tf

from t2t_lite.data import graph_tokenizer, subword
from t2t_lite.parsing import word_shapes

# Hand-derived: digits first, then a hyphen, then the first suffix (of SUFFIXES'
# order) the word ends with and is two characters longer than.
CASES = [
    ("12.5", "[UNK-num]"),
    ("B-2", "[UNK-num]"),
    ("Barrington", "[UNK-Cap]"),
    ("Reading", "[UNK-Cap-ing]"),
    ("reopened", "[UNK-low-ed]"),
    ("co-founder", "[UNK-low-dash]"),
    ("Anglo-Saxon", "[UNK-Cap-dash]"),
    ("quickly", "[UNK-low-ly]"),
    ("nationality", "[UNK-low-ity]"),
    ("Rotterdam", "[UNK-Cap]"),
    ("bed", "[UNK-low]"),  # "ed", but only one character before it
    ("beds", "[UNK-low-s]"),
    ("Xs", "[UNK-Cap]"),
    ("$", "[UNK-other]"),
    ("élan", "[UNK-other]"),  # capitals and lower case are ASCII's
    ("'s", "[UNK-other]"),
    ("glass", "[UNK-low-s]"),
]


@pytest.mark.parametrize(("word", "expected"), CASES)
def test_a_word_reads_as_its_hand_derived_shape(word, expected):
    assert word_shapes.shape(word) == expected
    assert expected in word_shapes.tokens() and word_shapes.is_shape(expected)
    assert not word_shapes.is_shape(word)


def test_the_graph_gives_every_word_the_same_shape_as_python():
    words = [w for w, _ in CASES] + ["Mr.", "-LRB-", "ING", "rising", "mention", "x", "Cable"]
    graph = [s.decode() for s in word_shapes.shapes(tf.constant(words)).numpy()]
    assert graph == [word_shapes.shape(w) for w in words]
    assert len(set(word_shapes.tokens())) == len(word_shapes.tokens()) == 49


def test_a_word_vocabulary_with_shapes_reads_unknown_words_as_them_in_both_paths():
    shapes = word_shapes.tokens()
    tokens = [*subword.RESERVED, "(S", *shapes, "the", "dog"]
    tokenizer = graph_tokenizer.WordTokenizer(tokens, subword.UNK)
    line = "the Reading dog reopened 12"
    expected = [tokens.index(t) for t in ("the", "[UNK-Cap-ing]", "dog", "[UNK-low-ed]")]
    expected.append(tokens.index("[UNK-num]"))
    assert tokenizer.encode(line) == expected
    ids, _ = tokenizer.tokenize(tf.constant([line]))
    assert ids.to_list() == [expected]
    # A vocabulary written before the shapes: every unknown word is [UNK].
    old = graph_tokenizer.WordTokenizer([*subword.RESERVED, "(S", "the", "dog"], subword.UNK)
    assert old.encode(line) == [3 + 1, 2, 3 + 2, 2, 2]
    assert old.tokenize(tf.constant([line]))[0].to_list() == [[4, 2, 5, 2, 2]]
