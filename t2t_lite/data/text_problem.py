"""Text-to-text problems: parallel text -> a subword vocabulary -> TFRecords.

A subclass yields (source, target, where) pairs per split; generate_data
learns a vocabulary shared by source and target from the training pairs,
saves it in the data dir, and writes the encoded examples. Empty pairs are
skipped and over-long ones dropped, both counted in the log. The vocabulary
is bound to the problem (`bind`) wherever it is used: t2t-train copies it
into the run dir, so decoding and export need only the run dir.
"""

import os
from collections.abc import Iterator

import numpy as np
from absl import logging

from t2t_lite.data import graph_tokenizer, problem, subword, tfrecord


class Text2TextProblem(problem.Problem):
    """Source text -> target text with one shared subword vocabulary."""

    vocab_target_size = 8000
    # Pairs longer than this many subwords on either side are dropped.
    max_sequence_length = 256
    splits = {"train": (0, 10), "dev": (0, 1)}  # example counts come from the data
    reports_bleu = True
    # Text2Self problems (language models) have no source: inputs are just EOS.
    has_source = True

    def __init__(self):
        self._tokenizer: subword.SubwordTokenizer | None = None

    def text_pairs(self, data_dir: str, split: str) -> Iterator[tuple[str, str, str]]:
        """(source, target, where) for every pair of `split`; where names file and line."""
        raise NotImplementedError

    def generate_examples(self, split, rng):
        raise NotImplementedError  # generate_data reads text_pairs instead

    @property
    def vocab_filename(self) -> str:
        return f"{self.name}.vocab"

    def learn_vocabulary(self, lines: list[str]) -> list[str]:
        return subword.learn(lines, self.vocab_target_size)

    # Vocabulary.

    def bind(self, directory: str) -> None:
        """Reads the vocabulary saved in `directory` (a data dir or a run dir)."""
        tokens = subword.load(os.path.join(directory, self.vocab_filename))
        self._tokenizer = subword.SubwordTokenizer(tokens)

    def save_assets(self, directory: str) -> None:
        subword.save(self.tokenizer.tokens, os.path.join(directory, self.vocab_filename))

    @property
    def tokenizer(self) -> subword.SubwordTokenizer:
        if self._tokenizer is None:
            raise ValueError(
                f"problem {self.name!r} has no vocabulary loaded: run t2t-datagen for it first"
            )
        return self._tokenizer

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def max_length(self, split: str) -> int:
        return self.max_sequence_length + 1

    def encode_text(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode_text(self, ids: list[int]) -> str:
        ids = list(ids)
        if problem.EOS_ID in ids:
            ids = ids[: ids.index(problem.EOS_ID)]
        return self.tokenizer.decode([i for i in ids if i != problem.PAD_ID])

    def graph_tokenizer(self, data_dir: str) -> graph_tokenizer.GraphTokenizer:
        if data_dir:
            self.bind(data_dir)
        return self.tokenizer

    # Data.

    def has_data(self, data_dir: str) -> bool:
        vocab = os.path.join(data_dir, self.vocab_filename)
        return os.path.exists(vocab) and super().has_data(data_dir)

    def generate_data(self, data_dir: str, seed: int = 1) -> dict[str, int]:
        """Learns the vocabulary from the training pairs, then writes every split."""
        os.makedirs(data_dir, exist_ok=True)
        train = list(self._clean_pairs(data_dir, problem.TRAIN))
        lines = [text for source, target, _ in train for text in (source, target)]
        tokens = self.learn_vocabulary(lines)
        subword.save(tokens, os.path.join(data_dir, self.vocab_filename))
        self.bind(data_dir)
        logging.info("%s: vocabulary of %d tokens.", self.name, len(tokens))
        counts = {}
        for split in sorted(self.splits):
            pairs = train if split == problem.TRAIN else self._clean_pairs(data_dir, split)
            if split == problem.TRAIN:  # shuffled once, so shards mix the whole corpus
                order = np.random.default_rng(seed).permutation(len(train))
                pairs = [train[i] for i in order]
            examples = self._encode(pairs, split)
            counts[split] = tfrecord.write_shards(examples, self.filepaths(data_dir, split))
        return counts

    def _clean_pairs(self, data_dir: str, split: str) -> Iterator[tuple[str, str, str]]:
        empty = 0
        for source, target, where in self.text_pairs(data_dir, split):
            if (self.has_source and not source.strip()) or not target.strip():
                empty += 1
                continue
            yield source, target, where
        if empty:
            logging.info("%s %s: skipped %d pair(s) with an empty side.", self.name, split, empty)

    def _encode(self, pairs, split: str) -> Iterator[dict[str, list[int]]]:
        too_long = 0
        for source, target, _ in pairs:
            inputs, targets = self.encode_text(source), self.encode_text(target)
            if max(len(inputs), len(targets)) > self.max_sequence_length:
                too_long += 1
                continue
            yield {"inputs": inputs + [problem.EOS_ID], "targets": targets + [problem.EOS_ID]}
        if too_long:
            logging.info(
                "%s %s: dropped %d pair(s) longer than %d subwords.",
                self.name, split, too_long, self.max_sequence_length,
            )  # fmt: skip


class CharacterVocabulary:
    """A character-level vocabulary: every character of the text is a token."""

    @staticmethod
    def learn(lines: list[str]) -> list[str]:
        words = subword.count_words(lines)
        chars = sorted({char for word in words for char in word})
        return [*subword.RESERVED, *chars, *(subword.SUFFIX + c for c in chars)]
