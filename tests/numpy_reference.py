"""An independent float64 numpy forward pass of the three model families.

Written from the papers (and tensor2tensor's conventions the design notes
fix: [sin | cos] timing signal, embeddings scaled by sqrt(C) and zero at
PAD, pre- or post-norm, a shared softmax matrix), reading only the trained
variables of a built model: none of the package's layer code runs here.
"""

import math

import numpy as np

NEG = -65504.0  # the masks' large negative (float16's minimum)
EPS = 1e-6  # layer norm epsilon


def weight(layer, name: str) -> np.ndarray:
    """A variable of a Keras layer by its short name (kernel, bias, gamma, beta)."""
    (found,) = [w for w in layer.weights if w.path.rsplit("/", 1)[-1] == name]
    return np.asarray(found.numpy(), np.float64)


def timing(positions: np.ndarray, channels: int) -> np.ndarray:
    """[L] integer positions -> [L, C]: sin of every timescale, then cos."""
    half = channels // 2
    increment = math.log(1.0e4) / max(half - 1, 1)
    inverse = np.exp(-increment * np.arange(half))
    scaled = positions[:, None] * inverse[None]
    signal = np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)
    return np.pad(signal, [(0, 0), (0, channels % 2)])


def layer_norm(norm, x: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return weight(norm, "gamma") * (x - mean) / np.sqrt(variance + EPS) + weight(norm, "beta")


def attention(layer, query: np.ndarray, memory: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """query [T, C] over memory [S, C]; bias [T, S] (0 or NEG)."""
    heads = layer.num_heads
    q, k, v = (x @ weight(dense, "kernel") for x, dense in (
        (query, layer.query), (memory, layer.key), (memory, layer.value)))  # fmt: skip
    depth = q.shape[1] // heads
    out = []
    for h in range(heads):
        cols = slice(h * depth, (h + 1) * depth)
        logits = q[:, cols] @ k[:, cols].T / math.sqrt(depth) + bias
        probs = np.exp(logits - logits.max(1, keepdims=True))
        out.append((probs / probs.sum(1, keepdims=True)) @ v[:, cols])
    return np.concatenate(out, axis=1) @ weight(layer.output_projection, "kernel")


def feed_forward(ffn, x: np.ndarray) -> np.ndarray:
    inner = np.maximum(x @ weight(ffn.inner, "kernel") + weight(ffn.inner, "bias"), 0.0)
    return inner @ weight(ffn.outer, "kernel") + weight(ffn.outer, "bias")


def residual(wrapper, x: np.ndarray, sublayer) -> np.ndarray:
    if wrapper.norm_position == "pre":
        return x + sublayer(layer_norm(wrapper.norm, x))
    return layer_norm(wrapper.norm, x + sublayer(x))


def encoder_block(block, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    x = residual(
        block.self_attention_residual, x, lambda y: attention(block.self_attention, y, y, bias)
    )
    return residual(block.ffn_residual, x, lambda y: feed_forward(block.ffn, y))


def decoder_block(block, x, encoded, self_bias, cross_bias) -> np.ndarray:
    x = residual(
        block.self_attention_residual, x, lambda y: attention(block.self_attention, y, y, self_bias)
    )
    x = residual(
        block.cross_attention_residual,
        x,
        lambda y: attention(block.cross_attention, y, encoded, cross_bias),
    )
    return residual(block.ffn_residual, x, lambda y: feed_forward(block.ffn, y))


def embed(model, ids: np.ndarray) -> np.ndarray:
    matrix = np.asarray(model.embedding.weights_matrix.numpy(), np.float64)
    channels = matrix.shape[1]
    return matrix[ids] * math.sqrt(channels) * (ids != 0)[:, None]


def finish(stack, x: np.ndarray) -> np.ndarray:
    return layer_norm(stack.final_norm, x) if stack.final_norm is not None else x


def transformer_logits(model, inputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """One example: inputs [S], targets [T] -> logits [T, V] (teacher forced)."""
    channels = model.hparams.hidden_size
    cross = np.where(inputs != 0, 0.0, NEG)[None, :]  # [1, S]
    x = embed(model, inputs) + timing(np.arange(len(inputs)), channels)
    for block in model.encoder.blocks:
        x = encoder_block(block, x, cross)
    encoded = finish(model.encoder, x)
    shifted = np.concatenate([[0], targets[:-1]])
    causal = np.where(np.tril(np.ones([len(targets)] * 2)) > 0, 0.0, NEG)
    y = embed(model, shifted) + timing(np.arange(len(targets)), channels)
    for block in model.decoder.blocks:
        y = decoder_block(block, y, encoded, causal, cross)
    return finish(model.decoder, y) @ np.asarray(model.embedding.weights_matrix.numpy()).T


def recur(stack, x: np.ndarray, block_fn, nonpadding: np.ndarray, hp) -> tuple:
    """The UT's recurrence: step t maps state s to block(s + P + step signal t);
    fixed steps, or ACT (accumulated) per position -> (output [L, C], N + R [L])."""
    length, channels = x.shape
    position = timing(np.arange(length), channels)

    def step(state, t):
        return block_fn(state + position + timing(np.array([t]), channels))

    if stack.halting is None:
        for t in range(1, hp.num_rec_steps + 1):
            x = step(x, t)
        return finish(stack, x), None
    dense = stack.halting.halting
    threshold = 1.0 - hp.act_epsilon
    running = nonpadding.astype(np.float64)
    accumulated, n_updates, remainders = (np.zeros(length) for _ in range(3))
    output = np.zeros_like(x)
    for t in range(1, hp.act_max_steps + 1):
        new = step(x, t)
        p = 1.0 / (1.0 + np.exp(-(new @ weight(dense, "kernel")[:, 0] + weight(dense, "bias")[0])))
        halts = running * ((accumulated + p * running > threshold) | (t == hp.act_max_steps))
        continues = running - halts
        accumulated += p * continues
        remainder = halts * (1.0 - accumulated)
        output += (p * continues + remainder)[:, None] * new
        x = np.where(running[:, None] > 0, new, x)
        n_updates += running
        remainders += remainder
        accumulated += remainder
        running = continues
    return finish(stack, output), n_updates + remainders


def universal_logits(model, inputs: np.ndarray, targets: np.ndarray) -> tuple:
    """One example -> (logits [T, V], encoder N + R [S] or None, decoder N + R [T] or None)."""
    hp = model.hparams
    cross = np.where(inputs != 0, 0.0, NEG)[None, :]
    encoded, encoder_ponder = recur(
        model.encoder,
        embed(model, inputs),
        lambda s: encoder_block(model.encoder.block, s, cross),
        inputs != 0,
        hp,
    )
    shifted = np.concatenate([[0], targets[:-1]])
    causal = np.where(np.tril(np.ones([len(targets)] * 2)) > 0, 0.0, NEG)
    decoded, decoder_ponder = recur(
        model.decoder,
        embed(model, shifted),
        lambda s: decoder_block(model.decoder.block, s, encoded, causal, cross),
        targets != 0,
        hp,
    )
    logits = decoded @ np.asarray(model.embedding.weights_matrix.numpy()).T
    return logits, encoder_ponder, decoder_ponder


def set_deterministic_weights(model) -> None:
    """Every variable gets a smooth, random-free pattern of its own (no seed)."""
    for k, variable in enumerate(model.weights):
        size = int(np.prod(variable.shape))
        values = 0.5 * np.sin(1.3 * (k + 1) + 0.7 * np.arange(size)) + 0.05 * (k % 3)
        variable.assign(values.reshape(variable.shape).astype(np.dtype(variable.dtype)))
