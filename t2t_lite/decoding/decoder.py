"""Decoding a trained model: decode hparams, a compiled search, batches of lines."""

import dataclasses
import math
from collections.abc import Iterator

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import hparams as hparams_lib
from t2t_lite import progress, sequences
from t2t_lite.data import decode_constraint
from t2t_lite.decoding import search, tagging

# Decode hparams' upper bounds: far above any use (the parsing paper's beam is
# 21, its outputs input + 300 symbols), far below what exhausts a machine.
MAX_BEAM_SIZE = 256
MAX_LENGTH = 16_384
MAX_BATCH_SIZE = 65_536


PARSE_INPUTS = ("text", "tokens")
LABEL_CONSTRAINTS = ("shape", "strict")


@dataclasses.dataclass(frozen=True)
class DecodeHParams:
    """--decode_hparams; names follow tensor2tensor."""

    beam_size: int = 1  # 1: greedy (or sampling when temperature > 0)
    alpha: float = 0.6  # length penalty ((5 + len) / 6) ** alpha
    extra_length: int = 50  # outputs are at most input length + extra_length
    min_length: int = 0  # EOS is not chosen before this many symbols (when the limit allows)
    batch_size: int = 32  # inputs per batch (lines are batched by length)
    return_beams: bool = False  # write all beam_size hypotheses, tab-separated
    write_beam_scores: bool = False  # append each hypothesis' score
    temperature: float = 0.0
    top_k: int = 0  # sample among the k most likely (0: all)
    seed: int = 0  # sampling seed
    # Longer inputs are truncated to this many symbols, with a warning naming
    # the line (the models have no hard limit; this bounds memory).
    max_input_length: int = 1024
    # Parsing problems' input lines: "text", raw English split into words as
    # the Penn Treebank writes them (parsing/treebank_text.py; text already split
    # so comes back unchanged); "tokens", the line's words as they are.
    parse_input: str = "text"
    # Parsing problems: the search writes only well-formed trees with one
    # preterminal per input word (parsing/constraints.py); False: any
    # symbols, made a tree afterwards by the problem's repair.
    tree_constraint: bool = True
    # One label per word (parsing/constraints.py's LabelConstraint):
    # "shape", a label for each word, the count of shared constituents within
    # its bounds (the decode counts what it changes: an unnamed constituent
    # left out, a second name ignored); "strict", also only labels that
    # decode as they stand (1.5 points of dev F1 below "shape" under greedy
    # search on round 6's seed 1: docs/parsing.md).
    label_constraint: str = "shape"

    def __post_init__(self):
        require = hparams_lib.require

        def within(key: str, low: int, high: int) -> None:
            value = getattr(self, key)
            require(low <= value <= high, key, f"must be in [{low}, {high:,}], got {value:,}")

        # Upper bounds keep a typo from reaching an out-of-memory traceback.
        within("beam_size", 1, MAX_BEAM_SIZE)
        require(math.isfinite(self.alpha) and self.alpha >= 0, "alpha", "must be finite, >= 0")
        within("extra_length", 1, MAX_LENGTH)
        within("min_length", 0, MAX_LENGTH)
        within("batch_size", 1, MAX_BATCH_SIZE)
        require(
            math.isfinite(self.temperature) and self.temperature >= 0,
            "temperature",
            f"must be finite and >= 0, got {self.temperature}",
        )
        require(self.top_k >= 0, "top_k", "must be >= 0")
        within("max_input_length", 1, MAX_LENGTH)
        require(
            self.label_constraint in LABEL_CONSTRAINTS,
            "label_constraint",
            f"must be one of {', '.join(LABEL_CONSTRAINTS)}, got {self.label_constraint!r}",
        )
        require(
            self.parse_input in PARSE_INPUTS,
            "parse_input",
            f"must be one of {', '.join(PARSE_INPUTS)}, got {self.parse_input!r}",
        )
        require(
            self.beam_size == 1 or (self.temperature == 0 and self.top_k == 0),
            "beam_size, temperature, top_k",
            "sampling (temperature > 0 or top_k > 0) needs beam_size=1",
        )

    @property
    def num_outputs(self) -> int:
        return self.beam_size if self.return_beams else 1

    @property
    def max_source_positions(self) -> int:
        """Positions of the longest input the decoder takes: its symbols, then EOS."""
        return self.max_input_length + 1

    @property
    def max_output_positions(self) -> int:
        """Positions of the longest output: input symbols + extra_length, then EOS."""
        return self.output_positions(self.max_input_length)

    def output_positions(self, input_symbols):
        """Positions of the longest output for an input of `input_symbols` (int or tensor)."""
        return input_symbols + self.extra_length + 1


# Searches over at most this many rows (batch_size x beam_size) are
# XLA-compiled unless the caller says otherwise (t2t-decode --xla_compile).
# Measured (docs/benchmarks.md): XLA removes per-op overhead and writes the
# caches in place, a large win for greedy search and small batches; with
# more rows, beam search's per-step reordering of whole preallocated caches
# under XLA costs more than reordering TensorFlow's growing caches.
XLA_MAX_ROWS = 32


# Named searches for --decode_hparams: a name stands for its settings, and
# settings after it override them ("parsing,batch_size=8").
PRESETS = {
    # The Transformer paper's parsing search (section 6.3): beam 21, alpha 0.3,
    # outputs up to input length + 300.
    "parsing": "beam_size=21,alpha=0.3,extra_length=300",
}


def decode_hparams(text: str, base: DecodeHParams | None = None) -> DecodeHParams:
    """--decode_hparams -> DecodeHParams: presets by name (PRESETS), then key=value
    settings, over `base` (the defaults when None)."""
    hp = base or DecodeHParams()
    settings = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        if "=" in item:
            settings.append(item)
        elif item in PRESETS:
            hp = hparams_lib.override(hp, PRESETS[item])
        else:
            raise ValueError(
                f"--decode_hparams: {item!r} is neither key=value nor a preset "
                f"(presets: {', '.join(sorted(PRESETS))})"
            )
    return hparams_lib.override(hp, ",".join(settings))


class Decoder:
    """Searches a model's cached decoder: padded input ids -> ids and scores.

    The search is one tf.function, traced once (under XLA once per input
    shape: batches are padded to batch_size rows and to a bucket length). XLA-compiled when
    `xla_compile` says so, by default for at most XLA_MAX_ROWS search rows.
    """

    def __init__(
        self,
        model: keras.Model,
        hp: DecodeHParams,
        xla_compile: bool | None = None,
        constraint: decode_constraint.Constraint | None = None,
    ):
        self.model = model
        self.hp = hp
        self.constraint = constraint  # what the search may write (None: anything)
        if xla_compile is None:
            xla_compile = hp.batch_size * hp.beam_size <= XLA_MAX_ROWS
        self.xla_compile = xla_compile
        # XLA compiles per shape; otherwise one trace serves every batch shape
        # (a trace per bucket length would cost seconds each). The search is
        # written in TensorFlow's own loops and conditions, so AutoGraph has
        # nothing to convert: without it the trace takes a third of the time
        # (docs/benchmarks.md, start-up).
        signature = None if self.xla_compile else [tf.TensorSpec([None, None], tf.int32)]
        self.search = tf.function(
            self.search_ids,
            jit_compile=self.xla_compile,
            input_signature=signature,
            autograph=False,
        )
        # A tagger's greedy search: one forward pass and the constraint's walk
        # (decoding/tagging.py; decode_ids's, not search_ids's, which exports trace).
        self.tagging = (
            tagging.TaggingSearch(model, constraint) if tagging.applies(model, hp) else None
        )

    def search_ids(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """inputs [B, S] (EOS-terminated, PAD after) -> (ids [B, K, T], scores [B, K]).

        Row i's output has at most (its input length + extra_length) symbols
        before EOS: past that, EOS is the only choice; before min_length
        symbols EOS is never chosen. T is the longest row's length +
        extra_length + 1 (under XLA: S + extra_length, fixed per input
        shape); rows of any length share one trace.

        A decoder-only model (a language model) reads each input as a
        prompt: its symbols are forced as the first outputs (through the
        same cached steps), then the search continues; the returned ids and
        scores are the continuation's alone, at most extra_length symbols.
        """
        hp = self.hp
        batch_size = tf.shape(inputs)[0]
        symbols = sequences.symbol_lengths(inputs)  # [B]
        prompted = not getattr(self.model, "has_encoder", True)
        prompt_lengths = symbols if prompted else tf.zeros_like(symbols)  # [B]
        prompt_rows = tf.repeat(prompt_lengths, hp.beam_size)  # [B*K]
        prompt_ids = tf.repeat(inputs, hp.beam_size, axis=0)  # [B*K, S]
        # Positions for the longest output and its EOS. XLA needs it static
        # (from the padded shape); otherwise it is the batch's own, so the
        # caches are no longer than this batch needs.
        longest = tf.shape(inputs)[1] - 1 if self.xla_compile else tf.reduce_max(symbols)
        max_length = hp.output_positions(longest)
        limits = tf.repeat(symbols + hp.extra_length, hp.beam_size)  # [B*K] beam rows
        encoded, bias = self.model.encode(inputs)
        # Caches that grow with the output (attention and beam reordering cost
        # the prefix, not the maximum); XLA needs fixed shapes.
        cache = self.model.init_cache(encoded, bias, max_length if self.xla_compile else None)
        constraint = self.constraint
        if constraint is not None:
            cache[decode_constraint.KEY] = constraint.initial_state(inputs, hp.extra_length)

        def step_fn(ids, index, cache):
            if constraint is None:
                logits, cache = self.model.decode_step(ids, index, cache)
            else:  # the tree so far allows only some symbols; its state rides in the cache
                state = cache[decode_constraint.KEY]
                model_cache = {k: v for k, v in cache.items() if k != decode_constraint.KEY}
                logits, cache = self.model.decode_step(ids, index, model_cache)
                logits, state = constraint.step(ids, logits, state, search.NEG)
                cache = {**cache, decode_constraint.KEY: state}
            rows = tf.shape(ids)[0]
            vocab = tf.range(tf.shape(logits)[-1])  # [V]
            is_eos = vocab == sequences.EOS_ID  # [V]
            if hp.min_length:
                early = (index < prompt_rows[:rows] + hp.min_length)[:, tf.newaxis]  # [N, 1]
                logits = tf.cond(
                    tf.reduce_any(early),
                    lambda: tf.where(early & is_eos, search.NEG, logits),
                    lambda: logits,
                )
            if prompted:
                # The prompt's symbol is the only choice, with log-prob 0.
                forced = (index < prompt_rows[:rows])[:, tf.newaxis]  # [N, 1]
                column = tf.minimum(index, tf.shape(prompt_ids)[1] - 1)
                token = tf.gather(prompt_ids[:rows], column, axis=1)[:, tf.newaxis]  # [N, 1]
                logits = tf.where(forced, tf.where(vocab == token, 0.0, search.NEG), logits)
            over = (index >= limits[: tf.shape(ids)[0]])[:, tf.newaxis]  # [N, 1]
            # Rewriting [N, V] logits costs a pass: only at steps where a row is over.
            logits = tf.cond(
                tf.reduce_any(over),
                lambda: tf.where(over, tf.where(is_eos, 0.0, search.NEG), logits),
                lambda: logits,
            )
            return logits, cache

        if hp.beam_size > 1:
            ids, scores = search.beam_search(
                step_fn, cache, batch_size, max_length, hp.beam_size, hp.alpha
            )
        else:
            ids, scores = search.sample(
                step_fn, cache, batch_size, max_length, hp.temperature, hp.top_k, (hp.seed, 0)
            )
            ids, scores = ids[:, tf.newaxis], scores[:, tf.newaxis]  # [B, 1, T], [B, 1]
        if prompted:
            ids = drop_prompt(ids, prompt_lengths)
        return ids, scores

    def fit(self, ids: list[int], where: str) -> list[int]:
        """An input cut to max_input_length symbols, with a warning naming `where`."""
        return sequences.truncate(ids, self.hp.max_input_length, where)

    def decode_ids(
        self, inputs: list[list[int]], source: str = "input", first_line: int = 1
    ) -> list[list[tuple[list[int], float]]]:
        """Inputs without EOS -> per input, its hypotheses (ids up to EOS, score), best first.

        Inputs longer than max_input_length are truncated (`fit`; the warning
        names f"{source}:{line}", lines counted from first_line). They are
        sorted by length and batched; outputs come back in input order.
        An empty input gives [([], 0.0)] without running the model, except
        for a decoder-only model, which continues an empty prompt.
        """
        limit = self.hp.max_input_length
        inputs = [
            ids if len(ids) <= limit else self.fit(ids, f"{source}:{n}")
            for n, ids in enumerate(inputs, first_line)
        ]
        results: list = [None] * len(inputs)
        # A language model continues an empty prompt; a translation of nothing is nothing.
        decode_empty = not getattr(self.model, "has_encoder", True)
        done = 0
        shown = progress.Progress(f"decoding {source}", sum(1 for i in inputs if i or decode_empty))
        fixed = self.tagging is None  # eager: each batch as long as its longest row
        trace = sum(map(len, inputs)) >= tagging.TRACE_FROM_SYMBOLS
        for indices, batch in self.batches(inputs, decode_empty, fixed):
            if self.tagging is not None:
                ids, scores = self.tagging(batch, trace)
            else:
                ids, scores = self.search(tf.constant(batch))
                ids, scores = ids.numpy(), scores.numpy()
            for row, index in enumerate(indices):
                results[index] = [
                    (sequences.until_eos(ids[row, k]), float(scores[row, k]))
                    for k in range(self.hp.num_outputs)
                ]
            done += len(indices)
            shown.update(done)  # the rate from the first batch on (after tracing)
        for index in range(len(inputs)):
            if results[index] is None:
                results[index] = [([], 0.0)]
        return results

    def batches(
        self, inputs: list[list[int]], with_empty: bool = False, fixed: bool = True
    ) -> Iterator[tuple[list[int], np.ndarray]]:
        """(original indices, [batch_size, bucket] padded ids) for non-empty inputs
        (and empty ones when `with_empty`); not `fixed`: [rows, longest + 1],
        the batch's own rows and length (nothing traced per shape)."""
        order = sorted(
            (i for i, ids in enumerate(inputs) if ids or with_empty), key=lambda i: len(inputs[i])
        )
        size = self.hp.batch_size
        for start in range(0, len(order), size):
            indices = order[start : start + size]
            longest = max(len(inputs[i]) for i in indices) + 1  # EOS
            rows = [sequences.with_eos(inputs[i]) for i in indices]
            if not fixed:
                yield indices, sequences.pad_batch(rows, longest)
                continue
            bucket = sequences.doubling_bucket(longest)  # few distinct traced shapes
            # Fixed rows: short batches are filled with empty inputs (EOS only).
            rows += [sequences.with_eos([])] * (size - len(indices))
            yield indices, sequences.pad_batch(rows, bucket)


def drop_prompt(ids: tf.Tensor, lengths: tf.Tensor) -> tf.Tensor:
    """ids [B, K, T] whose row b starts with a prompt of lengths[b] symbols ->
    the continuations [B, K, T], moved to the front, PAD after."""
    length = tf.shape(ids)[2]
    positions = tf.range(length)[tf.newaxis, :] + lengths[:, tf.newaxis]  # [B, T]
    moved = tf.gather(ids, tf.minimum(positions, length - 1), axis=2, batch_dims=1)  # [B, K, T]
    return tf.where((positions < length)[:, tf.newaxis, :], moved, sequences.PAD_ID)
