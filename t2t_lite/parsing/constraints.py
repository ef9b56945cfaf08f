"""Searches that write trees by construction, a parsing problem's
`decode_constraint` (data/decode_constraint.py): a linearized-tree decode
that can only emit balanced brackets and exactly one preterminal per input
word, and one label per word held to the labels' shape.

The search's step function masks the logits of every symbol that would break
the tree at that point, from a small state per hypothesis kept in the decode
cache (so beam search reorders it with the hypotheses):

    depth    open constituents            placed   words written
    words    the input's words            stack    each open level's close symbol
    last_open  whether the last symbol opened a constituent
    emitted  symbols written

Allowed next symbols:

- an open `(X`: while a word is left to write, the depth is below
  trees.CONSTITUENT_LEVELS (so that the tree reads back) and the output limit leaves room for it, its close, the other open levels'
  closes and the words left; not after the root has closed (one root);
- the close of the innermost open constituent (`)X` for `(X`, nothing else):
  unless it would close an empty constituent (the last symbol opened it), or
  close the root before every word is written;
- a preterminal: inside the root, while a word is left: a tag (a symbol of
  the training targets that is no bracket, not one of the vocabulary's
  words), `XX`, or the input's next word itself, by the problem's
  linearization (`trees.POS_MODES`);
- EOS: once the root has closed (then every word is written).

There is always an allowed symbol, so the search never dead-ends, and the
output limit (input length + extra_length, extra_length >= 2: `for_trees`
refuses less, and a min_length, which would forbid the EOS a finished tree
needs) leaves room to finish every tree it allows.

A problem whose trees are one label per word (its `pos` "labels",
parsing/tree_labels.py) is held by `LabelConstraint` to its shape: a word's
label for every word but the last, each keeping the count of shared
constituents within [1, tree_labels.MAX_SHARED] (the depth the tree
reader takes), then a last word's label, then EOS. Every such sequence
decodes to a tree over the words that reads back; the decode counts what
it changes (an unnamed constituent left out, a second name ignored, an
unnamed root named S). With `strict` (decode_hparams
label_constraint=strict) the search admits only sequences that decode as
they stand (tree_labels.decode counts no change), each word's label also

- closes only constituents a label has named (one that ends unnamed would
  be left out);
- names its lowest shared constituent with that constituent's name if a
  label named it before (a second name would be ignored);
- leaves no more unnamed open constituents (the root among them) than
  words' labels are left to name them, one each; and the last word's label
  comes when none is left unnamed (for a sentence of one word, a label with
  a chain: the root).

The last rule counts one label per name; if the vocabulary lacks the label
a hypothesis would need (a count change never seen in training), no label
keeps a row to these rules, and that row falls back to the shape alone:
the search never dead-ends, and what the decode then changes, it counts.
Strict is not the default: under greedy search it commits to names the
shape would let the decode drop, and cost 1.5 points of dev F1 on round
6's seed 1 (73.60 against 75.12; docs/parsing.md).
"""

import numpy as np
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import decode_constraint, subword
from t2t_lite.parsing import tree_labels, trees, word_shapes

MAX_DEPTH = trees.CONSTITUENT_LEVELS  # open constituents a linearized output may nest
PREDICTIONS = ("keep", "normalize", "word")  # as trees.POS_MODES
Constraint = decode_constraint.Constraint


class TreeConstraint(Constraint):
    """The masks and state updates for one vocabulary (`tokens`, in id order)
    and linearization (`pos`: "keep", tags; "normalize", XX; "word", the words)."""

    def __init__(self, tokens: list[str], pos: str, normalized_tag: str = "XX"):
        if pos not in PREDICTIONS:
            raise ValueError(f"pos must be one of {PREDICTIONS}, got {pos!r}")
        self.pos = pos
        index = {token: i for i, token in enumerate(tokens)}
        size = len(tokens)
        is_open = np.zeros(size, bool)
        close_of = np.full(size, -1, np.int32)
        is_close = np.zeros(size, bool)
        for i, token in enumerate(tokens):
            if trees.is_open(token):
                is_open[i] = True
                close_of[i] = index.get(")" + token[1:], -1)
            elif trees.is_close(token):
                is_close[i] = True
        # An open whose close is not in the vocabulary could never be closed.
        is_open &= close_of >= 0
        special = np.zeros(size, bool)
        special[[sequences.PAD_ID, sequences.EOS_ID]] = True
        if pos == "normalize":
            if normalized_tag not in index:
                raise ValueError(f"the vocabulary has no {normalized_tag!r}")
            is_tag = np.arange(size) == index[normalized_tag]
        else:
            is_tag = ~(is_open | is_close | special)
            if pos == "keep":
                is_tag &= _before_the_words(tokens)
        self.is_open = tf.constant(is_open)
        self.is_close = tf.constant(is_close)
        self.close_of = tf.constant(close_of)
        self.is_tag = tf.constant(is_tag)
        self.vocab_size = size

    def initial_state(self, inputs: tf.Tensor, extra_length: int) -> dict[str, tf.Tensor]:
        """inputs [B, S] (EOS-terminated, PAD after) -> the state before any symbol;
        each row's output holds at most its words + extra_length symbols."""
        rows = tf.shape(inputs)[0]
        zeros = tf.zeros([rows], tf.int32)
        words = sequences.symbol_lengths(inputs)  # [B]
        return {
            "depth": zeros,
            "placed": zeros,
            "emitted": zeros,
            "last_open": zeros,
            "words": words,
            "limit": words + extra_length,  # [B]
            "source": tf.cast(inputs, tf.int32),  # [B, S]
            "stack": tf.zeros([rows, MAX_DEPTH], tf.int32),  # [B, D] close ids
        }

    def advance(self, state: dict, ids: tf.Tensor) -> dict:
        """The state after symbols ids [N] (PAD, the start symbol, changes nothing)."""
        opens = tf.gather(self.is_open, ids)  # [N]
        closes = tf.gather(self.is_close, ids)
        real = ids != sequences.PAD_ID
        shifts = real & ~opens & ~closes & (ids != sequences.EOS_ID)
        depth = state["depth"]
        level = tf.one_hot(depth, MAX_DEPTH, on_value=True, off_value=False)  # [N, D]
        pushed = tf.gather(self.close_of, ids)[:, tf.newaxis]  # [N, 1]
        stack = tf.where(level & opens[:, tf.newaxis], pushed, state["stack"])
        return {
            **state,
            "stack": stack,
            "depth": depth + tf.cast(opens, tf.int32) - tf.cast(closes, tf.int32),
            "placed": state["placed"] + tf.cast(shifts, tf.int32),
            "emitted": state["emitted"] + tf.cast(real, tf.int32),
            "last_open": tf.where(real, tf.cast(opens, tf.int32), state["last_open"]),
        }

    def allowed(self, state: dict) -> tf.Tensor:
        """[N, V] True where a symbol keeps the output a tree (module docstring)."""
        depth, placed, words = state["depth"], state["placed"], state["words"]
        left = placed < words  # [N] a word is still to write
        root_done = (depth == 0) & (state["emitted"] > 0)
        # An open needs room for itself, its close, the closes of the levels
        # open and the words left, within the output limit (the root always).
        room = state["emitted"] + 2 + depth + (words - placed) <= state["limit"]
        open_ok = left & (depth < MAX_DEPTH) & ~root_done & (room | (state["emitted"] == 0))
        close_ok = (depth > 0) & (state["last_open"] == 0) & ~((depth == 1) & left)
        shift_ok = left & (depth > 0)
        eos_ok = root_done & ~left
        vocab = tf.range(self.vocab_size)[tf.newaxis]  # [1, V]
        top = tf.gather(state["stack"], tf.maximum(depth - 1, 0), batch_dims=1)  # [N]
        if self.pos == "word":
            column = tf.minimum(placed, tf.shape(state["source"])[1] - 1)
            next_word = tf.gather(state["source"], column, batch_dims=1)  # [N]
            tags = vocab == next_word[:, tf.newaxis]
        else:
            tags = self.is_tag[tf.newaxis]
        return (
            (self.is_open[tf.newaxis] & open_ok[:, tf.newaxis])
            | ((vocab == top[:, tf.newaxis]) & close_ok[:, tf.newaxis])
            | (tags & shift_ok[:, tf.newaxis])
            | ((vocab == sequences.EOS_ID) & eos_ok[:, tf.newaxis])
        )


def _before_the_words(tokens: list[str]) -> np.ndarray:
    """[V] True for the training targets' symbols: a parsing vocabulary holds
    the reserved tokens, the targets' symbols (brackets and tags), the word
    shapes, then the words (ParsingProblem.learn_vocabulary), so a tag is a
    symbol before the first shape and after the reserved ones. A vocabulary
    without shapes (written otherwise) keeps every non-bracket symbol."""
    shapes = set(word_shapes.tokens())
    first = next((i for i, token in enumerate(tokens) if token in shapes), len(tokens))
    index = np.arange(len(tokens))
    return (index >= len(subword.RESERVED)) & (index < first)


class LabelConstraint(Constraint):
    """The masks and state updates for labels, one per word (module docstring),
    over one vocabulary (`tokens`, in id order). State per hypothesis: the
    input's words, the labels written, the constituents shared by the last
    pair (its `shared`), and the name of each open level (`names` [N, D + 1],
    column k for level k, 0 while unnamed; column 0 unused)."""

    def __init__(self, tokens: list[str], strict: bool = False):
        self.strict = strict
        self.tokens = list(tokens)
        size = len(tokens)
        is_pair = np.zeros(size, bool)
        is_last = np.zeros(size, bool)
        change = np.zeros(size, np.int32)
        name = np.zeros(size, np.int32)  # a pair label's constituent name, 1-based
        chained = np.zeros(size, bool)  # a last word's label with a unary chain
        names: dict[str, int] = {}
        for i, token in enumerate(tokens):
            if (pair := tree_labels.read_pair(token)) is not None:
                is_pair[i] = True
                change[i] = pair[0]
                name[i] = names.setdefault(pair[1], len(names) + 1)
            elif (chain := tree_labels.read_last(token)) is not None:
                is_last[i] = True
                chained[i] = bool(chain)
        if not is_pair.any() or not is_last.any():
            raise ValueError("the vocabulary has no word labels (tree_labels) to hold a search to")
        self.is_pair = tf.constant(is_pair)
        self.is_last = tf.constant(is_last)
        self.change = tf.constant(change)
        self.name = tf.constant(name)
        self.chained = tf.constant(chained)
        self.vocab_size = size
        self.levels = tree_labels.MAX_SHARED

    def narrowed(self) -> tuple[np.ndarray, "LabelConstraint"]:
        """PAD, EOS and the word labels: no other symbol is ever allowed."""
        labels = np.flatnonzero(self.is_pair.numpy() | self.is_last.numpy())
        columns = np.concatenate([[sequences.PAD_ID, sequences.EOS_ID], labels]).astype(np.int32)
        return columns, LabelConstraint([self.tokens[i] for i in columns], self.strict)

    def initial_state(self, inputs: tf.Tensor, extra_length: int) -> dict[str, tf.Tensor]:
        """inputs [B, S] (EOS-terminated, PAD after) -> the state before any label."""
        del extra_length  # the output is exactly as long as the input
        rows = tf.shape(inputs)[0]
        zeros = tf.zeros([rows], tf.int32)
        return {
            "words": sequences.symbol_lengths(inputs),
            "placed": zeros,
            "shared": zeros,
            "names": tf.zeros([rows, self.levels + 1], tf.int32),  # [B, D + 1]
        }

    def advance(self, state: dict, ids: tf.Tensor) -> dict:
        """The state after symbols ids [N] (PAD, the start symbol, changes nothing)."""
        real = (ids != sequences.PAD_ID) & (ids != sequences.EOS_ID)  # [N]
        before = state["shared"]
        # A last word's label (change 0, not a pair) ends every level: shared 0.
        shared = tf.where(tf.gather(self.is_pair, ids), before + tf.gather(self.change, ids), 0)
        shared = tf.where(real, shared, before)  # [N]
        level = tf.range(self.levels + 1)[tf.newaxis]  # [1, D + 1]
        # Levels up to min(before, shared) stay open with their names; the rest
        # closed (above shared) or are new (above before): unnamed.
        kept = level <= tf.minimum(before, shared)[:, tf.newaxis]
        names = tf.where(kept, state["names"], 0)
        # The pair's name goes to its lowest shared level if that has none.
        at = (
            (level == shared[:, tf.newaxis])
            & (names == 0)
            & tf.gather(self.is_pair, ids)[:, tf.newaxis]
        )
        names = tf.where(at, tf.gather(self.name, ids)[:, tf.newaxis], names)
        return {
            **state,
            "placed": state["placed"] + tf.cast(real, tf.int32),
            "shared": shared,
            "names": tf.where(real[:, tf.newaxis], names, state["names"]),
        }

    def allowed(self, state: dict) -> tf.Tensor:
        """[N, V] True where a label keeps the output a tree that decodes as it
        stands (module docstring)."""
        left = (state["words"] - state["placed"])[:, tf.newaxis]  # [N, 1]
        before = state["shared"][:, tf.newaxis]  # [N, 1]
        names = state["names"]  # [N, D + 1]
        shared = before + self.change[tf.newaxis]  # [N, V]
        in_bounds = (shared >= 1) & (shared <= self.levels)
        vocab = tf.range(self.vocab_size)[tf.newaxis]  # [1, V]
        relaxed = (
            (self.is_pair[tf.newaxis] & in_bounds & (left >= 2))
            | (self.is_last[tf.newaxis] & (left == 1))
            | ((vocab == sequences.EOS_ID) & (left <= 0))
        )
        if not self.strict:
            return relaxed
        level = tf.range(self.levels + 1)[tf.newaxis]  # [1, D + 1]
        unnamed = (names == 0) & (level >= 1) & (level <= before)  # [N, D + 1] open, unnamed
        highest_unnamed = tf.reduce_max(tf.where(unnamed, level, 0), axis=1, keepdims=True)
        unnamed_below = tf.cumsum(tf.cast(unnamed, tf.int32), axis=1)  # [N, D + 1]: levels 1..k
        clipped = tf.clip_by_value(shared, 0, self.levels)  # [N, V]
        name_there = tf.gather(names, clipped, batch_dims=1)  # [N, V]
        stays = shared <= before  # the lowest shared level was open already
        consistent = ~stays | (name_there == 0) | (name_there == self.name[tf.newaxis])
        # Open levels left unnamed after the label: those below it, less the one it
        # names, plus the new ones it opens above the old count but below its own.
        unnamed_after = (
            tf.gather(unnamed_below, tf.minimum(clipped, before), batch_dims=1)
            - tf.cast(stays & (name_there == 0), tf.int32)
            + tf.maximum(shared - before - 1, 0)
        )
        pairs_after = left - 2  # word labels still to come after this one
        strict = (
            relaxed
            & ~(
                self.is_pair[tf.newaxis]
                & ~((shared >= highest_unnamed) & consistent & (unnamed_after <= pairs_after))
            )
            & ~(self.is_last[tf.newaxis] & (highest_unnamed > 0))
            # One word alone: its chain is the root, so it must have one.
            & ~(
                self.is_last[tf.newaxis]
                & ~self.chained[tf.newaxis]
                & (state["words"] == 1)[:, tf.newaxis]
            )
        )
        possible = tf.reduce_any(strict, axis=1, keepdims=True)  # [N, 1]
        return tf.where(possible, strict, relaxed)


def for_trees(tokens: list[str], pos: str, hp) -> Constraint | None:
    """The constraint a parsing problem's decodes take (its `decode_constraint`)
    over its vocabulary `tokens` and tree form `pos` (trees.POS_MODES, or
    "labels") under decode hparams `hp`; None when hp.tree_constraint is off."""
    if not hp.tree_constraint:
        return None
    if pos == "labels":
        return LabelConstraint(tokens, strict=hp.label_constraint == "strict")
    if hp.extra_length < 2 or hp.min_length > 0:
        raise ValueError(
            "a tree-constrained search needs decode_hparams extra_length=2 or more (the "
            "root's brackets) and min_length=0 (a finished tree ends there), not "
            f"extra_length={hp.extra_length}, min_length={hp.min_length}; or tree_constraint=False"
        )
    return TreeConstraint(tokens, pos)
