"""What a model does on one example: its attention maps and ACT ponder times.

Everything here comes from the model's own computation: a teacher-forced
pass over (input, output) inside `attention.recording`, and the UT's
`PonderStats`. Nothing is recomputed by a second implementation.
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import sequences
from t2t_lite.data import problem as problem_lib
from t2t_lite.layers import attention

# Attention kinds: which sequence attends to which.
ENCODER, DECODER, ENCDEC = "encoder", "decoder", "encdec"
KINDS = (ENCODER, DECODER, ENCDEC)
# Layer names (MultiHeadAttention's `name`) of the decoder's two attentions.
_DECODER_LAYERS = {"self_attention": DECODER, "encdec_attention": ENCDEC}


@dataclasses.dataclass(frozen=True)
class Inspection:
    """One example's maps. Sequences include their final EOS.

    attention[kind]: float32 [N, H, Q, K] for N layers (Transformer) or
    recurrence steps (UT; under ACT the steps the loop executed); queries Q
    and keys K are input positions (encoder), output positions (decoder) or
    output by input positions (encdec); a decoder-only model has only
    "decoder" maps. Under fact encoding (bAbI) the encoder's positions are
    facts: input_tokens holds one label per fact. ponder[side] =
    (n_updates, remainders), each [L], for the adaptive UT's "encoder" and
    "decoder" (those it has); empty otherwise.
    """

    input_ids: list[int]
    output_ids: list[int]
    input_tokens: list[str]
    output_tokens: list[str]
    unit: str  # "layer" or "step": what the first attention axis counts
    attention: dict[str, np.ndarray]
    ponder: dict[str, tuple[np.ndarray, np.ndarray]]
    text: str = ""  # the input as read (the output, for a decoder-only model)

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of a kind's maps."""
        if kind == ENCODER:
            return self.input_tokens, self.input_tokens
        if kind == DECODER:
            return self.output_tokens, self.output_tokens
        return self.output_tokens, self.input_tokens


def token_labels(problem: problem_lib.Problem, ids: list[int]) -> list[str]:
    """One readable label per id: the symbol or subword piece; <EOS> and <pad> named."""
    tokens = getattr(getattr(problem, "tokenizer", None), "tokens", None)
    labels = []
    for i in ids:
        if i == sequences.EOS_ID:
            labels.append(sequences.EOS_TOKEN)
        elif i == sequences.PAD_ID:
            labels.append(sequences.PAD_TOKEN)
        elif tokens is not None and i < len(tokens):
            labels.append(tokens[i])
        else:
            labels.append(problem.decode_text([i]) or str(i))
    return labels


def fact_labels(problem: problem_lib.Problem, ids: list[int]) -> list[str]:
    """One label per fact of fact-encoded ids: the fact's words (the question last)."""
    labels, current = [], []
    for i in ids:
        if i == sequences.FACT_END_ID:
            labels.append(problem.decode_text(current))
            current = []
        elif i > sequences.FACT_END_ID:
            current.append(i)
    return labels


def _stack(records: list[tuple[str, tf.Tensor]]) -> np.ndarray:
    """Recorded [1, H, Q, K] maps -> [N, H, Q, K] (the batch of one dropped)."""
    return np.stack([weights.numpy()[0] for _, weights in records])


def inspect(
    model: keras.Model, problem: problem_lib.Problem, input_ids: list[int], output_ids: list[int]
) -> Inspection:
    """The teacher-forced pass over input and output (ids without EOS) of one example."""
    inputs = tf.constant([sequences.with_eos(input_ids)])  # [1, S]
    targets = tf.constant([sequences.with_eos(output_ids)])  # [1, T]
    with_stats = hasattr(model, "encode_with_stats")
    ponder = {}
    with attention.recording(model) as encoder_records:
        if with_stats:
            encoded, bias, encoder_stats = model.encode_with_stats(inputs)
        else:
            encoded, bias = model.encode(inputs)
    with attention.recording(model) as decoder_records:
        if with_stats:
            _, decoder_stats = model.decode_with_stats(targets, encoded, bias)
        else:
            model.decode(targets, encoded, bias)
    if with_stats:
        for side, stats in (("encoder", encoder_stats), ("decoder", decoder_stats)):
            if stats is not None:
                ponder[side] = (stats.n_updates.numpy()[0], stats.remainders.numpy()[0])
    maps = {}
    if encoder_records:
        maps[ENCODER] = _stack(encoder_records)
    for name, kind in _DECODER_LAYERS.items():
        records = [r for r in decoder_records if r[0] == name]
        if records:
            maps[kind] = _stack(records)
    encoding = getattr(model, "input_encoding", "tokens")
    output_tokens = token_labels(problem, targets[0].numpy().tolist())
    if encoding == "facts":
        input_tokens = fact_labels(problem, input_ids)
        text = " . ".join(input_tokens)
    elif encoding == "none":
        input_tokens, text = [], problem.decode_text(output_ids)
    else:
        input_tokens = token_labels(problem, inputs[0].numpy().tolist())
        text = " ".join(input_tokens[:-1])
    return Inspection(
        input_ids=[int(i) for i in inputs[0].numpy()],
        output_ids=[int(i) for i in targets[0].numpy()],
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        unit="step" if with_stats else "layer",
        attention=maps,
        ponder=ponder,
        text=text,
    )


def to_arrays(inspection: Inspection, kind: str) -> dict[str, np.ndarray]:
    """What one attention picture shows, as arrays for an .npz beside it."""
    queries, keys = inspection.axes(kind)
    return {
        "weights": inspection.attention[kind],
        "query_tokens": np.array(queries),
        "key_tokens": np.array(keys),
        "unit": np.array(inspection.unit),
    }


def ponder_record(inspection: Inspection) -> dict:
    """What the ponder picture shows, as JSON: per side, tokens with N and R."""
    record = {}
    for side, (n, r) in inspection.ponder.items():
        tokens = inspection.input_tokens if side == "encoder" else inspection.output_tokens
        record[side] = {
            "tokens": tokens,
            "n_updates": [float(x) for x in n],
            "remainders": [float(x) for x in r],
            "ponder_time": [float(a + b) for a, b in zip(n, r, strict=True)],
        }
    return record
