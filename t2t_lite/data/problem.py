"""The Problem base class: generate examples, write TFRecords, read tf.data."""

import abc
import hashlib
import os
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from t2t_lite import progress, registry, sequences
from t2t_lite.data import batching, decode_constraint, graph_tokenizer, tfrecord

TRAIN = "train"
PARSE_BATCH = 1024  # records parsed and filtered at once (Problem.dataset)


def register(name: str):
    """Registers a Problem subclass under `name` and sets its `name`."""

    def decorator(cls):
        cls.name = name
        return registry.PROBLEMS.register(name)(cls)

    return decorator


def get(name: str) -> "Problem":
    """An instance of the problem registered as `name`."""
    return registry.PROBLEMS.get(name)()


class Problem(abc.ABC):
    """A dataset: how to generate it, where its files live, how to read them.

    Subclasses set `vocab_size`, `splits` (split -> (num_examples, num_shards))
    and implement `generate_examples`. Every sequence ends with EOS; PAD is 0.
    """

    name = "problem"
    vocab_size = 2
    splits: dict[str, tuple[int, int]] = {TRAIN: (1000, 1), "dev": (100, 1)}
    # The split evaluated during training; all non-train splits are evaluated
    # at the end.
    eval_split = "dev"
    # Text problems: evaluation also decodes and reports BLEU on detokenized text.
    reports_bleu = False
    # What the model's encoder reads (sequences.INPUT_ENCODINGS): "tokens";
    # "facts" (bAbI); "none": no source, the model is decoder-only.
    input_encoding = "tokens"
    # Problems whose every input position has a label (`input_labels`), for
    # the auxiliary loss on the encoder's positions (input_label_loss_weight).
    has_input_labels = False
    # Problems whose target is aligned with the source, symbol for symbol (the
    # i-th target symbol labels the i-th input symbol): what an encoder-only
    # tagger (models/encoder_only.py) can learn.
    aligned_targets = False
    # Problems whose decoded lines are bracketed trees, one sentence each:
    # t2t-decode rates them in sentences/s, t2t-visualize draws them.
    writes_trees = False

    @abc.abstractmethod
    def generate_examples(
        self, split: str, rng: np.random.Generator
    ) -> Iterator[dict[str, list[int]]]:
        """Yields {"inputs": ids, "targets": ids} without EOS."""

    @abc.abstractmethod
    def max_length(self, split: str) -> int:
        """The longest sequence (EOS included) that `split` can hold."""

    def input_labels(self, inputs: tf.Tensor) -> tf.Tensor:
        """inputs [..., S] int32 (EOS included, padding 0 after it) -> [..., S]
        int32 target-vocabulary ids: each position's label, e.g. the answer for
        the input up to that position; whatever at padding, which callers mask
        (`has_input_labels` problems only). Batched, so the input pipeline
        runs it once per batch."""
        raise NotImplementedError(f"{self.name} has no input labels")

    # Text.

    def encode_text(self, text: str) -> list[int]:
        """One line of user text -> ids without EOS; ValueError says what is wrong."""
        raise ValueError(f"problem {self.name!r} has no text encoding")

    def decode_text(self, ids: list[int]) -> str:
        """Ids (up to EOS; PAD skipped) -> text."""
        raise ValueError(f"problem {self.name!r} has no text encoding")

    def encode_texts(self, texts: list[str]) -> list[list[int]]:
        """encode_text of many lines (a subword vocabulary encodes them together)."""
        return [self.encode_text(text) for text in texts]

    def decode_texts(self, ids: list[list[int]]) -> list[str]:
        """decode_text of many outputs (a subword vocabulary decodes them together)."""
        return [self.decode_text(line) for line in ids]

    def input_lines(self, lines: list[str], hp) -> list[str]:
        """The lines a user gave to decode, as the model reads them (decode hparams
        `hp`): as they are, but for a parsing problem's raw text, split into
        the treebank's words."""
        del hp
        return lines

    def decode_constraint(self, hp) -> decode_constraint.Constraint | None:
        """What this problem's decodes may write under decode hparams `hp`
        (data/decode_constraint.py): None, anything; a parsing problem holds
        its searches to trees (parsing/constraints.py)."""
        del hp
        return None

    def postprocess_decode(self, source: str, text: str) -> str:
        """What t2t-decode writes for the decoded `text` of the input line `source`.
        The text itself by default; a problem may use the source: a parsing
        problem builds a tree over the source's words from whatever symbols the
        model wrote (trees.repair)."""
        del source
        return text

    def decoded_lines(self, sources: list[str], ids: list[list[int]]) -> list[str]:
        """What t2t-decode writes for each decode `ids[i]` of the input line `sources[i]`."""
        texts = self.decode_texts(ids)
        return [self.postprocess_decode(s, text) for s, text in zip(sources, texts, strict=True)]

    def decoded_line(self, source: str, ids: list[int]) -> str:
        return self.decoded_lines([source], [ids])[0]

    def bind(self, directory: str) -> None:
        """Loads what the problem keeps in a data or run dir (e.g. a vocabulary)."""
        del directory  # nothing, by default

    def save_assets(self, directory: str) -> None:
        """Copies what `bind` reads into `directory` (t2t-train: the run dir)."""
        del directory  # nothing, by default

    def graph_tokenizer(self, data_dir: str) -> "graph_tokenizer.GraphTokenizer":
        """encode_text/decode_text as TensorFlow ops (for exports); data_dir holds vocabularies."""
        raise ValueError(
            f"problem {self.name!r} has no in-graph tokenizer, so it cannot serve text"
        )

    # Files.

    def filepaths(self, data_dir: str, split: str) -> list[str]:
        """The shard paths of `split` in `data_dir`."""
        _, num_shards = self._split(split)
        return tfrecord.shard_paths(os.path.join(data_dir, f"{self.name}-{split}"), num_shards)

    def data_files(self, data_dir: str) -> list[str]:
        """Every file generate_data writes in data_dir: each split's shards."""
        return [path for split in sorted(self.splits) for path in self.filepaths(data_dir, split)]

    def data_stamp(self, data_dir: str) -> str:
        """What data_dir's files are now: a hash of each one's name, size and write
        time. Regenerated data gets another stamp, so figures taken on the old
        files are not read as the new ones'; the same files keep theirs."""
        entries = []
        for path in self.data_files(data_dir):
            if tf.io.gfile.exists(path):
                stat = tf.io.gfile.stat(path)
                entries.append(f"{os.path.basename(path)} {stat.length} {stat.mtime_nsec}")
        return hashlib.sha256("\n".join(entries).encode()).hexdigest()[:16]

    def data_fingerprint(self, data_dir: str) -> str:
        """What data_dir's files hold: a hash of each one's name and bytes. Unlike
        data_stamp, the same data written again (or copied to another filesystem)
        keeps it; any changed byte changes it. Reads every file whole."""
        digest = hashlib.sha256()
        for path in self.data_files(data_dir):
            if not tf.io.gfile.exists(path):
                continue
            size = tf.io.gfile.stat(path).length  # framing: where one file's bytes end
            digest.update(f"{os.path.basename(path)} {size}\n".encode())
            with tf.io.gfile.GFile(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
        return digest.hexdigest()[:16]

    def missing_data(self, data_dir: str) -> list[str]:
        """The data files that do not exist (all of them for a new data dir)."""
        return [path for path in self.data_files(data_dir) if not tf.io.gfile.exists(path)]

    def split_files(self, data_dir: str, split: str) -> list[str]:
        """The shard paths of `split`, every one existing; else the one missing-data error.

        Every reader of a split (training, evaluation, t2t-decode, reports)
        comes through here, so a missing file is reported the same way.
        """
        paths = self.filepaths(data_dir, split)
        missing = []
        for path in paths:  # one look at each path: missing, a directory, or a shard
            if not tf.io.gfile.exists(path):
                missing.append(path)
            elif tf.io.gfile.isdir(path):
                raise ValueError(f"{path} is a directory, not a data shard of {self.name}")
        if missing:
            found = tf.io.gfile.glob(os.path.join(data_dir, f"{self.name}-*"))
            raise FileNotFoundError(
                f"missing data files for problem {self.name!r} split {split!r}: {missing[:3]}"
                f"{' ...' if len(missing) > 3 else ''}; found {len(found)} file(s) in {data_dir!r}. "
                f"Run t2t-datagen --problem={self.name} --data_dir={data_dir} first."
            )
        return paths

    def has_data(self, data_dir: str) -> bool:
        """True when every data file exists."""
        return not self.missing_data(data_dir)

    def generate_data(self, data_dir: str, seed: int = 1) -> dict[str, int]:
        """Writes every split's shards; the same seed gives byte-identical files."""
        tf.io.gfile.makedirs(data_dir)
        counts = {}
        for index, split in enumerate(sorted(self.splits)):
            rng = np.random.default_rng([seed, index])
            total = self.splits[split][0]
            shown = progress.Progress(f"{self.name} {split}: generating", total, "examples")

            def examples(split=split, rng=rng, shown=shown):
                for count, example in enumerate(self.generate_examples(split, rng), start=1):
                    shown.update(count)  # a line every half minute: a long first run speaks
                    yield {key: sequences.with_eos(list(ids)) for key, ids in example.items()}

            counts[split] = tfrecord.write_shards(examples(), self.filepaths(data_dir, split))
        return counts

    def _split(self, split: str) -> tuple[int, int]:
        if split not in self.splits:
            raise ValueError(
                f"problem {self.name!r} has no split {split!r}; splits: {sorted(self.splits)}"
            )
        return self.splits[split]

    # Pipelines.

    def fit_dataset(self, data_dir: str, split: str, batch_size: int, **options) -> tf.data.Dataset:
        """`dataset`'s batches (`options`: its keywords) as Keras's `fit` takes them:
        (features, targets), where a model's call(features) gives logits [B, T, V]
        for targets [B, T] (PAD, 0, to be ignored: `SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0)`). The train split repeats forever:
        give `steps_per_epoch`."""
        batches = self.dataset(data_dir, split, batch_size, **options)
        return batches.map(lambda features: (features, features["targets"]))

    def dataset(
        self,
        data_dir: str,
        split: str,
        batch_size: int,
        max_length: int | None = None,
        seed: int | None = None,
        input_context: tf.distribute.InputContext | None = None,
        length_limit: tf.Variable | None = None,
        input_labels: bool = False,
        length_bucket_step: float = sequences.LENGTH_BUCKET_STEP,
    ) -> tf.data.Dataset:
        """Batched {"inputs": [B, S], "targets": [B, T]} int32 batches of `split`.

        Training (split "train") shuffles, drops examples longer than
        `max_length`, repeats forever and fills every batch; other splits are
        read once, in order, with nothing dropped. `batch_size` is a token
        budget per replica. `length_limit` (training only): an int32 variable,
        read as examples pass, above which they are skipped too (a length
        curriculum raises it as training goes). `input_labels`: the batches
        also hold "input_labels" [B, S], `input_labels` of each example's
        inputs, 0 (no label) at padding. `length_bucket_step`: the length
        buckets' growth (sequences.bucket_lengths).
        """
        paths = self.split_files(data_dir, split)
        training = split == TRAIN
        files = tf.data.Dataset.from_tensor_slices(paths)
        if input_context and input_context.num_input_pipelines > 1:
            files = files.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        if training:
            files = files.shuffle(len(paths), seed=seed)
        records = files.interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(len(paths), 8),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        if training:
            records = records.shuffle(10_000, seed=seed)
        vocab_size = self.vocab_size
        limit = self.max_length(split)
        longest = max_length if training else None
        if longest is not None:
            limit = min(limit, longest)
        curriculum = length_limit if training else None

        bounds = [bound for bound in (longest, curriculum) if bound is not None]

        def parse_and_filter(serialized):  # [N] records -> {key: [N', (len)]} kept rows
            rows = tfrecord.parse(serialized, vocab_size)
            if not bounds:  # not training: every record is kept
                return rows
            lengths = batching.row_lengths(rows)  # [N]; the curriculum's variable read here
            keep = tf.reduce_all([lengths <= bound for bound in bounds], axis=0)  # [N]
            return {key: tf.ragged.boolean_mask(value, keep) for key, value in rows.items()}

        # Parsed and filtered PARSE_BATCH records at a time, then one example at
        # a time again, in the records' order: a length curriculum's first
        # lengths keep one record in twenty or fewer, and a parse per record made
        # reading, not training, the cost of those steps.
        examples = (
            records.batch(PARSE_BATCH)
            .map(parse_and_filter, num_parallel_calls=tf.data.AUTOTUNE)
            .unbatch()  # rows come out as ragged specs of rank 0; the map makes them tensors
            .map(lambda example: {key: tf.identity(ids) for key, ids in example.items()})
        )
        if training:
            examples = examples.repeat()
        batches = batching.bucket_by_tokens(
            examples, batch_size, limit, length_bucket_step, drop_remainder=training
        )
        if input_labels:  # per batch, after the filters: only kept examples are labelled
            batches = batches.map(self.with_input_labels, num_parallel_calls=tf.data.AUTOTUNE)
        return batches.prefetch(tf.data.AUTOTUNE)

    def with_input_labels(self, batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """A batch with "input_labels" [B, S] added: `input_labels`, 0 at padding."""
        inputs = batch["inputs"]  # [B, S]
        labels = self.input_labels(inputs) * tf.cast(inputs > 0, tf.int32)  # [B, S]
        return {**batch, "input_labels": labels}
