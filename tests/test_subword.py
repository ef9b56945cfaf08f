"""Subword vocabularies: learned from text, exact round trips in any script."""

import pytest
import tensorflow as tf

from t2t_lite.data import subword

CORPUS = [
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Le renard brun rapide saute par-dessus le chien paresseux !",
    "敏捷的棕色狐狸跳过了懒狗。",
    "The quick brown fox 🦊 jumps over the lazy dog 🐶, twice: 2x.",
    "Größe, Straße, naïve café, déjà vu — «quotes» and 'single' ones",
    "  leading and trailing spaces, and  double  spaces  ",
    "tabs\tstay\ttabs",
] * 3


@pytest.fixture(scope="module")
def tokens():
    return subword.learn(CORPUS, target_size=300)


def test_the_vocabulary_starts_with_pad_eos_unk_and_respects_the_target(tokens):
    assert tokens[:3] == ["<pad>", "<EOS>", "[UNK]"]
    assert len(tokens) <= 300
    assert len(set(tokens)) == len(tokens)


def test_every_training_line_comes_back_exactly(tokens):
    tokenizer = subword.SubwordTokenizer(tokens)
    for line in set(CORPUS):
        ids = tokenizer.encode(line)
        assert subword.UNK_ID not in ids
        assert all(i > 1 for i in ids)  # never PAD or EOS
        assert tokenizer.decode(ids) == line


def test_new_text_of_known_characters_round_trips_in_a_batch(tokens):
    tokenizer = subword.SubwordTokenizer(tokens)
    lines = ["Hund über Fuchs 🦊 — 狐狸。", "", " x ", "café, naïve."]
    ids, known = tokenizer.tokenize(tf.constant(lines))
    assert known.numpy().all()
    assert [t.decode() for t in tokenizer.detokenize(ids).numpy()] == lines
    assert ids.row_lengths().numpy()[1] == 0


def test_a_word_with_an_unknown_character_becomes_unk(tokens):
    """WordPiece's rule: the whole word (here with its leading space) is UNK."""
    tokenizer = subword.SubwordTokenizer(tokens)
    ids = tokenizer.encode("fox жfox fox")
    assert ids.count(subword.UNK_ID) == 1
    assert tokenizer.decode(ids) == "fox[UNK] fox"


def test_saved_vocabularies_load_back_and_bad_files_are_named(tokens, tmp_path):
    path = str(tmp_path / "vocab.subwords")
    subword.save(tokens, path)
    assert subword.load(path) == tokens
    (tmp_path / "bad").write_text("a\nb\n")
    with pytest.raises(ValueError, match="bad: not a subword vocabulary"):
        subword.load(str(tmp_path / "bad"))
    with pytest.raises(FileNotFoundError, match="missing: no vocabulary"):
        subword.load(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="no text"):
        subword.learn([], 100)


def test_pretokenize_cuts_where_regex_split_does():
    import tensorflow as tf
    import tensorflow_text as tf_text

    texts = [
        "Hello, world!  Two  spaces",
        " leading and trailing ",
        "",
        " ",
        "a\x01b\tc\r\nd",
        "über 🦊 x,y. 3.14 — 日本語テキスト",
        "\u2581already marked",
        "ääå123abc...!!",
    ]
    words = subword.pretokenize(tf.constant(texts)).to_list()
    marked = tf.strings.regex_replace(tf.constant(texts), " ", subword.SPACE)
    reference = tf_text.regex_split(marked, subword.WORD, keep_delim_regex_pattern=subword.WORD)
    assert words == reference.to_list()
    for text, row in zip(texts, words, strict=True):
        assert b"".join(row).decode() == text.replace(" ", subword.SPACE)
    assert words[0] == [
        w.encode() for w in ["Hello", ",", "▁world", "!", "▁", "▁Two", "▁", "▁spaces"]
    ]
