"""English constituency parsing on the user's treebank files (the Transformer
paper's section 6.3; tensor2tensor's parsing_english_ptb8k/16k).

    t2t-datagen --problem=parsing_english_ptb --data_dir=D --train_files=PATH/wsj
    t2t-datagen --problem=parsing_from_files --data_dir=D \
        --train_files=train.mrg --dev_files=dev.mrg --test_files=test.mrg

Files: Penn Treebank bracketed files (`.mrg`: many trees per file, over
several lines, in an outer `( ... )`; or one tree per line), named or found
under folders (their `.mrg` files, recursively). The splits:

- --dev_files (and --test_files) named: those;
- else, files named like the WSJ's (`wsj_SSNN.mrg`, SS the section) that
  hold sections 22 and 23: the standard split, 02-21 train, 22 dev, 23 test
  (sections 00, 01 and 24 left out);
- else a split by file, in sorted name order: the last tenth of the files
  test, the tenth before it dev, the rest train (at least one file each).

Each tree is preprocessed (trees.preprocess: empty elements, function tags
and the wrapper removed); the source is its words, the target its
linearized tree (trees.linearize), with part-of-speech tags kept
(`parsing_from_files`, `parsing_english_ptb`) or all `XX` as in Vinyals et
al. 2015 (`parsing_from_files_xx`), or as the words themselves
(`parsing_from_files_words`; the output's tags are `XX`); or the tree as
one label per word (`parsing_from_files_labels`, parsing/tree_labels.py;
tags `XX`). The vocabulary is one token per word
(brackets and labels whole): every symbol of the training targets and the
most frequent training words up to --vocab_size (16,000 by default, the
paper's), other words read as their shape's token (parsing/word_shapes.py:
capitals, digits, hyphen, suffix, e.g. `[UNK-Cap-ed]`; a vocabulary written
before the shapes reads them as `[UNK]`): a --vocab_size below the training
words' count leaves the rarest out, so the shapes are trained. t2t-datagen also writes each
evaluation split's sentences and gold trees (`<problem>-dev.words`,
`<problem>-dev.trees`, the same for test): decode the words file, then
score with `t2t-evalb --gold_file=<...>.trees --test_file=<decoded>`.
"""

import collections
import os
import re

import tensorflow as tf
from absl import logging

from t2t_lite import files
from t2t_lite.data import configured, graph_tokenizer, problem, subword, text_problem
from t2t_lite.parsing import constraints, tree_labels, treebank_text, trees, word_shapes

WSJ_NAME = re.compile(r"^wsj_(\d\d)\d\d\.mrg$", re.IGNORECASE)
WSJ_SPLITS = {"train": range(2, 22), "dev": (22,), "test": (23,)}
EVALUATION_SPLITS = ("dev", "test")
TREE_SUFFIX = ".mrg"


def tree_files(paths: list[str], flag: str) -> list[str]:
    """The files named, and the .mrg files under the folders named (recursively,
    a folder reached again through a link read once), each file once."""
    found = []
    for path in paths:
        if tf.io.gfile.isdir(path):
            inside = files.files_under(path, lambda name: name.lower().endswith(TREE_SUFFIX))
            if not inside:
                raise ValueError(f"{flag}: the folder {path} holds no {TREE_SUFFIX} file")
            found += inside
        elif tf.io.gfile.exists(path):
            found.append(path)
        else:
            raise ValueError(f"{flag}: {path} does not exist")
    kept = list(dict.fromkeys(files.absolute(p) for p in found))
    if len(kept) < len(found):
        logging.warning(
            "%s: %d file(s) named more than once; each read once.", flag, len(found) - len(kept)
        )
    return kept


def refuse_shared_files(chosen: dict[str, list[str]]) -> None:
    """A file in two splits (dev or test files that are also training files)
    would score a model on what it trained on: refused, naming the file."""
    owner = {}
    for split, paths in chosen.items():
        for path in paths:
            if path in owner:
                raise ValueError(
                    f"--{split}_files: {path} is also one of the {owner[path]} files; "
                    "each treebank file may be in one split only"
                )
            owner[path] = split


def split_files(train: list[str]) -> tuple[dict[str, list[str]], str]:
    """One list of files -> ({split: files}, how it was split) (module docstring)."""
    sections = {}
    for path in train:
        match = WSJ_NAME.match(os.path.basename(path))
        if match:
            sections[path] = int(match.group(1))
    if len(sections) == len(train) and {22, 23} <= set(sections.values()):
        chosen = {
            split: [p for p in train if sections[p] in wanted]
            for split, wanted in WSJ_SPLITS.items()
        }
        if chosen["train"]:
            return chosen, "WSJ sections 02-21 train, 22 dev, 23 test"
    ordered = sorted(train, key=os.path.basename)
    if len(ordered) < 3:
        raise ValueError(
            f"--train_files: {len(ordered)} file(s) cannot be split into train, dev and test "
            "by file; name --dev_files and --test_files"
        )
    tenth = max(1, len(ordered) // 10)
    split = {
        "train": ordered[: -2 * tenth],
        "dev": ordered[-2 * tenth : -tenth],
        "test": ordered[-tenth:],
    }
    return split, f"by file: the last {tenth} test, the {tenth} before them dev"


class ParsingProblem(configured.ConfiguredByFiles, text_problem.Text2TextProblem):
    """Words -> a linearized tree, from the treebank files configured for the data dir."""

    vocab_target_size = 16_000
    # The WSJ's longest tree linearizes to about 600 symbols.
    max_sequence_length = 1024
    splits = {"train": (0, 10), "dev": (0, 1), "test": (0, 1)}
    reports_bleu = False
    pos = "keep"  # trees.POS_MODES, or "labels" (ParsingFromFilesLabels)
    takes_test_files = True
    evaluation_splits = EVALUATION_SPLITS  # the splits with gold files

    writes_trees = True

    def decode_constraint(self, hp) -> constraints.Constraint | None:
        """A search that writes only trees of this problem's form (Problem's hook)."""
        return constraints.for_trees(self.graph_tokenizer("").vocabulary(), self.pos, hp)

    # Files.

    reads = "your treebank"

    def configure(
        self,
        data_dir: str,
        train_files: list[str],
        dev_files: list[str],
        vocab_size: int = 0,
        test_files: list[str] | None = None,
    ) -> None:
        if not train_files:
            raise ValueError(f"problem {self.name!r} needs --train_files (treebank files)")
        if vocab_size < 0:
            raise ValueError(
                f"--vocab_size must be 0 (the problem's {self.vocab_target_size:,}) or more, "
                f"not {vocab_size}"
            )
        train = tree_files(train_files, "--train_files")
        if dev_files or test_files:
            if not dev_files or not test_files:
                raise ValueError(
                    f"problem {self.name!r}: name both --dev_files and --test_files, or neither "
                    "(then the split comes from the training files)"
                )
            chosen = {
                "train": train,
                "dev": tree_files(dev_files, "--dev_files"),
                "test": tree_files(test_files, "--test_files"),
            }
            how = "as named"
            refuse_shared_files(chosen)
        else:
            chosen, how = split_files(train)
        logging.info(
            "%s: %s; %s",
            self.name,
            how,
            ", ".join(f"{split} {len(paths)} file(s)" for split, paths in chosen.items()),
        )
        config = {split: list(paths) for split, paths in chosen.items()}
        config["split"] = how
        config["vocab_size"] = vocab_size or self.vocab_target_size
        self.write_config(data_dir, config)

    def split_trees(self, data_dir: str, split: str):
        """(preprocessed tree, "file:line: tree N") of every tree of `split`'s files."""
        for path in self._config(data_dir)[split]:
            for number, (tree, line) in enumerate(
                trees.read_trees(files.read_text(path), path), start=1
            ):
                where = f"{path}:{line}: tree {number}"
                kept = trees.preprocess(tree)
                if kept is None:
                    raise trees.TreeError(f"{where} has no words (only empty elements)")
                yield kept, where

    def text_pairs(self, data_dir: str, split: str):
        for tree, where in self.split_trees(data_dir, split):
            try:
                target = self.target(tree)
            except ValueError as err:  # a tree the problem's target cannot write
                raise trees.TreeError(f"{where}: {err}") from None
            yield " ".join(tree.words()), target, where

    def gold_paths(self, data_dir: str, split: str) -> tuple[str, str]:
        """(the split's sentences, one per line; its gold trees, one per line)."""
        stem = os.path.join(data_dir, f"{self.name}-{split}")
        return stem + ".words", stem + ".trees"

    def data_files(self, data_dir: str) -> list[str]:
        gold = [p for split in EVALUATION_SPLITS for p in self.gold_paths(data_dir, split)]
        return [*super().data_files(data_dir), *gold]

    def generate_data(self, data_dir: str, seed: int = 1) -> dict[str, int]:
        self.vocab_target_size = int(self._config(data_dir)["vocab_size"])
        counts = super().generate_data(data_dir, seed)
        for split in EVALUATION_SPLITS:
            sentences, gold = [], []
            for tree, _ in self.split_trees(data_dir, split):
                sentences.append(" ".join(tree.words()) + "\n")
                gold.append(trees.output_line(tree) + "\n")
            words_path, trees_path = self.gold_paths(data_dir, split)
            files.write_atomically(words_path, "".join(sentences))
            files.write_atomically(trees_path, "".join(gold))
        return counts

    # Vocabulary: one token per word.

    def learn_vocabulary(self, lines: list[str]) -> list[str]:
        """lines: sources and targets, alternating (the vocabulary sample's order)."""
        symbols = collections.Counter(s for line in lines[1::2] for s in line.split())
        words = collections.Counter(w for line in lines[0::2] for w in line.split())
        reserved = list(subword.RESERVED)
        tokens = reserved + [s for s, _ in symbols.most_common() if s not in reserved]
        # The shapes unknown words read as (parsing/word_shapes.py), before the words.
        tokens += [s for s in word_shapes.tokens() if s not in tokens]
        room = self.vocab_target_size - len(tokens)
        if room <= 0 and words:
            raise ValueError(
                f"--vocab_size={self.vocab_target_size} leaves no room for a word: the "
                f"training trees' symbols and the word shapes are {len(tokens)} tokens (0 keeps the "
                f"default, {type(self).vocab_target_size:,})"
            )
        known = set(tokens)
        tokens += [w for w, _ in words.most_common() if w not in known][:room]
        return tokens

    def bind(self, directory: str) -> None:
        tokens = subword.load(os.path.join(directory, self.vocab_filename))
        self._tokenizer = graph_tokenizer.WordTokenizer(tokens, subword.UNK)

    # Decoding: raw text split as the treebank writes it, and a tree over the
    # input's words, whatever the model wrote.

    def input_lines(self, lines: list[str], hp) -> list[str]:
        if hp.parse_input == "tokens":
            return lines
        return [" ".join(treebank_text.tokenize(line)) for line in lines]

    def decoded_lines(self, sources: list[str], ids: list[list[int]]) -> list[str]:
        """As the base class; a count of the outputs that were not trees over their
        sentences as written, and were mended (an unconstrained search), is logged."""
        lines, mended = [], 0
        for source, text in zip(sources, self.decode_texts(ids), strict=True):
            line, changed = self._decoded(source, text)
            lines.append(line)
            mended += changed
        if mended:
            logging.warning(
                "%d of %d decoded line(s) were not trees over their sentences as written "
                "and were mended (%s); %s.",
                mended,
                len(lines),
                self.mending,
                self.unmended_search,
            )
        return lines

    def postprocess_decode(self, source: str, text: str) -> str:
        return self._decoded(source, text)[0]

    def _decoded(self, source: str, text: str) -> tuple[str, bool]:
        """(the tree line for `text` over `source`'s words, or "" for an empty
        source; whether the output had to be mended)."""
        words = source.split()
        if not words:
            return "", False
        tree, changed = self.tree_from(text.split(), words)
        return trees.output_line(tree), changed

    # How a target is written and read back: a linearized tree (trees.linearize).

    mending = "the words slid into place"  # how tree_from mends an output
    # The search that writes no output to mend.
    unmended_search = (
        "a tree-constrained search (decode_hparams tree_constraint=True, the tensorflow "
        "engine) writes none"
    )

    def target(self, tree: trees.Tree) -> str:
        return trees.linearize(tree, self.pos)

    def tree_from(self, symbols: list[str], words: list[str]) -> tuple[trees.Tree, bool]:
        """A decode's symbols -> (a tree over exactly `words`, whether the symbols
        had to be mended to make it)."""
        changed = not trees.is_tree_over(symbols, len(words))
        tags = [
            trees.NORMALIZED_TAG
            if symbol == subword.UNK
            or word_shapes.is_shape(symbol)
            or (self.pos == "word" and not symbol.startswith(("(", ")")))
            else symbol
            for symbol in symbols
        ]
        return trees.repair(tags, words), changed


@problem.register("parsing_from_files")
class ParsingFromFiles(ParsingProblem):
    """Part-of-speech tags kept in the target."""


@problem.register("parsing_english_ptb")
class ParsingEnglishPtb(ParsingProblem):
    """tensor2tensor's name: the WSJ treebank, a 16K vocabulary, tags kept."""


@problem.register("parsing_from_files_xx")
class ParsingFromFilesXX(ParsingProblem):
    """Every tag written as XX (Vinyals et al. 2015): the model learns brackets only."""

    pos = "normalize"


@problem.register("parsing_from_files_words")
class ParsingFromFilesWords(ParsingProblem):
    """Every preterminal written as its word: the decoder reads the sentence as it
    writes the tree's brackets, and tags are not predicted (XX in the output)."""

    pos = "word"


@problem.register("parsing_from_files_labels")
class ParsingFromFilesLabels(ParsingProblem):
    """One label per word (tree_labels: Gómez-Rodríguez and Vilares 2018): the
    decoder writes as many symbols as the sentence has words, each saying how
    its word joins the next, so output position i stands for input word i;
    tags are not predicted (XX in the output)."""

    pos = "labels"
    aligned_targets = True  # a tagger (transformer_encoder) reads word i for label i
    mending = (
        "tree_labels.decode: a missing or malformed label read as a neutral one, an "
        "unnamed constituent left out, a conflicting label or a count past its bounds ignored"
    )
    unmended_search = (
        "decode_hparams label_constraint=strict writes none (the default search keeps "
        "only the labels' shape: docs/parsing.md, round 6)"
    )

    def target(self, tree: trees.Tree) -> str:
        """The tree's labels; ValueError for a tree they cannot describe as it is
        (tree_labels.encode_exactly)."""
        return " ".join(tree_labels.encode_exactly(tree))

    def tree_from(self, symbols: list[str], words: list[str]) -> tuple[trees.Tree, bool]:
        tree, mended = tree_labels.decode(symbols, words)
        return tree, mended > 0
