"""Trees as one label per word (parsing/tree_labels.py), the search held to them
(parsing/constraints.LabelConstraint) and the problem that uses them:
hand-derived labels, round trips and the decode's mending."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.parsing import constraints, tree_labels, trees


def tree(text: str) -> trees.Tree:
    [(parsed, _)] = trees.read_trees(text, "t")
    return trees.preprocess(parsed)


def tagged_xx(node: trees.Tree) -> trees.Tree:
    if node.is_preterminal:
        return trees.Tree(trees.NORMALIZED_TAG, word=node.word)
    return trees.Tree(node.label, [tagged_xx(child) for child in node.children])


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        # The and dog share S, NP (2, lowest NP); dog and barks share S (1: -1);
        # barks and . share S (+0) and barks has the unary VP; . is last.
        ("(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))", "+2/NP/ -1/S/ +0/S/VP =/"),
        # S over VP over the same two words is one chain, S+VP; ADVP over "now"
        # alone is its unary; NP over "it" alone, the last word's.
        (
            "(S (S (VP (VB Go) (ADVP (RB now)))) (. .) (NP (PRP it)))",
            "+2/S+VP/ -1/S/ADVP +0/S/ =/NP",
        ),
        # A deeper right branch: we-saw share S (1); saw-her share S, VP (2: +1);
        # her-leave share S, VP, S (3: +1), her's NP; leave is last, its VP.
        (
            "(S (NP (PRP We)) (VP (VBD saw) (S (NP (PRP her)) (VP (VB leave)))))",
            "+1/S/NP +1/VP/ +1/S/NP =/VP",
        ),
        # One word: its chain only.
        ("(NP (NN Hello))", "=/NP"),
    ],
)
def test_trees_are_written_as_the_hand_derived_labels_and_read_back(text, labels):
    t = tree(text)
    assert " ".join(tree_labels.encode(t)) == labels
    decoded, mended = tree_labels.decode(labels.split(), t.words())
    assert mended == 0
    assert decoded == tagged_xx(t)


@pytest.mark.parametrize(
    ("labels", "expected", "mended"),
    [
        # Nothing written: every pair +0 with no label (2), no last label (1),
        # and a root no label names, S (1).
        ("", "(S (XX a) (XX b) (XX c))", 4),
        # A count below 1 is read as 1; a last word's label before the last
        # word, and no label for the last: each mended once.
        ("-3/NP/ =/", "(NP (XX a) (XX b) (XX c))", 3),
        # +2 opens the root and NP over a-b; b-c share the root only (-1),
        # and its label names it S: the tree as the labels describe it.
        ("+2/NP/ -1/S/ =/", "(S (NP (XX a) (XX b)) (XX c))", 0),
        # +3 opens three levels, the middle one never named: left out (1).
        ("+3/NP/ -2/S/ =/", "(S (NP (XX a) (XX b)) (XX c))", 1),
        # The root is never named (NP twice names the level below it): S (1).
        ("+2/NP/ +0/NP/ =/", "(S (NP (XX a) (XX b) (XX c)))", 1),
        # Labels of the wrong kind for their place (2), labels past the last
        # word (2), and the root never named (1).
        ("=/ +1/VP/ +1/S/ x y", "(S (XX a) (VP (XX b) (XX c)))", 5),
        # The first naming of a constituent holds; the second, different, is counted.
        ("+1/NP/ +0/VP/ =/", "(NP (XX a) (XX b) (XX c))", 1),
        # A count past MAX_SHARED is read as MAX_SHARED (1).
        (f"+{tree_labels.MAX_SHARED + 1}/NP/ -{tree_labels.MAX_SHARED - 1}/S/ =/", None, None),
    ],
)
def test_any_labels_decode_to_a_tree_over_exactly_the_words_counting_what_was_mended(
    labels, expected, mended
):
    decoded, count = tree_labels.decode(labels.split(), ["a", "b", "c"])
    assert decoded.words() == ["a", "b", "c"]
    if expected is None:  # the count past its bound: MAX_SHARED levels, 98 unnamed
        assert count == 1 + tree_labels.MAX_SHARED - 2
        return
    assert decoded.bracketed() == expected
    assert count == mended
    # One word and no chain: a root over it, as trees.repair gives, counted.
    assert tree_labels.decode(["=/"], ["x"]) == (trees.Tree("S", [trees.Tree("XX", word="x")]), 1)


def test_labels_are_told_apart_from_words_and_other_symbols():
    assert tree_labels.read_pair("+1/S+VP/NP") == (1, "S+VP", "NP")
    assert tree_labels.read_pair("-12/PRT|ADVP/") == (-12, "PRT|ADVP", "")
    assert tree_labels.read_last("=/NP+QP") == "NP+QP"
    for token in ("1/S/", "+1/S", "+1//", "=/", "(S", "and/or", "+x/S/"):
        assert tree_labels.read_pair(token) is None, token
    for token in ("=", "=/a/b", "+0/S/", "word"):
        assert tree_labels.read_last(token) is None, token


def _allowed_after(tokens: list[str], words: int, strict: bool = True):
    """written labels -> the set the label constraint allows next, for a
    sentence of `words` words (hand-derived goldens below)."""
    ids = {token: i for i, token in enumerate(tokens)}
    inputs = tf.constant([[len(tokens) - 1] * words + [1]])  # the last token as each word, EOS
    constraint = constraints.LabelConstraint(tokens, strict=strict)

    def allowed_after(written: str) -> set[str]:
        state = constraint.initial_state(inputs, extra_length=20)
        for symbol in ["<pad>", *written.split()]:  # the start symbol first
            state = constraint.advance(state, tf.constant([ids[symbol]]))
        return {tokens[i] for i in np.flatnonzero(constraint.allowed(state).numpy()[0])}

    return allowed_after


def test_the_label_search_by_default_holds_the_shape_and_the_decode_counts_the_rest():
    tokens = ["<pad>", "<EOS>", "+1/S/", "+0/NP/", "-1/S/", "+2/NP/", "=/", "=/NP", "dog"]
    allowed_after = _allowed_after(tokens, 3, strict=False)
    assert allowed_after("") == {"+1/S/", "+2/NP/"}  # a first count of 1 or more
    assert allowed_after("+1/S/") == {"+1/S/", "+0/NP/", "+2/NP/"}  # not below 1
    assert allowed_after("+2/NP/") == {"+1/S/", "+0/NP/", "-1/S/", "+2/NP/"}
    assert allowed_after("+2/NP/ -1/S/") == {"=/", "=/NP"}  # the last word's
    assert allowed_after("+2/NP/ -1/S/ =/NP") == {"<EOS>"}
    # What the shape lets through, the decode counts: +1/S/ +0/NP/ names S twice.
    assert tree_labels.decode(["+1/S/", "+0/NP/", "=/"], ["a", "b", "c"])[1] == 1


def test_the_strict_label_search_allows_only_labels_that_decode_as_they_stand():
    tokens = ["<pad>", "<EOS>", "+1/S/", "+0/NP/", "-1/S/", "+2/NP/", "=/", "=/NP", "dog"]
    allowed_after = _allowed_after(tokens, 3)  # two word labels, then the last word's
    # A first count of 1 or more; +2 leaves the root unnamed, and one label is left to name it.
    assert allowed_after("") == {"+1/S/", "+2/NP/"}
    # The root is S: +0/NP/ would name it again otherwise, +2/NP/ leave a level
    # unnamed with no label left; -1 would share nothing.
    assert allowed_after("+1/S/") == {"+1/S/"}
    # NP over the first two words, the root unnamed: only the label that names
    # it as NP closes (-1/S/) is left.
    assert allowed_after("+2/NP/") == {"-1/S/"}
    assert allowed_after("+2/NP/ -1/S/") == {"=/", "=/NP"}  # every level named: the last word's
    assert allowed_after("+2/NP/ -1/S/ =/NP") == {"<EOS>"}
    for written in ("+1/S/ +1/S/ =/", "+2/NP/ -1/S/ =/NP"):
        assert tree_labels.decode(written.split(), ["a", "b", "c"])[1] == 0
    # One word: its chain is the root, so the last label must have one.
    assert _allowed_after(tokens, 1)("") == {"=/NP"}
    assert _allowed_after(tokens, 1, strict=False)("") == {"=/", "=/NP"}
    with pytest.raises(ValueError, match="no word labels"):
        constraints.LabelConstraint(["<pad>", "<EOS>", "(S", ")S", "XX"])


def test_the_label_search_falls_back_to_the_shape_where_the_vocabulary_cannot_name_a_level():
    tokens = ["<pad>", "<EOS>", "+2/NP/", "+0/NP/", "=/", "dog"]
    allowed_after = _allowed_after(tokens, 3)
    assert allowed_after("") == {"+2/NP/"}
    # No label can name the root now (a -1 is not in the vocabulary): rather
    # than dead-end, the row allows every label that keeps the count in bounds.
    assert allowed_after("+2/NP/") == {"+2/NP/", "+0/NP/"}


@pytest.mark.parametrize("strict", [False, True])
def test_the_label_search_bounds_the_count_of_shared_constituents(strict):
    tokens = ["<pad>", "<EOS>", "+1/NP/", "+0/NP/", "-1/NP/", "=/", "dog"]
    allowed_after = _allowed_after(tokens, tree_labels.MAX_SHARED + 5, strict)
    deepest = " ".join(["+1/NP/"] * tree_labels.MAX_SHARED)
    assert "+1/NP/" in allowed_after(" ".join(["+1/NP/"] * (tree_labels.MAX_SHARED - 1)))
    assert allowed_after(deepest) == {"+0/NP/", "-1/NP/"}


def test_the_labels_problem_writes_labels_and_decodes_any_output_to_a_tree(tmp_path, caplog):
    from t2t_lite.data import problem, subword
    from t2t_lite.decoding import decoder

    prob = problem.get("parsing_from_files_labels")
    t = tree("(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))")
    assert prob.target(t) == "+2/NP/ -1/S/ +0/S/VP =/"
    symbols = ["+2/NP/", "-1/S/", "+0/S/VP", "=/", "+1/S/"]
    subword.save([*subword.RESERVED, *symbols], str(tmp_path / prob.vocab_filename))
    prob.bind(str(tmp_path))
    assert prob.writes_trees
    made = prob.decode_constraint(decoder.decode_hparams(""))  # the problem's hook
    assert isinstance(made, constraints.LabelConstraint) and not made.strict
    assert prob.decode_constraint(decoder.decode_hparams("tree_constraint=False")) is None
    with caplog.at_level("WARNING"):
        lines = prob.decoded_lines(
            ["The dog barks .", "It rained ."],
            [prob.encode_text(text) for text in ("+2/NP/ -1/S/ +0/S/VP =/", "+1/S/ =/")],
        )
    assert lines == [
        "(TOP (S (NP (XX The) (XX dog)) (VP (XX barks)) (XX .)))",
        "(TOP (S (XX It) (XX rained) (XX .)))",  # a label short: the last pair mended
    ]
    assert "1 of 2 decoded line(s) were not trees" in caplog.text


def test_the_label_constraint_is_a_decode_setting():
    from t2t_lite.decoding import decoder

    assert decoder.decode_hparams("").label_constraint == "shape"
    assert decoder.decode_hparams("label_constraint=strict").label_constraint == "strict"
    with pytest.raises(ValueError, match="label_constraint.*must be one of shape, strict"):
        decoder.decode_hparams("label_constraint=named")

    tokens = ["<pad>", "<EOS>", "+1/S/", "=/"]
    for setting, strict in (("", False), ("label_constraint=strict", True)):
        made = constraints.for_trees(tokens, "labels", decoder.decode_hparams(setting))
        assert isinstance(made, constraints.LabelConstraint) and made.strict is strict
