"""The bAbI tasks' text format (Weston et al., 2015): read and write.

A file holds stories. Each line is "<n> <sentence>", n counting from 1 in
each story (a line numbered 1 starts a new story); a question line is
"<n> <question>\\t<answer>\\t<supporting line numbers>", the answer a word or
comma-separated words (lists, paths). Every question makes one example: the
story's statements before it (earlier questions are not facts), the
question, the answer words and the task (from the file name, "qa<k>_...").
"""

import dataclasses
import os
import re

from t2t_lite import files

_TASK = re.compile(r"qa(\d+)_")
_WORD = re.compile(r"[^\s.?!,;]+")


@dataclasses.dataclass(frozen=True)
class Example:
    facts: tuple[tuple[str, ...], ...]  # the statements before the question, as words
    question: tuple[str, ...]
    answer: tuple[str, ...]
    supporting: tuple[int, ...]  # indices into facts
    task: int  # 0: unknown
    where: str = ""  # "file:line" of the question


def words(sentence: str) -> tuple[str, ...]:
    """Lower-cased words of one sentence, punctuation dropped."""
    return tuple(_WORD.findall(sentence.lower()))


def task_of(path: str) -> int:
    """The task number in a bAbI file name (qa3_three-supporting-facts_train.txt -> 3), or 0."""
    match = _TASK.search(os.path.basename(path))
    return int(match.group(1)) if match else 0


def parse_lines(lines: list[str], source: str, task: int = 0) -> list[Example]:
    """The examples of a file's lines; a malformed line is a ValueError naming it."""
    examples: list[Example] = []
    facts: list[tuple[str, ...]] = []
    fact_of_line: dict[int, int] = {}
    expected = 1
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"{source}:{number}"
        head, _, text = line.partition(" ")
        if not head.isdigit() or not text:
            raise ValueError(f"{where}: expected '<number> <sentence>', got {raw!r}")
        n = int(head)
        if n == 1:
            facts, fact_of_line, expected = [], {}, 1
        elif n != expected:
            raise ValueError(f"{where}: line number {n}, expected 1 or {expected}")
        expected = n + 1
        if "\t" not in text:
            fact_of_line[n] = len(facts)
            facts.append(words(text))
            continue
        fields = text.split("\t")
        if len(fields) < 2 or not fields[1].strip():
            raise ValueError(f"{where}: a question needs '<question>\\t<answer>[\\t<ids>]'")
        supporting = []
        for ref in fields[2].split() if len(fields) > 2 else []:
            if not ref.isdigit() or int(ref) not in fact_of_line:
                raise ValueError(f"{where}: supporting fact {ref!r} is not a statement above")
            supporting.append(fact_of_line[int(ref)])
        answer = tuple(w for part in fields[1].split(",") for w in words(part))
        examples.append(
            Example(tuple(facts), words(fields[0]), answer, tuple(supporting), task, where)
        )
    return examples


def read_file(path: str) -> list[Example]:
    """The examples of one bAbI file (any TensorFlow filesystem)."""
    return parse_lines(files.read_lines(path), path, task_of(path))


def story_lines(
    statements: list[str], questions: dict[int, tuple[str, str, list[int]]]
) -> list[str]:
    """One story in the file format.

    statements: sentences in order; questions: {statements seen so far ->
    (question, answer, supporting statement indices)}, asked after that many.
    """
    lines: list[str] = []
    line_of: dict[int, int] = {}

    def ask(count: int) -> None:
        if count in questions:
            question, answer, supporting = questions[count]
            ids = " ".join(str(line_of[i]) for i in supporting)
            lines.append(f"{len(lines) + 1} {question}\t{answer}\t{ids}")

    for index, sentence in enumerate(statements):
        ask(index)
        line_of[index] = len(lines) + 1
        lines.append(f"{len(lines) + 1} {sentence}")
    ask(len(statements))
    return lines
