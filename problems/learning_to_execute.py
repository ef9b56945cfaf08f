"""Learning to Execute (Zaremba and Sutskever, 2015), as the UT paper's section 3.5 uses it.

Character-level sequence to sequence problems, registered as:

- memorization (Table 5 of the UT paper): `lte_copy`, `lte_double`,
  `lte_reverse`. A random digit string of 1..55 digits (uniform: the mix
  strategy) is the target; the input is the string itself, the string twice
  ("input doubling"), or the string reversed ("input reversing"), the
  reference paper's three memorization settings.
- program evaluation (Table 6): `lte_program` (every operation of the
  grammar in problems/lte_programs.py), `lte_control` (only the control flow:
  for-loops and if-statements), `lte_addition` (print((a+b)) with a and b of
  the same number of digits). The input is the program's text, the target
  what Python prints for it. Programs use the reference generator's default
  difficulty, length 6 and nesting 3 (addition: 9 digits), sampled with the
  mix strategy; the UT paper does not state its own.

Splits are disjoint by construction, as in the reference generator: an
example belongs to split k of (train, dev, test) when a hash of its text is
k modulo 3, so no dev or test program is ever trained on.
"""

import abc
import zlib
from collections.abc import Iterator

import numpy as np

from t2t_lite import sequences
from t2t_lite.data import graph_tokenizer, problem
from t2t_lite.problems import lte_programs

# Every character the grammar writes; id = 2 + index.
CHARACTERS = "0123456789abcdefghijklmnopqrstuvwxyz()+-*=<>:;# "
CHARACTER_IDS = {c: i + sequences.NUM_RESERVED_IDS for i, c in enumerate(CHARACTERS)}
SPLIT_KINDS = {"train": 0, "dev": 1, "test": 2}
MEMORIZATION_LENGTH = 55


class LearningToExecute(problem.Problem):
    """Characters in, characters out; subclasses draw one example's texts."""

    splits = {"train": (100_000, 10), "dev": (1_000, 1), "test": (1_000, 1)}
    vocab_size = sequences.NUM_RESERVED_IDS + len(CHARACTERS)

    @abc.abstractmethod
    def draw(self, rng: np.random.Generator) -> tuple[str, str]:
        """One example: (input text, target text)."""

    @abc.abstractmethod
    def max_chars(self) -> tuple[int, int]:
        """Upper bounds on (input, target) characters."""

    def max_length(self, split: str) -> int:
        self._split(split)
        return max(self.max_chars()) + 1  # EOS

    def generate_examples(
        self, split: str, rng: np.random.Generator
    ) -> Iterator[dict[str, list[int]]]:
        num_examples, _ = self._split(split)
        kind = SPLIT_KINDS.get(split, SPLIT_KINDS["test"])
        produced = 0
        while produced < num_examples:
            source, target = self.draw(rng)
            if zlib.crc32(f"{source}@{target}".encode()) % 3 != kind:
                continue
            produced += 1
            yield {"inputs": self.encode_text(source), "targets": self.encode_text(target)}

    # Text: one character per token.

    def encode_text(self, text: str) -> list[int]:
        unknown = sorted({c for c in text if c not in CHARACTER_IDS})
        if unknown:
            raise ValueError(
                f"unknown character {unknown[0]!r}; {self.name} expects characters from "
                f"{CHARACTERS!r}"
            )
        return [CHARACTER_IDS[c] for c in text]

    def decode_text(self, ids: list[int]) -> str:
        symbols = sequences.until_eos(ids)
        return "".join(
            CHARACTERS[i - sequences.NUM_RESERVED_IDS] for i in symbols if i < self.vocab_size
        )

    def graph_tokenizer(self, data_dir: str) -> graph_tokenizer.GraphTokenizer:
        del data_dir  # the characters are fixed
        return graph_tokenizer.CharacterTokenizer(CHARACTERS, sequences.NUM_RESERVED_IDS)


class Memorization(LearningToExecute):
    """A digit string of 1..55 digits is the target; `present` makes the input."""

    def present(self, digits: str) -> str:
        return digits

    def draw(self, rng: np.random.Generator) -> tuple[str, str]:
        length = int(rng.integers(1, MEMORIZATION_LENGTH + 1))
        digits = "".join(str(int(d)) for d in rng.integers(0, 10, size=length))
        return self.present(digits), digits

    def max_chars(self) -> tuple[int, int]:
        return len(self.present("0" * MEMORIZATION_LENGTH)), MEMORIZATION_LENGTH


@problem.register("lte_copy")
class Copy(Memorization):
    pass


@problem.register("lte_double")
class Double(Memorization):
    def present(self, digits: str) -> str:
        return digits + digits


@problem.register("lte_reverse")
class Reverse(Memorization):
    def present(self, digits: str) -> str:
        return digits[::-1]


class ProgramEvaluation(LearningToExecute):
    """A program of the grammar in; what it prints out."""

    length = 6
    nesting = 3
    operations = lte_programs.OPERATIONS

    def program(self, rng: np.random.Generator) -> lte_programs.Program:
        generator = lte_programs.ProgramGenerator(rng, self.length, self.nesting, self.operations)
        return generator.program()

    def draw(self, rng: np.random.Generator) -> tuple[str, str]:
        program = self.program(rng)
        return program.text, str(program.value)

    def max_chars(self) -> tuple[int, int]:
        return (
            lte_programs.max_program_chars(self.length, self.nesting),
            lte_programs.max_value_chars(self.length, self.nesting),
        )


@problem.register("lte_program")
class Program(ProgramEvaluation):
    pass


@problem.register("lte_control")
class Control(ProgramEvaluation):
    operations = lte_programs.CONTROL_OPERATIONS


@problem.register("lte_addition")
class Addition(ProgramEvaluation):
    length = 9
    nesting = 1

    def program(self, rng: np.random.Generator) -> lte_programs.Program:
        return lte_programs.addition_program(rng, self.length)

    def max_chars(self) -> tuple[int, int]:
        return len(f"print(({'9' * self.length}+{'9' * self.length}))"), self.length + 1
