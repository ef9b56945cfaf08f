"""What a problem's decodes may write (`Problem.decode_constraint`): a mask
over the vocabulary at each step, from a small state per hypothesis that
rides in the decode cache under `KEY` (so beam search reorders it with the
hypotheses). The search (decoding/decoder.py) knows only this interface;
the parsing problems' constraints are parsing/constraints.py."""

import abc

import numpy as np
import tensorflow as tf

KEY = "decode_constraint"  # its entry in the decode cache


class Constraint(abc.ABC):
    """`initial_state(inputs, extra_length)`, `advance(state, ids)` and
    `allowed(state)` [N, V], joined by `step`; `narrowed` for a search that
    computes only the logits a constraint can ever allow."""

    @abc.abstractmethod
    def initial_state(self, inputs: tf.Tensor, extra_length: int) -> dict[str, tf.Tensor]:
        """inputs [B, S] (EOS-terminated, PAD after) -> the state before any symbol;
        each row's output holds at most its symbols + extra_length."""

    @abc.abstractmethod
    def advance(self, state: dict, ids: tf.Tensor) -> dict:
        """The state after symbols ids [N] (PAD, the start symbol, changes nothing)."""

    @abc.abstractmethod
    def allowed(self, state: dict) -> tf.Tensor:
        """[N, V] True where a symbol may come next."""

    def step(self, ids: tf.Tensor, logits: tf.Tensor, state: dict, neg: float):
        """The step function's part -> (the logits [N, V] with every symbol the
        state allows no more set to `neg`, the state advanced by ids [N])."""
        state = self.advance(state, ids)
        return tf.where(self.allowed(state), logits, tf.cast(neg, logits.dtype)), state

    def narrowed(self) -> "tuple[np.ndarray, Constraint] | None":
        """(the sorted vocabulary ids [L] any state can allow, PAD and EOS first
        at their own ids; the same constraint over those L symbols), for a
        search that computes only their logits (decoding/tagging.py); None:
        no narrower set."""
        return None
