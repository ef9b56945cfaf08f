"""The Learning to Execute program grammar (Zaremba and Sutskever, 2015).

A program is built by `nesting` operations drawn uniformly from OPERATIONS;
each takes its operands from the previous operation's result (when there is
one) and fresh numbers, and the program prints the last result. Numbers,
loop counts and multipliers draw their size from the "mix" strategy: every
draw picks a fresh length in 1..`length`, and a number of that length is
uniform in 1..10**length; the nesting is uniform in 1..`nesting`. Lines are
joined with "#", as the reference generator writes them; `python_source`
turns a program back into Python.

Every operation keeps the reference generator's text, e.g. "(12+7)",
"(3*(12+7))", "b=(12+7);" then "(b-4)", "c=5" then
"for x in range(8):c+=12", and "(7 if 12>3 else 9)".
"""

import dataclasses

import numpy as np

OPERATIONS = ("pair", "smallmul", "equality", "vars", "small_loop", "ifstat")
CONTROL_OPERATIONS = ("small_loop", "ifstat")
VARIABLES = "abcdefghij"
LINE_SEPARATOR = "#"


@dataclasses.dataclass(frozen=True)
class Program:
    code: tuple[str, ...]  # statements before the print, in order
    expression: str  # what the program prints
    value: int  # the expression's value, as Python computes it
    operations: tuple[str, ...] = ()  # the operations that built it, in order

    @property
    def text(self) -> str:
        """The program as one line: statements, then print(expression), joined by '#'."""
        return LINE_SEPARATOR.join([*self.code, f"print({self.expression})"])


def python_source(text: str) -> str:
    """A program's one-line text -> Python source."""
    return text.replace(LINE_SEPARATOR, "\n")


class ProgramGenerator:
    """Draws programs of the grammar with `rng` (numpy Generator).

    `randint(n)` is uniform in 1..n, the reference generator's random(n).
    """

    def __init__(
        self,
        rng: np.random.Generator,
        length: int,
        nesting: int,
        operations: tuple[str, ...] = OPERATIONS,
    ):
        unknown = set(operations) - set(OPERATIONS)
        if unknown or not operations:
            raise ValueError(f"operations must be a non-empty subset of {OPERATIONS}")
        # Each operation takes at most one fresh variable.
        if length < 1 or not 1 <= nesting <= len(VARIABLES):
            raise ValueError(f"need length >= 1 and nesting in 1..{len(VARIABLES)}")
        self.rng = rng
        self.length = length
        self.nesting = nesting
        self.operations = operations
        self._stack: list[tuple[str, int]] = []
        self._variables: list[str] = []

    def randint(self, n: int) -> int:
        return int(self.rng.integers(1, n + 1))

    def hardness(self) -> int:
        """The mix strategy's length for one draw: uniform in 1..length."""
        return self.randint(self.length)

    def program(self) -> Program:
        self._stack = []
        self._variables = list(self.rng.permutation(list(VARIABLES)))
        code: list[str] = []
        names = []
        for _ in range(self.randint(self.nesting)):
            names.append(self.operations[int(self.rng.integers(len(self.operations)))])
            lines, expression, value = getattr(self, f"_{names[-1]}")()
            code.extend(lines)
            self._stack.append((expression, value))
        expression, value = self._stack.pop()
        return Program(tuple(code), expression, value, tuple(names))

    # Operands.

    def _operand(self) -> tuple[str, int]:
        """The previous result, or else a fresh number."""
        if self._stack:
            return self._stack.pop()
        value = self.randint(10 ** self.hardness())
        return str(value), value

    def _operands(self, count: int) -> list[tuple[str, int]]:
        """`count` operands; the previous result lands in a random slot."""
        slots = self.rng.permutation(count)
        operands: list[tuple[str, int]] = [("", 0)] * count
        for slot in slots:
            operands[int(slot)] = self._operand()
        return operands

    def _variable(self) -> str:
        return self._variables.pop(0)

    # Operations: each returns (statements, expression, value).

    def _pair(self):
        (a, va), (b, vb) = self._operands(2)
        if self.randint(2) == 1:
            return [], f"({a}+{b})", va + vb
        return [], f"({a}-{b})", va - vb

    def _smallmul(self):
        a, va = self._operand()
        factor = self.randint(4 * self.hardness())
        if self.randint(2) == 1:
            return [], f"({a}*{factor})", va * factor
        return [], f"({factor}*{a})", va * factor

    def _equality(self):
        a, va = self._operand()
        return [], a, va

    def _vars(self):
        variable = self._variable()
        (a, va), (b, vb) = self._operands(2)
        if self.randint(2) == 1:
            return [f"{variable}={a};"], f"({variable}+{b})", va + vb
        return [f"{variable}={a};"], f"({variable}-{b})", va - vb

    def _small_loop(self):
        variable = self._variable()
        (a, va), (b, vb) = self._operands(2)
        count = self.randint(4 * self.hardness())
        op, value = ("+", va + count * vb) if self.randint(2) == 2 else ("-", va - count * vb)
        lines = [f"{variable}={a}", f"for x in range({count}):{variable}{op}={b}"]
        return lines, variable, value

    def _ifstat(self):
        (a, va), (b, vb), (c, vc), (d, vd) = self._operands(4)
        if self.randint(2) == 1:
            return [], f"({c} if {a}>{b} else {d})", vc if va > vb else vd
        return [], f"({c} if {a}<{b} else {d})", vc if va < vb else vd


def addition_program(rng: np.random.Generator, length: int) -> Program:
    """The addition task: print((a+b)), a and b of the same number of digits,
    that number uniform in 1..length (the mix strategy)."""
    digits = int(rng.integers(1, length + 1))
    low = 10 ** (digits - 1) if digits > 1 else 1
    a, b = (int(rng.integers(low, 10**digits)) for _ in range(2))
    return Program((), f"({a}+{b})", a + b, ("pair",))


def max_program_chars(length: int, nesting: int) -> int:
    """An upper bound on `Program.text`'s length for the grammar at (length, nesting).

    Each operation moves the previous result into its own text once and adds
    at most its own characters and fresh numbers: a number has at most
    length + 1 digits (10**length), a multiplier or loop count those of
    4 * length. The worst operations are the loop (25 characters, a count, a
    number) and the if-statement (13 characters, three numbers); the first
    operation may take one more fresh number; print( ) adds 7.
    """
    number = length + 1
    small = len(str(4 * length))
    per_operation = max(25 + small + number, 13 + 3 * number, 9 + number, 3 + small, 3 + number)
    return 7 + number + nesting * per_operation


def max_value_chars(length: int, nesting: int) -> int:
    """An upper bound on the printed result's length (a minus sign included)."""
    bound = number = 10**length
    for _ in range(nesting):
        bound = max(bound + number, 4 * length * bound, number + 4 * length * bound)
    return len(str(bound)) + 1
