"""Text <-> ids inside a TensorFlow graph, for exports that serve text.

A problem's graph tokenizer does in TensorFlow ops what its `encode_text` /
`decode_text` do in Python, using only ops that ship with TensorFlow and
tensorflow-text, so a SavedModel holding it runs on stock TF Serving.
"""

import abc
import types

import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.parsing import word_shapes


def tf_text() -> types.ModuleType:
    """tensorflow_text, imported when a graph first tokenizes: every program
    imports this module (through the problems) and builds a problem's
    tokenizer for its Python encode, and tensorflow_text's import is about
    half a second of a start-up that traces no graph tokenizer (a decode, a
    training run; docs/benchmarks.md, start-up)."""
    import tensorflow_text

    return tensorflow_text


class GraphTokenizer(tf.Module, abc.ABC):
    """The interface an export needs (a tf.Module, so its tables are saved)."""

    @abc.abstractmethod
    def tokenize(self, text: tf.Tensor) -> tuple[tf.RaggedTensor, tf.Tensor]:
        """text [N] (valid UTF-8) -> (ids [N, (tokens)] without EOS, known [N] bool).

        known[i] is False when line i has a token outside the vocabulary; its
        ids are then meaningless and the line must not be decoded.
        """

    @abc.abstractmethod
    def detokenize(self, ids: tf.RaggedTensor) -> tf.Tensor:
        """ids [N, (tokens)] without EOS or PAD -> text [N]."""

    @abc.abstractmethod
    def vocabulary(self) -> list[str]:
        """The token of every id, in id order, all distinct (PAD and EOS by
        their sequences.*_TOKEN names): what a token-based engine reads."""


# White space: the characters Python's str.isspace() accepts (str.split()'s),
# as an RE2 class. tensorflow-text's WhitespaceTokenizer cuts U+00A0, U+2028
# and the other multi-byte spaces inside their UTF-8 bytes and keeps
# U+001C..U+001F, so the graph first turns each of these into " ".
_SPACES = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
WHITE_SPACE_RE2 = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in _SPACES) + "]"


def split_symbols(text: str) -> list[str]:
    """Symbols of one line, cut where the export's graph cuts them (eager code)."""
    return text.split()


class SymbolTokenizer(GraphTokenizer):
    """Whitespace-separated symbols, symbol i having id first_id + i.

    The same encoding as the algorithmic problems' encode_text/decode_text:
    "3 1 4" <-> [5, 3, 6] for decimal digits after PAD and EOS.
    """

    separator = " "  # between detokenized symbols

    def __init__(self, symbols: list[str], first_id: int):
        super().__init__()
        ids = tf.range(first_id, first_id + len(symbols), dtype=tf.int32)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(symbols), ids), default_value=-1
        )
        # Id -> text; reserved ids (PAD, EOS) map to nothing.
        self._symbols = tf.constant([""] * first_id + list(symbols))
        self._first_id = first_id
        reserved = [sequences.PAD_TOKEN, sequences.EOS_TOKEN]
        if first_id != len(reserved) or set(reserved) & set(symbols):
            raise ValueError(f"symbols must follow PAD and EOS and differ from {reserved}")
        self._vocabulary = reserved + list(symbols)

    def tokenize(self, text: tf.Tensor) -> tuple[tf.RaggedTensor, tf.Tensor]:
        spaced = tf.strings.regex_replace(text, WHITE_SPACE_RE2, " ")  # see WHITE_SPACE_RE2
        tokens = tf_text().WhitespaceTokenizer().tokenize(spaced)  # [N, (tokens)] strings
        ids = tf.ragged.map_flat_values(self._table.lookup, tokens)  # [N, (tokens)]
        known = tf.reduce_all(ids >= 0, axis=1)  # [N]
        return ids, known

    def vocabulary(self) -> list[str]:
        return list(self._vocabulary)

    def detokenize(self, ids: tf.RaggedTensor) -> tf.Tensor:
        vocab_size = tf.shape(self._symbols)[0]
        ids = tf.ragged.boolean_mask(ids, (ids >= self._first_id) & (ids < vocab_size))
        words = tf.ragged.map_flat_values(tf.gather, self._symbols, ids)  # [N, (tokens)]
        return tf.strings.reduce_join(words, axis=1, separator=self.separator)


class CharacterTokenizer(SymbolTokenizer):
    """One token per character (Unicode code point), character i having id first_id + i.

    "(1+2)" <-> one id per character; spaces are characters too.
    """

    separator = ""

    def __init__(self, characters: str, first_id: int):
        if len(set(characters)) != len(characters) or any(len(c) != 1 for c in characters):
            raise ValueError("characters must be distinct single characters")
        super().__init__(list(characters), first_id)

    def tokenize(self, text: tf.Tensor) -> tuple[tf.RaggedTensor, tf.Tensor]:
        chars = tf.strings.unicode_split(text, "UTF-8")  # [N, (characters)] strings
        ids = tf.ragged.map_flat_values(self._table.lookup, chars)  # [N, (characters)]
        known = tf.reduce_all(ids >= 0, axis=1)  # [N]
        return ids, known


class WordTokenizer(GraphTokenizer):
    """Whitespace-separated words, each one token: `tokens[i]` has id i.

    tokens starts with PAD, EOS and an unknown-word token; a word outside the
    vocabulary becomes its shape's token where the vocabulary holds every
    shape (parsing/word_shapes.py: `[UNK-Cap-ed]`), else that unknown token (the
    line stays decodable). The parsing problem's vocabulary: brackets and
    labels like "(NP" stay whole tokens.
    """

    def __init__(self, tokens: list[str], unknown: str):
        super().__init__()
        reserved = [sequences.PAD_TOKEN, sequences.EOS_TOKEN, unknown]
        if tokens[:3] != reserved or len(set(tokens)) != len(tokens):
            raise ValueError(f"a word vocabulary starts with {reserved} and has no repeats")
        self._words = list(tokens)
        self.vocab_size = len(tokens)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(tokens[3:]), tf.range(3, len(tokens), dtype=tf.int32)
            ),
            default_value=2,
        )
        self._tokens = tf.constant(tokens)
        self._index = {word: i for i, word in enumerate(tokens[3:], start=3)}
        self.shaped = all(token in self._index for token in word_shapes.tokens())

    @property
    def tokens(self) -> list[str]:
        return list(self._words)

    def vocabulary(self) -> list[str]:
        return self.tokens

    def tokenize(self, text: tf.Tensor) -> tuple[tf.RaggedTensor, tf.Tensor]:
        spaced = tf.strings.regex_replace(text, WHITE_SPACE_RE2, " ")  # see WHITE_SPACE_RE2
        words = tf_text().WhitespaceTokenizer().tokenize(spaced)  # [N, (words)] strings
        ids = tf.ragged.map_flat_values(self._lookup, words)  # [N, (words)]
        return ids, tf.ones([tf.shape(text)[0]], tf.bool)

    def _lookup(self, words: tf.Tensor) -> tf.Tensor:
        """Words [W] -> ids [W]: a word's own, else its shape's (or the unknown id)."""
        ids = self._table.lookup(words)
        if not self.shaped:
            return ids
        return tf.where(ids == 2, self._table.lookup(word_shapes.shapes(words)), ids)

    def detokenize(self, ids: tf.RaggedTensor) -> tf.Tensor:
        ids = tf.ragged.boolean_mask(ids, (ids >= 2) & (ids < self.vocab_size))
        words = tf.ragged.map_flat_values(tf.gather, self._tokens, ids)  # [N, (words)]
        return tf.strings.reduce_join(words, axis=1, separator=" ")

    def encode(self, line: str) -> list[int]:
        """One line -> ids, in Python (the graph's split: str.split())."""
        if not self.shaped:
            return [self._index.get(word, 2) for word in split_symbols(line)]
        return [
            self._index.get(word) or self._index[word_shapes.shape(word)]
            for word in split_symbols(line)
        ]

    def decode(self, ids: list[int]) -> str:
        return " ".join(self._words[i] for i in ids if 2 <= i < self.vocab_size)

    def encode_many(self, lines: list[str]) -> list[list[int]]:
        return [self.encode(line) for line in lines]

    def decode_many(self, ids: list[list[int]]) -> list[str]:
        return [self.decode(line) for line in ids]
