"""A search that writes trees by construction: a linearized-tree decode that can
only emit balanced brackets and exactly one preterminal per input word.

The search's step function masks the logits of every symbol that would break
the tree at that point, from a small state per hypothesis kept in the decode
cache (so beam search reorders it with the hypotheses):

    depth    open constituents            placed   words written
    words    the input's words            stack    each open level's close symbol
    last_open  whether the last symbol opened a constituent
    emitted  symbols written

Allowed next symbols:

- an open `(X`: while a word is left to write, the depth is below MAX_DEPTH
  and the output limit leaves room for it, its close, the other open levels'
  closes and the words left; not after the root has closed (one root);
- the close of the innermost open constituent (`)X` for `(X`, nothing else):
  unless it would close an empty constituent (the last symbol opened it), or
  close the root before every word is written;
- a preterminal: inside the root, while a word is left: the tag symbols (any
  symbol that is no bracket), `XX`, or the input's next word itself, by the
  problem's linearization (`trees.POS_MODES`);
- EOS: once the root has closed (then every word is written).

There is always an allowed symbol, so the search never dead-ends, and the
output limit (input length + extra_length, extra_length >= 2) leaves room
to finish every tree it allows.

A problem whose trees are one label per word (`tree_pos` "labels",
data/tree_labels.py) is held by `LabelConstraint`: a word's label (one that
keeps the count of shared constituents at 1 or more) for every word but the
last, then a last word's label, then EOS; every such sequence decodes to a
tree without mending.
"""

import numpy as np
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import tree_labels

MAX_DEPTH = 64  # deeper than any treebank tree (the WSJ's deepest: about 40)
KEY = "tree_constraint"  # its entry in the decode cache
PREDICTIONS = ("keep", "normalize", "word")  # as trees.POS_MODES


class Constraint:
    """What a constraint is to the search: `initial_state(inputs, extra_length)`,
    `advance(state, ids)` and `allowed(state)` [N, V], joined by `step`."""

    def step(self, ids: tf.Tensor, logits: tf.Tensor, state: dict, neg: float):
        """The step function's part -> (the logits [N, V] with every symbol the
        state allows no more set to `neg`, the state advanced by ids [N])."""
        state = self.advance(state, ids)
        return tf.where(self.allowed(state), logits, tf.cast(neg, logits.dtype)), state


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
            if token.startswith("(") and len(token) > 1:
                is_open[i] = True
                close_of[i] = index.get(")" + token[1:], -1)
            elif token.startswith(")") and len(token) > 1:
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
        open_ok = left & (depth < MAX_DEPTH - 1) & ~root_done & (room | (state["emitted"] == 0))
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


class LabelConstraint(Constraint):
    """The masks and state updates for labels, one per word (module docstring),
    over one vocabulary (`tokens`, in id order). State per hypothesis: the
    input's words, the labels written, the constituents shared by the last
    pair (its `shared`)."""

    def __init__(self, tokens: list[str]):
        size = len(tokens)
        is_pair = np.zeros(size, bool)
        is_last = np.zeros(size, bool)
        change = np.zeros(size, np.int32)
        for i, token in enumerate(tokens):
            if (pair := tree_labels.read_pair(token)) is not None:
                is_pair[i] = True
                change[i] = pair[0]
            elif tree_labels.read_last(token) is not None:
                is_last[i] = True
        if not is_pair.any() or not is_last.any():
            raise ValueError("the vocabulary has no word labels (tree_labels) to hold a search to")
        self.is_pair = tf.constant(is_pair)
        self.is_last = tf.constant(is_last)
        self.change = tf.constant(change)
        self.vocab_size = size

    def initial_state(self, inputs: tf.Tensor, extra_length: int) -> dict[str, tf.Tensor]:
        """inputs [B, S] (EOS-terminated, PAD after) -> the state before any label."""
        del extra_length  # the output is exactly as long as the input
        zeros = tf.zeros([tf.shape(inputs)[0]], tf.int32)
        return {"words": sequences.symbol_lengths(inputs), "placed": zeros, "shared": zeros}

    def advance(self, state: dict, ids: tf.Tensor) -> dict:
        """The state after symbols ids [N] (PAD, the start symbol, changes nothing)."""
        real = (ids != sequences.PAD_ID) & (ids != sequences.EOS_ID)  # [N]
        return {
            **state,
            "placed": state["placed"] + tf.cast(real, tf.int32),
            "shared": state["shared"] + tf.where(real, tf.gather(self.change, ids), 0),
        }

    def allowed(self, state: dict) -> tf.Tensor:
        """[N, V] True where a label keeps the output a tree (module docstring)."""
        left = (state["words"] - state["placed"])[:, tf.newaxis]  # [N, 1]
        keeps_a_root = state["shared"][:, tf.newaxis] + self.change[tf.newaxis] >= 1  # [N, V]
        vocab = tf.range(self.vocab_size)[tf.newaxis]  # [1, V]
        return (
            (self.is_pair[tf.newaxis] & keeps_a_root & (left >= 2))
            | (self.is_last[tf.newaxis] & (left == 1))
            | ((vocab == sequences.EOS_ID) & (left <= 0))
        )


def for_problem(problem, hp) -> Constraint | None:
    """The constraint a problem's decodes take under decode hparams `hp`: its
    trees' (`problem.tree_pos`: parsing problems), unless hp.tree_constraint
    is off; None for other problems."""
    if problem is None or problem.tree_pos is None or not hp.tree_constraint:
        return None
    tokens = problem.graph_tokenizer("").vocabulary()
    if problem.tree_pos == "labels":
        return LabelConstraint(tokens)
    return TreeConstraint(tokens, problem.tree_pos)
