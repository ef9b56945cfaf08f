"""Subword vocabularies: learned in compiled code, run in graphs.

Text is pre-tokenized reversibly: every space becomes "▁" (U+2581) glued to
the front of the word after it, and the text is cut into runs of letters,
marks and digits (with their "▁") and single other characters. The words
are split into WordPiece pieces ("##" marks a piece that continues a word)
by tensorflow-text's FastWordpieceTokenizer. The vocabulary is learned by
the Hugging Face `tokenizers` WordPiece trainer (Rust, on every core) over
the same words. Detokenization joins the
pieces, drops the "##" marks and turns "▁" back into spaces, so text whose
characters all occur in the training data comes back exactly (any script,
punctuation and emoji included). The same ops run eagerly for encode_text
and inside an export's graph.

Vocabulary file: one token per line, id = line number; ids 0, 1 and 2 are
PAD, EOS and UNK (PAD and EOS as every problem has them).
"""

import collections
import threading
import time
from collections.abc import Iterable, Iterator

import tensorflow as tf
import tokenizers
from absl import logging

from t2t_lite import files, sequences
from t2t_lite.data import graph_tokenizer

SPACE = "\u2581"
SUFFIX = "##"
PAD, EOS, UNK = sequences.PAD_TOKEN, sequences.EOS_TOKEN, "[UNK]"
RESERVED = (PAD, EOS, UNK)
UNK_ID = 2
# A word: optional "▁" then letters/marks/digits; or one other character.
# FastWordpieceTokenizer's max_bytes_per_token (its default): a longer word is
# one UNK piece, so a line of more than N * WORD_CHARS characters has more than
# N pieces unless it holds such words, which teach a vocabulary nothing.
WORD_CHARS = 100
WORD = rf"{SPACE}?[\p{{L}}\p{{M}}\p{{N}}]+|{SPACE}?[^\p{{L}}\p{{M}}\p{{N}}{SPACE}]|{SPACE}"


# Lines per eager call of encode_many / decode_many.
EAGER_BATCH = 1024


# A private-use character that starts an escape: ESCAPE + "1" is a literal
# "▁" of the text, ESCAPE + "2" a literal ESCAPE. Every ESCAPE of escaped
# text starts an escape, so the two are undone one after the other.
ESCAPE = "\ue000"
ESCAPES = ((ESCAPE, ESCAPE + "2"), (SPACE, ESCAPE + "1"), (" ", SPACE))


def escape(line: str) -> str:
    """The text the vocabulary sees: literal "▁" and ESCAPE escaped, spaces as "▁"."""
    for old, new in ESCAPES:
        line = line.replace(old, new)
    return line


# Never in UTF-8 text: the byte pretokenize cuts at.
CUT = b"\xff"


def pretokenize(text: tf.Tensor) -> tf.RaggedTensor:
    """text [N] -> words [N, (words)]; concatenated, they are the text with "▁" for " ".

    The words are WORD's successive matches (every character belongs to
    one). One global regex replace marks where each starts and a byte split
    cuts there: the same words as tf_text.regex_split(marked, WORD,
    keep_delim_regex_pattern=WORD), about five times faster.
    """
    marked = text
    for old, new in ESCAPES:  # literal replacements (no regex metacharacters)
        marked = tf.strings.regex_replace(marked, old, new)
    cut = tf.strings.regex_replace(marked, WORD, CUT + b"\\0")  # CUT before every word
    words = tf.strings.split(cut, sep=CUT)  # [N, (words)], "" first
    return tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)


def count_words(lines: Iterable[str], batch_size: int = 1024) -> collections.Counter:
    """Word counts of the pre-tokenized lines (the learner's input)."""
    counts: collections.Counter = collections.Counter()
    batch: list[str] = []
    for line in [*lines, None]:
        if line is not None:
            batch.append(line)
        if batch and (line is None or len(batch) == batch_size):
            words = pretokenize(tf.constant(batch)).flat_values.numpy()
            counts.update(word.decode("utf-8") for word in words)
            batch = []
    return counts


def learn(lines: list[str], target_size: int, progress_every_s: float = 30.0) -> list[str]:
    """A WordPiece vocabulary of target_size tokens, reserved ids first.

    Every character of the training text is in it (alone and as "##c"), so
    such text never maps to UNK; when the characters alone outnumber
    target_size, the vocabulary is all of them and no longer pieces.
    Deterministic: the same lines give the same file. Logs progress every
    progress_every_s seconds while the trainer runs.
    """
    if target_size < len(RESERVED) + 1:
        raise ValueError(f"vocabulary size {target_size} is too small")
    characters: set[str] = set()
    for line in lines:
        characters.update(escape(line))
    if not characters:
        raise ValueError("no text to learn a vocabulary from")
    # "##c" for every character, given up front: the trainer would create
    # them in hash-map order, and their ids break ties between merges.
    continuations = [SUFFIX + char for char in sorted(characters)]
    model = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token=UNK))
    model.normalizer = tokenizers.normalizers.Sequence(
        [tokenizers.normalizers.Replace(old, new) for old, new in ESCAPES]
    )
    model.pre_tokenizer = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(WORD), behavior="isolated"
    )
    trainer = tokenizers.trainers.WordPieceTrainer(
        vocab_size=target_size,
        special_tokens=[*RESERVED, *continuations],
        continuing_subword_prefix=SUFFIX,
        show_progress=False,
    )
    errors: list[BaseException] = []

    def train():
        try:
            model.train_from_iterator(_chunks(lines, 1000), trainer, length=len(lines))
        except BaseException as err:  # noqa: BLE001 (re-raised in the caller's thread)
            errors.append(err)

    thread = threading.Thread(target=train, daemon=True)
    start = time.perf_counter()
    thread.start()
    while thread.is_alive():
        thread.join(progress_every_s)
        if thread.is_alive():
            logging.info(
                "vocabulary: learning from %d lines, %.0f s so far.",
                len(lines),
                time.perf_counter() - start,
            )
    if errors:
        raise errors[0]
    vocab = model.get_vocab(with_added_tokens=True)
    tokens = sorted(vocab, key=vocab.get)
    if tuple(tokens[: len(RESERVED)]) != RESERVED:
        raise AssertionError(f"the trainer moved the reserved tokens: {tokens[:5]}")
    _warn_when_characters_fill(tokens, len(characters), target_size)
    return tokens


def _warn_when_characters_fill(tokens: list[str], characters: int, target_size: int) -> None:
    """A warning when the characters (each alone and as "##c") leave no room for
    merges, or outnumber the target: text of thousands of distinct characters (CJK)."""
    merges = sum(len(token.removeprefix(SUFFIX)) > 1 for token in tokens[len(RESERVED) :])
    why = (
        f"the text has {characters} distinct characters, each kept alone and as "
        f'"{SUFFIX}c" ({2 * characters + len(RESERVED)} tokens with the reserved ones)'
    )
    if len(tokens) > target_size:
        logging.warning(
            "vocabulary: %d tokens, above the target of %d: %s; no text maps to UNK.",
            len(tokens),
            target_size,
            why,
        )
    if not merges:
        logging.warning(
            "vocabulary: no subword merges within %d tokens: %s; a vocabulary size above "
            "%d leaves room for merges.",
            target_size,
            why,
            2 * characters + len(RESERVED),
        )


def _chunks(lines: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(lines), size):
        yield lines[start : start + size]


def save(tokens: list[str], path: str) -> None:
    files.write_atomically(path, "".join(token + "\n" for token in tokens))


def load(path: str) -> list[str]:
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{path}: no vocabulary (run t2t-datagen for this problem)")
    tokens = files.read_lines(path)
    if tuple(tokens[: len(RESERVED)]) != RESERVED:
        raise ValueError(f"{path}: not a subword vocabulary (its first lines must be {RESERVED})")
    first: dict[str, int] = {}
    for number, token in enumerate(tokens, start=1):
        if token in first:
            raise ValueError(
                f"{path}:{number}: token {token!r} is already on line {first[token]}; "
                "a vocabulary holds each token once (use the file t2t-datagen wrote)"
            )
        first[token] = number
    return tokens


class SubwordTokenizer(graph_tokenizer.GraphTokenizer):
    """Text <-> WordPiece ids with the reversible pre-tokenization above."""

    def __init__(self, tokens: list[str]):
        super().__init__()
        self.vocab_size = len(tokens)
        self._tokens = tf.constant(tokens)
        self._wordpiece = graph_tokenizer.tf_text().FastWordpieceTokenizer(
            vocab=tokens,
            suffix_indicator=SUFFIX,
            unknown_token=UNK,
            no_pretokenization=True,
            token_out_type=tf.int32,
        )

    @property
    def tokens(self) -> list[str]:
        return [token.decode("utf-8") for token in self._tokens.numpy()]

    def vocabulary(self) -> list[str]:
        return self.tokens

    def tokenize(self, text: tf.Tensor) -> tuple[tf.RaggedTensor, tf.Tensor]:
        pieces = self._wordpiece.tokenize(pretokenize(text))  # [N, (words), (pieces)]
        ids = pieces.merge_dims(1, 2)  # [N, (pieces)]
        # Unknown characters become UNK; the line is still decodable.
        return ids, tf.ones([tf.shape(text)[0]], tf.bool)

    def detokenize(self, ids: tf.RaggedTensor) -> tf.Tensor:
        ids = tf.ragged.boolean_mask(ids, (ids >= len(RESERVED) - 1) & (ids < self.vocab_size))
        pieces = tf.ragged.map_flat_values(tf.gather, self._tokens, ids)  # [N, (pieces)]
        pieces = tf.ragged.map_flat_values(tf.strings.regex_replace, pieces, "^##", "")
        text = tf.strings.reduce_join(pieces, axis=1)  # [N]
        for old, new in reversed(ESCAPES):  # "▁" -> " ", then the escapes, in this order
            text = tf.strings.regex_replace(text, new, old)
        return text

    def encode(self, line: str) -> list[int]:
        """One line -> ids (eagerly, with the graph's ops)."""
        return self.encode_many([line])[0]

    def decode(self, ids: list[int]) -> str:
        return self.decode_many([ids])[0]

    def encode_many(self, lines: list[str]) -> list[list[int]]:
        """Lines -> ids, EAGER_BATCH lines per call of the graph's ops (an eager
        op costs the same for one line as for thousands)."""
        encoded: list[list[int]] = []
        for start in range(0, len(lines), EAGER_BATCH):
            ids, _ = self.tokenize(tf.constant(lines[start : start + EAGER_BATCH], tf.string))
            encoded += ids.to_list()
        return encoded

    def decode_many(self, ids: list[list[int]]) -> list[str]:
        """Ids of many lines -> their texts, as `encode_many` batches them."""
        texts: list[str] = []
        for start in range(0, len(ids), EAGER_BATCH):
            batch = tf.ragged.constant(ids[start : start + EAGER_BATCH], tf.int32, ragged_rank=1)
            texts += [text.decode("utf-8") for text in self.detokenize(batch).numpy()]
        return texts
