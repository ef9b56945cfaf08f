"""bAbI question answering (Weston et al., 2015) as the UT paper trains it.

The model reads facts (input_encoding "facts", layers/facts.py): inputs
are each statement's words then FACT_END, the question last, then EOS;
the target is the answer's words (one word for tasks 1-3), decoded by a
one-position decoder that attends to the encoded facts. A problem's splits
are "train", "dev" (all tasks) and one per task ("test_qa<k>" for generated
stories, "dev_qa<k>" for a user's files), so metrics.json has the error
rate per task (1 - sequence accuracy).

    t2t-datagen --problem=babi_qa_generated --data_dir=D
    t2t-datagen --problem=babi_qa_from_files --data_dir=D \\
        --train_files=en-valid-10k/qa1_train.txt,... --dev_files=en-valid-10k/qa1_valid.txt,...
"""

import abc
import json
import os
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite import files, sequences
from t2t_lite.data import problem
from t2t_lite.problems import babi_format, babi_generator

VOCAB_HEAD = (sequences.PAD_TOKEN, sequences.EOS_TOKEN, sequences.FACT_END_TOKEN)
# As MemN2N: a story's most recent statements (older ones are dropped).
MAX_FACTS = 50
MAX_FACT_WORDS = 12  # bounds the token length: (MAX_FACTS + 1) * (words + 1)


class BabiProblem(problem.Problem):
    """Word-level bAbI examples; the vocabulary (and task list) is learned at datagen."""

    input_encoding = "facts"
    base_splits = ("train", "dev")

    def __init__(self):
        self.tokens: list[str] | None = None
        self.tasks: tuple[int, ...] = ()

    # Subclasses.

    @abc.abstractmethod
    def examples(self, data_dir: str, split: str, rng) -> Iterator[babi_format.Example]:
        """The split's examples (rng: the generator's, for generated problems)."""

    @abc.abstractmethod
    def task_split(self, task: int) -> str:
        """The name of the evaluation split of one task."""

    # Splits and vocabulary.

    @property
    def splits(self) -> dict[str, tuple[int, int]]:
        names = [*self.base_splits, *(self.task_split(t) for t in self.tasks)]
        return {name: (0, 1) for name in names}

    @property
    def vocab_filename(self) -> str:
        return f"{self.name}.vocab.json"

    @property
    def vocab_size(self) -> int:
        return len(self._tokens())

    def _tokens(self) -> list[str]:
        if self.tokens is None:
            raise ValueError(
                f"problem {self.name!r} has no vocabulary loaded: run t2t-datagen first"
            )
        return self.tokens

    def bind(self, directory: str) -> None:
        data = json.loads(files.read_text(os.path.join(directory, self.vocab_filename)))
        self._set_tokens(list(data["tokens"]))
        self.tasks = tuple(data["tasks"])

    def _set_tokens(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self._ids = {token: i for i, token in enumerate(tokens)}

    def save_assets(self, directory: str) -> None:
        record = {"tokens": self._tokens(), "tasks": list(self.tasks)}
        files.write_atomically(os.path.join(directory, self.vocab_filename), json.dumps(record))

    def data_files(self, data_dir: str) -> list[str]:
        return [os.path.join(data_dir, self.vocab_filename), *super().data_files(data_dir)]

    def missing_data(self, data_dir: str) -> list[str]:
        if not tf.io.gfile.exists(os.path.join(data_dir, self.vocab_filename)):
            # Written last: without it no split is known complete, as in a new data dir.
            return self.data_files(data_dir)
        self.bind(data_dir)
        return super().missing_data(data_dir)

    def max_length(self, split: str) -> int:
        return (MAX_FACTS + 1) * (MAX_FACT_WORDS + 1) + 1

    def generate_data(self, data_dir: str, seed: int = 1) -> dict[str, int]:
        """Learns the word vocabulary from every split, then writes each split."""
        self.tasks = self.known_tasks(data_dir)
        words = set()
        for index, split in enumerate(sorted(self.splits)):
            for ex in self.examples(data_dir, split, np.random.default_rng([seed, index])):
                words.update(w for fact in (*ex.facts, ex.question, ex.answer) for w in fact)
        self._set_tokens([*VOCAB_HEAD, *sorted(words - set(VOCAB_HEAD))])
        self._data_dir = data_dir
        tf.io.gfile.makedirs(data_dir)
        counts = super().generate_data(data_dir, seed)
        self.save_assets(data_dir)  # last: has_data is true only once every split is written
        return counts

    def known_tasks(self, data_dir: str) -> tuple[int, ...]:
        return self.tasks

    def generate_examples(self, split, rng) -> Iterator[dict[str, list[int]]]:
        for ex in self.examples(self._data_dir, split, rng):
            yield self.encode_example(ex)

    # Encoding.

    def encode_example(self, ex: babi_format.Example) -> dict[str, list[int]]:
        inputs: list[int] = []
        for fact in (*ex.facts[-MAX_FACTS:], ex.question):
            inputs += self._word_ids(fact[:MAX_FACT_WORDS], ex.where) + [sequences.FACT_END_ID]
        return {"inputs": inputs, "targets": self._word_ids(ex.answer, ex.where)}

    def _word_ids(self, words, where: str) -> list[int]:
        self._tokens()
        unknown = [w for w in words if w not in self._ids]
        if unknown:
            raise ValueError(f"{where}: word {unknown[0]!r} is not in the vocabulary")
        return [self._ids[w] for w in words]

    def encode_text(self, text: str) -> list[int]:
        """A story on one line: "Mary went to the office. Where is Mary?" -> fact ids."""
        sentences = [s for s in _sentences(text) if babi_format.words(s)]
        if not sentences:
            raise ValueError("expected sentences ending with '.' or '?', the question last")
        ids: list[int] = []
        for sentence in sentences[-(MAX_FACTS + 1) :]:
            words = babi_format.words(sentence)[:MAX_FACT_WORDS]
            ids += self._word_ids(words, "input") + [sequences.FACT_END_ID]
        return ids

    def decode_text(self, ids: list[int]) -> str:
        tokens = self._tokens()
        return " ".join(tokens[i] for i in sequences.until_eos(ids) if i < len(tokens))


def _sentences(text: str) -> list[str]:
    sentences, current = [], []
    for char in text:
        current.append(char)
        if char in ".?!":
            sentences.append("".join(current))
            current = []
    if "".join(current).strip():
        sentences.append("".join(current))
    return sentences


class GeneratedBabi(BabiProblem):
    """bAbI-style stories of tasks 1-3 from problems/babi_generator.py (not the published data)."""

    questions_per_task = {"train": 1000, "dev": 200}
    test_questions = 1000
    generated_tasks: tuple[int, ...] = babi_generator.TASKS

    def __init__(self):
        super().__init__()
        self.tasks = self.generated_tasks

    def task_split(self, task: int) -> str:
        return f"test_qa{task}"

    def examples(self, data_dir, split, rng) -> Iterator[babi_format.Example]:
        if split in self.questions_per_task:
            tasks, count = self.tasks, self.questions_per_task[split]
        else:
            tasks, count = (int(split.removeprefix("test_qa")),), self.test_questions
        for task in tasks:
            produced = 0
            while produced < count:
                statements, questions = babi_generator.story(task, rng)
                lines = babi_format.story_lines(statements, questions)
                for ex in babi_format.parse_lines(lines, f"{self.name}-{split}", task):
                    if produced < count:
                        produced += 1
                        yield ex


@problem.register("babi_qa_generated")
class GeneratedBabi10k(GeneratedBabi):
    """Tasks 1-3, 10,000 training questions each (the paper's 10k setting)."""

    questions_per_task = {"train": 10_000, "dev": 500}


@problem.register("babi_qa_generated_1k")
class GeneratedBabi1k(GeneratedBabi):
    """Tasks 1-3, 1,000 training questions each (the 1k setting)."""


class SingleTaskBabi(GeneratedBabi):
    """One task, 10,000 training questions (the paper's "10k, train single")."""

    questions_per_task = {"train": 10_000, "dev": 500}


for _task in babi_generator.TASKS:
    problem.register(f"babi_qa_generated_task{_task}")(
        type(f"GeneratedBabiTask{_task}", (SingleTaskBabi,), {"generated_tasks": (_task,)})
    )


@problem.register("babi_qa_from_files")
class BabiFromFiles(BabiProblem):
    """The published bAbI files (1k or 10k, single task or joint), read, not downloaded.

    --train_files and --dev_files list bAbI text files; a file's task comes
    from its name (qa<k>_...). Each task among the dev files gets a split
    dev_qa<k> for its error rate.
    """

    def config_path(self, data_dir: str) -> str:
        return os.path.join(data_dir, f"{self.name}.files.json")

    def configure(self, data_dir, train_files, dev_files, vocab_size: int = 0) -> None:
        del vocab_size  # word-level: every word of the files
        if not train_files or not dev_files:
            raise ValueError(f"problem {self.name!r} needs --train_files and --dev_files")
        for path in (*train_files, *dev_files):
            if not tf.io.gfile.exists(path):
                raise ValueError(f"{path}: no such bAbI file")
        config = {
            "train": [files.absolute(p) for p in train_files],
            "dev": [files.absolute(p) for p in dev_files],
        }
        files.write_atomically(self.config_path(data_dir), json.dumps(config, indent=2))

    def _files(self, data_dir: str, split: str) -> list[str]:
        path = self.config_path(data_dir)
        if not tf.io.gfile.exists(path):
            raise ValueError(
                f"problem {self.name!r} reads your files: run t2t-datagen --problem={self.name} "
                f"--data_dir={data_dir} --train_files=... --dev_files=... first"
            )
        config = json.loads(files.read_text(path))
        if split in config:
            return config[split]
        task = int(split.removeprefix("dev_qa"))
        return [p for p in config["dev"] if babi_format.task_of(p) == task]

    def known_tasks(self, data_dir: str) -> tuple[int, ...]:
        tasks = {babi_format.task_of(p) for p in self._files(data_dir, "dev")}
        return tuple(sorted(tasks - {0}))

    def task_split(self, task: int) -> str:
        return f"dev_qa{task}"

    def examples(self, data_dir, split, rng) -> Iterator[babi_format.Example]:
        del rng
        for path in self._files(data_dir, split):
            yield from babi_format.read_file(path)
