"""Algorithmic problems of tensor2tensor (identity, reverse, addition), of the
looped-transformer papers (binary parity, sort), and state tracking (the
arrangement three items reach under a sequence of permutations).

Symbols 0..base-1 have ids 2..base+1 (0 is PAD, 1 is EOS). Splits: "train"
and "dev" draw lengths 1..40; "test" draws lengths 1..400, ten times the
training length, as in the Universal Transformer paper's Table 4;
"valid_long" is a second, independent draw like "test", for choosing
settings on long sequences without looking at the reported test split. The
`...20` variants (lengths 1..20, test 1..200) keep the same ratio at a
quarter of the attention cost, for experiments on a CPU.
"""

import itertools
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import graph_tokenizer, problem


class AlgorithmicProblem(problem.Problem):
    """Random symbol sequences of lengths 1..train_length (test: 1..test_length)."""

    base = 10
    train_length = 40
    test_length = 400
    # Each split's generator is seeded by its index in sorted order, so
    # "valid_long" (last) leaves the other splits' files as they were.
    splits = {
        "train": (100_000, 10),
        "dev": (1_000, 1),
        "test": (1_000, 1),
        "valid_long": (1_000, 1),
    }

    @property
    def vocab_size(self) -> int:
        return self.base + sequences.NUM_RESERVED_IDS

    def split_length(self, split: str) -> int:
        """The longest input (without EOS) generated for `split`."""
        self._split(split)
        return self.test_length if split in ("test", "valid_long") else self.train_length

    def max_length(self, split: str) -> int:
        return self.split_length(split) + 1

    def generate_examples(
        self, split: str, rng: np.random.Generator
    ) -> Iterator[dict[str, list[int]]]:
        num_examples, _ = self._split(split)
        max_len = self.split_length(split)
        for _ in range(num_examples):
            inputs = self.random_inputs(max_len, rng)
            yield {"inputs": inputs, "targets": self.target(inputs)}

    def random_inputs(self, max_len: int, rng: np.random.Generator) -> list[int]:
        """1..max_len random symbols, as ids."""
        length = int(rng.integers(1, max_len + 1))
        symbols = rng.integers(0, self.base, size=length)
        return (symbols + sequences.NUM_RESERVED_IDS).tolist()

    def target(self, inputs: list[int]) -> list[int]:
        """The target ids for `inputs` (identity by default)."""
        return list(inputs)

    def symbols(self) -> list[str]:
        """Text of ids 2, 3, ...: the digits 0..base-1."""
        return [str(d) for d in range(self.base)]

    def encode_text(self, text: str) -> list[int]:
        """Space-separated symbols, e.g. "3 1 4" -> ids."""
        table = {symbol: i + sequences.NUM_RESERVED_IDS for i, symbol in enumerate(self.symbols())}
        tokens = graph_tokenizer.split_symbols(text)
        unknown = [token for token in tokens if token not in table]
        if unknown:
            raise ValueError(
                f"unknown symbol {unknown[0]!r}; {self.name} expects space-separated "
                f"symbols from {' '.join(self.symbols())}"
            )
        return [table[token] for token in tokens]

    def graph_tokenizer(self, data_dir: str) -> graph_tokenizer.GraphTokenizer:
        del data_dir  # the symbols are fixed
        return graph_tokenizer.SymbolTokenizer(self.symbols(), sequences.NUM_RESERVED_IDS)

    def decode_text(self, ids: list[int]) -> str:
        symbols = self.symbols()
        return " ".join(symbols[i - sequences.NUM_RESERVED_IDS] for i in sequences.until_eos(ids))


class ReverseProblem(AlgorithmicProblem):
    def target(self, inputs: list[int]) -> list[int]:
        return inputs[::-1]


class ParityProblem(AlgorithmicProblem):
    """Bits -> one symbol, 1 when the input holds an odd number of ones (Fan et al. 2025).

    Input labels: the parity of the bits up to each position (EOS: all of
    them, the answer).
    """

    has_input_labels = True

    def target(self, inputs: list[int]) -> list[int]:
        ones = sum(1 for i in inputs if i == 1 + sequences.NUM_RESERVED_IDS)
        return [ones % 2 + sequences.NUM_RESERVED_IDS]

    def input_labels(self, inputs: tf.Tensor) -> tf.Tensor:
        ones = tf.cumsum(tf.cast(tf.equal(inputs, 1 + sequences.NUM_RESERVED_IDS), tf.int32), -1)
        return ones % 2 + sequences.NUM_RESERVED_IDS  # [..., S]


class SortProblem(AlgorithmicProblem):
    """Symbols -> the same symbols in ascending order."""

    def target(self, inputs: list[int]) -> list[int]:
        return sorted(inputs)


# The elements of S3 in one-line notation, in PermuteProblem's symbol order.
_S3 = list(itertools.permutations(range(3)))
# _THEN[a][p]: the index of arrangement _S3[a] with permutation _S3[p] applied.
_THEN = [[_S3.index(tuple(a[j] for j in p)) for p in _S3] for a in _S3]


class PermuteProblem(AlgorithmicProblem):
    """Permutations of three items -> the arrangement they reach, applied in order.

    Each symbol is one of the six arrangements of 0, 1, 2 in one-line notation;
    applying p to an arrangement a gives a[p[0]] a[p[1]] a[p[2]]. Starting from
    "012", the target is the one symbol of the arrangement after every input
    symbol. The group (S3) is not abelian, so unlike parity the answer depends
    on the order, not only on how often each symbol occurs: a model has to
    carry the state along the sequence.

    Every input starts with the marker "|" (id base + 2, counted in the
    length): where the state starts, so that a rule that passes the state
    from each position to the next has a first position that knows it is
    first (`encode_text` adds it when the text leaves it out).

    Input labels: the arrangement reached after each position (the marker's:
    "012"; EOS's: the answer).
    """

    base = 6  # the number of permutations, the elements of S3
    has_input_labels = True

    @property
    def start_id(self) -> int:
        return self.base + sequences.NUM_RESERVED_IDS

    @property
    def vocab_size(self) -> int:
        return self.base + sequences.NUM_RESERVED_IDS + 1

    def symbols(self) -> list[str]:
        return ["".join(map(str, p)) for p in _S3] + ["|"]

    def random_inputs(self, max_len: int, rng: np.random.Generator) -> list[int]:
        """The marker, then 1..max_len - 1 permutations."""
        return [self.start_id, *super().random_inputs(max_len - 1, rng)]

    def encode_text(self, text: str) -> list[int]:
        ids = super().encode_text(text)
        return ids if ids[:1] == [self.start_id] else [self.start_id, *ids]

    def target(self, inputs: list[int]) -> list[int]:
        arrangement = _S3[0]  # the identity, "012"
        for i in inputs:
            if i != self.start_id:
                p = _S3[i - sequences.NUM_RESERVED_IDS]
                arrangement = tuple(arrangement[j] for j in p)
        return [_S3.index(arrangement) + sequences.NUM_RESERVED_IDS]

    def input_labels(self, inputs: tf.Tensor) -> tf.Tensor:
        then = tf.constant(_THEN, tf.int32)  # [6, 6]
        length = tf.shape(inputs)[-1]
        rows = tf.reshape(inputs, [-1, length])  # [N, S]
        symbols = tf.transpose(rows) - sequences.NUM_RESERVED_IDS  # [S, N]: 0..5 permutations

        def apply(state, p):  # state, p [N]
            moved = tf.gather(then, state)  # [N, 6]
            moved = tf.gather(moved, tf.clip_by_value(p, 0, self.base - 1), batch_dims=1)  # [N]
            return tf.where((p >= 0) & (p < self.base), moved, state)

        start = tf.zeros_like(symbols[0])  # [N]: "012"
        reached = tf.transpose(tf.scan(apply, symbols, initializer=start))  # [N, S]
        return tf.reshape(reached, tf.shape(inputs)) + sequences.NUM_RESERVED_IDS  # [..., S]


def to_digits(number: int, base: int) -> list[int]:
    """Little-endian digits of a non-negative number."""
    digits = [number % base]
    while number >= base:
        number //= base
        digits.append(number % base)
    return digits


def from_digits(digits: list[int], base: int) -> int:
    """The number of little-endian `digits`."""
    return sum(d * base**i for i, d in enumerate(digits))


class AdditionProblem(AlgorithmicProblem):
    """inputs: n1 SEP n2 (little-endian digits); targets: n1 + n2.

    The separator's id is base + 2, inside the vocabulary (tensor2tensor
    used id == vocab_size, one past its end).
    """

    @property
    def separator_id(self) -> int:
        return self.base + sequences.NUM_RESERVED_IDS

    def symbols(self) -> list[str]:
        """The digits, then "+" for the separator: "3 1 + 4" is 13 + 4 little-endian."""
        return [*super().symbols(), "+"]

    @property
    def vocab_size(self) -> int:
        return self.base + sequences.NUM_RESERVED_IDS + 1

    def random_number(self, num_digits: int, rng: np.random.Generator) -> list[int]:
        """Little-endian digits with a non-zero most significant digit (unless 1 digit)."""
        digits = rng.integers(0, self.base, size=num_digits).tolist()
        if num_digits > 1:
            digits[-1] = int(rng.integers(1, self.base))
        return digits

    def generate_examples(
        self, split: str, rng: np.random.Generator
    ) -> Iterator[dict[str, list[int]]]:
        num_examples, _ = self._split(split)
        max_len = self.split_length(split)  # len(n1) + 1 + len(n2) <= max_len
        for _ in range(num_examples):
            len1 = int(rng.integers(1, max_len // 2 + 1))
            len2 = int(rng.integers(1, max_len - len1))
            n1, n2 = self.random_number(len1, rng), self.random_number(len2, rng)
            total = to_digits(from_digits(n1, self.base) + from_digits(n2, self.base), self.base)
            shift = sequences.NUM_RESERVED_IDS
            yield {
                "inputs": [d + shift for d in n1] + [self.separator_id] + [d + shift for d in n2],
                "targets": [d + shift for d in total],
            }


def _register_family(task: str, cls: type, bases=(("binary", 2), ("decimal", 10))) -> None:
    for length in (40, 20):
        for base_name, base in bases:
            attributes = {"base": base, "train_length": length, "test_length": 10 * length}
            subclass = type(f"{cls.__name__}{base_name.title()}{length}", (cls,), attributes)
            problem.register(f"algorithmic_{task}_{base_name}{length}")(subclass)


_register_family("identity", AlgorithmicProblem)
_register_family("reverse", ReverseProblem)
_register_family("addition", AdditionProblem)
_register_family("parity", ParityProblem, bases=(("binary", 2),))
_register_family("sort", SortProblem)
_register_family("permute", PermuteProblem, bases=(("three", 6),))
