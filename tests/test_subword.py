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


def test_many_lines_encode_and_decode_as_each_line_alone(tokens, monkeypatch):
    """encode_many / decode_many (t2t-decode's file path) batch the lines, across
    batch boundaries too, and give each line what it gives alone: the same ids,
    the same text, empty lines and outputs with EOS and PAD included."""
    monkeypatch.setattr(subword, "EAGER_BATCH", 3)  # 8 lines: batches of 3, 3 and 2
    tokenizer = subword.SubwordTokenizer(tokens)
    lines = ["Hund über Fuchs 🦊", "", " x ", "café, naïve.", *sorted(set(CORPUS))[:4]]
    alone = [tokenizer.encode_many([line])[0] for line in lines]
    assert tokenizer.encode_many(lines) == alone
    assert alone[1] == [] and len({len(ids) for ids in alone}) > 3  # ragged, really
    assert tokenizer.decode_many(alone) == lines
    # PAD and EOS are not text: dropped wherever they stand.
    assert tokenizer.decode_many([[0, *alone[0], 1, 0], []]) == [lines[0], ""]
    assert tokenizer.encode_many([]) == [] and tokenizer.decode_many([]) == []


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
    (tmp_path / "twice").write_text("\n".join([*tokens, tokens[5]]) + "\n")
    with pytest.raises(ValueError, match=rf"twice:{len(tokens) + 1}: token .* already on line 6"):
        subword.load(str(tmp_path / "twice"))
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
    marked = tf.constant([subword.escape(text) for text in texts])
    reference = tf_text.regex_split(marked, subword.WORD, keep_delim_regex_pattern=subword.WORD)
    assert words == reference.to_list()
    for text, row in zip(texts, words, strict=True):
        assert b"".join(row).decode() == subword.escape(text)
    assert words[0] == [
        w.encode() for w in ["Hello", ",", "▁world", "!", "▁", "▁Two", "▁", "▁spaces"]
    ]


MIXED = [
    "ctrl\x01chars\x7f and \r carriage, \x0bvertical tab, zero\u200bwidth space",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 family 👩\u200d👩\u200d👧 flag 🇩🇪, Ελληνικά, العربية, עברית, हिन्दी",
    "\t\ttabs, trailing spaces and a lone ▁   ",
    "Straßenbahnhaltestellenüberdachung --max-length=256 https://example.org/a?b=1",
]


def test_every_training_character_is_in_the_vocabulary_alone_and_continuing():
    tokens = subword.learn(CORPUS + MIXED, target_size=400)
    vocabulary = set(tokens)
    characters = {c for line in CORPUS + MIXED for c in subword.escape(line)}
    missing = [c for c in characters if c not in vocabulary or "##" + c not in vocabulary]
    assert not missing


def test_mixed_scripts_emoji_control_characters_and_spaces_round_trip():
    tokenizer = subword.SubwordTokenizer(subword.learn(CORPUS + MIXED, target_size=400))
    for line in MIXED:
        ids = tokenizer.encode(line)
        assert subword.UNK_ID not in ids
        assert tokenizer.decode(ids) == line  # a literal "▁" included
    # A new line made of known characters in a new order.
    shuffled = "".join(reversed(MIXED[0])) + MIXED[1][::3]
    assert tokenizer.decode(tokenizer.encode(shuffled)) == shuffled


def test_in_graph_and_eager_tokenization_agree():
    tokenizer = subword.SubwordTokenizer(subword.learn(CORPUS + MIXED, target_size=400))
    lines = [*MIXED, *set(CORPUS), "", "unseen words of known letters"]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def graph(text):
        ids, _ = tokenizer.tokenize(text)
        return ids.to_tensor(-1)

    rows = graph(tf.constant(lines)).numpy().tolist()
    assert [[i for i in row if i >= 0] for row in rows] == [tokenizer.encode(s) for s in lines]


def test_learning_is_deterministic_with_many_tied_counts():
    """Every word occurs once, so nearly every merge is a tie the trainer must break the same way."""
    import random

    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyzäöüß"
    lines = [
        " ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(12))
        for _ in range(300)
    ]
    first = subword.learn(lines, target_size=500)
    assert all(subword.learn(lines, target_size=500) == first for _ in range(3))
    assert len(first) == 500


def test_an_export_made_with_the_previous_learner_still_loads_and_serves():
    """tests/data/export_v1: exported before the vocabulary learner changed (same file format).

    Served text must equal what today's tokenizer, on the export's
    vocabulary, makes of the ids signature's output for the same ids.
    """
    import os

    here = os.path.join(os.path.dirname(__file__), "data", "export_v1")
    tokenizer = subword.SubwordTokenizer(
        subword.load(os.path.join(here, "translate_from_files.vocab"))
    )
    model = tf.saved_model.load(os.path.join(here, "1"))
    lines = ["zwei hund über straße", "café 🦊 3,5 größe", "katze"]
    served = model.signatures["serving_default"](inputs=tf.constant(lines))
    assert [s.decode() for s in served["status"].numpy()] == ["ok"] * 3

    ids = [tokenizer.encode(line) + [1] for line in lines]
    width = max(map(len, ids))
    padded = tf.constant([row + [0] * (width - len(row)) for row in ids], tf.int32)
    by_ids = model.signatures["decode_ids"](inputs=padded)["outputs"].numpy().tolist()
    expected = [tokenizer.decode([i for i in row if i > 1]) for row in by_ids]
    assert [s.decode() for s in served["outputs"].numpy()] == expected


def test_literal_space_marks_and_escape_characters_come_back():
    """The escapes are undone in order: a literal "▁", the escape character, and
    the escape character before a literal "1" or "▁" all come back as they were."""
    e = subword.ESCAPE
    lines = ["a▁b c", "▁", " ▁ ", f"x{e}y", f"{e}1 {e}2", f"{e}▁", f"▁{e}", "1▁2"]
    tokenizer = subword.SubwordTokenizer(subword.learn(lines * 2, target_size=100))
    for line in lines:
        ids = tokenizer.encode(line)
        assert subword.UNK_ID not in ids
        assert tokenizer.decode(ids) == line
    assert subword.escape(f"a▁b c{e}") == f"a{e}1b▁c{e}2"


def test_characters_that_leave_no_room_for_merges_are_warned_about(caplog):
    """300 distinct CJK characters are 603 tokens with the reserved ones: a
    target of 400 is passed, and no merge fits; a target of 2,000 leaves room."""
    chars = [chr(0x4E00 + i) for i in range(300)]
    lines = ["".join(chars[i : i + 10]) for i in range(0, 300, 10)] * 4
    with caplog.at_level("WARNING"):
        tokens = subword.learn(lines, target_size=400)
    assert len(tokens) == 603
    assert "vocabulary: 603 tokens, above the target of 400" in caplog.text
    assert "no subword merges within 400 tokens: the text has 300 distinct" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        roomy = subword.learn(lines, target_size=2000)
    assert len(roomy) > 603 and "vocabulary:" not in caplog.text
