"""Benchmark helpers: machine description, matmul peak, model FLOPs."""

import json
import os
import platform
import time

import tensorflow as tf

RESULT_FILE = "result.json"  # a finished run's one JSON line, in its work directory


def kept_result(directory: str) -> str | None:
    """The JSON line a finished run kept in `directory` (None: not finished), so
    that a queue of runs started again skips past the finished ones."""
    path = os.path.join(directory, RESULT_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def keep_result(directory: str, result: dict) -> str:
    """Writes result as `directory`'s JSON line (atomically) -> the line."""
    line = json.dumps(result)
    path = os.path.join(directory, RESULT_FILE)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(line + "\n")
    os.replace(path + ".tmp", path)
    return line


def significant(value: float, digits: int = 4) -> float:
    """`value` to `digits` significant figures: a tiny model's GFLOP/s keeps its
    precision where a fixed number of decimals would round most of it away."""
    return float(f"{value:.{digits}g}")


def machine() -> dict:
    """CPU model, core count, accelerator and TensorFlow version."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    gpus = tf.config.list_physical_devices("GPU")
    accelerator = (
        tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
        if gpus
        else None
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "accelerator": accelerator,
        "tensorflow": tf.__version__,
    }


def matmul_peak_gflops(
    size: int = 2048, dtype=tf.float32, repeats: int = 5, iters: int = 5
) -> float:
    """Best GFLOP/s of size x size matmuls, with the same threads and dtype as the model."""
    a = tf.random.normal([size, size], dtype=tf.float32)
    a = tf.cast(a, dtype)

    @tf.function
    def chain(x):
        for _ in range(iters):
            x = tf.matmul(x, a) * 0.01  # keep values bounded
        return x

    chain(a).numpy()  # trace and warm up
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        chain(a).numpy()
        seconds = time.perf_counter() - start
        best = max(best, 2.0 * size**3 * iters / seconds / 1e9)
    return best


def transformer_flops_per_token(
    hidden: int,
    filter_size: int,
    enc_layers: int,
    dec_layers: int,
    vocab: int,
    src_len: int,
    tgt_len: int,
) -> float:
    """Training FLOPs per target token: 3 x forward (forward + backward).

    Forward = 2 * (r * N_enc + N_dec + d * V) plus attention scores and
    context: 4 * d * (r * S (encoder self) + T (decoder self) + S (cross)).
    """
    d, ff, r = hidden, filter_size, src_len / tgt_len
    n_enc = enc_layers * (4 * d * d + 2 * d * ff)
    n_dec = dec_layers * (8 * d * d + 2 * d * ff)
    dense = 2 * (r * n_enc + n_dec + d * vocab)
    attention = 4 * d * (enc_layers * r * src_len + dec_layers * (tgt_len + src_len))
    return 3.0 * (dense + attention)


def random_transformer(hparams_set: str, vocab_size: int, seed: int):
    """A built Transformer of `hparams_set` with seeded random weights (decoding benchmarks)."""
    import keras

    from t2t_lite import checkpoints, experiment

    exp = experiment.Experiment.resolve(
        "transformer", "algorithmic_identity_decimal40", hparams_set
    )
    keras.utils.set_random_seed(seed)
    model = exp.build_model(vocab_size)
    checkpoints.build_model(model)
    return model
