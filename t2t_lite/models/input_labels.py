"""The auxiliary loss on the encoder's positions (hparam input_label_loss_weight).

A problem with input labels (Problem.input_labels: e.g. the parity, or the
arrangement, reached after each input symbol) has them batched as
"input_labels" [B, S] beside its inputs, 0 where there is none. The
encoder's output at each position goes through the model's softmax and is
scored against that label, so every position, not only the answer the
decoder reads, must hold the state of the input so far: supervision that a
rule carrying a state from each position to the next satisfies at any
length, and a shortcut that settles after a few layers or steps does not
once the input outgrows what they compose.
"""

from keras import ops

LABELS = "input_labels"


def terms(model, features: dict, encoded) -> dict:
    """The model's auxiliary outputs for `features`: {} when the option is off
    or the batch carries no labels (a model build's dummy batch), else
    "loss", the weight times the mean cross-entropy per labelled position,
    and "input_label_accuracy", the share of labelled positions whose argmax
    is the label. encoded [B, S, C] is the encoder's output for the inputs."""
    weight = model.hparams.input_label_loss_weight
    if not weight or LABELS not in features:
        return {}
    labels = features[LABELS]  # [B, S]
    logits = model.softmax.logits(encoded)  # [B, S, V] float32
    present = ops.cast(labels > 0, "float32")  # [B, S]
    xent = ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)  # [B, S]
    count = ops.maximum(ops.sum(present), 1.0)
    guess = ops.cast(ops.argmax(logits, -1), labels.dtype)
    right = ops.cast(ops.equal(guess, labels), "float32")
    return {
        "loss": weight * ops.sum(xent * present) / count,
        "input_label_accuracy": ops.sum(right * present) / count,
    }


def merged(aux: dict, more: dict) -> dict:
    """Two sets of auxiliary outputs as one: their "loss" entries are summed."""
    out = {**aux, **more}
    if "loss" in aux and "loss" in more:
        out["loss"] = aux["loss"] + more["loss"]
    return out
