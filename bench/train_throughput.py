"""Training throughput (non-pad target tokens/s) and MFU of t2t_lite's train step.

Prints one JSON line. MFU = achieved model FLOP/s / float32 matmul peak
measured in the same run with the same threads. Unless --notorch_reference,
the same architecture, batch and lengths are also trained with PyTorch's
torch.nn.Transformer (bench/torch_reference.py) in the same run, and the
line carries both throughputs and their ratio (pip install torch first; it
is not a dependency of t2t_lite).

  python bench/train_throughput.py --hparams_set=transformer_tiny --batch_size=4096 --length=32
"""

import json
import os
import statistics
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_string("hparams_set", "transformer_tiny", "Registered hparams set.")
flags.DEFINE_string("hparams", "", "Overrides, k=v,...")
flags.DEFINE_integer("batch_size", 4096, "Tokens per batch (source and target each).")
flags.DEFINE_integer("length", 32, "Source and target length (all tokens are non-pad).")
flags.DEFINE_integer("vocab_size", 37000, "Shared vocabulary size (the paper's is 37000).")
flags.DEFINE_integer("steps", 10, "Timed steps per repeat.")
flags.DEFINE_integer("warmup_steps", 3, "Untimed steps first (tracing).")
flags.DEFINE_integer("repeats", 3, "Repeats; the median is reported.")
flags.DEFINE_bool("xla_compile", False, "Compile forward and backward with XLA.")
flags.DEFINE_bool("torch_reference", True, "Also time torch.nn.Transformer, same shapes.")


def main(argv):
    del argv
    import common
    import tensorflow as tf

    from t2t_lite import experiment
    from t2t_lite.training import steps

    exp = experiment.Experiment.resolve(
        "transformer", "algorithmic_identity_decimal40", FLAGS.hparams_set, FLAGS.hparams
    )
    hp = exp.hparams
    strategy = tf.distribute.get_strategy()
    model, optimizer, step = steps.build_training_state(exp, FLAGS.vocab_size)
    train_step = steps.make_train_step(
        model, optimizer, strategy, hp.label_smoothing, step, FLAGS.xla_compile
    )

    rows = max(1, FLAGS.batch_size // FLAGS.length)
    rng = tf.random.Generator.from_seed(1)
    shape = [rows, FLAGS.length]
    batch = {
        "inputs": rng.uniform(shape, 2, FLAGS.vocab_size, dtype=tf.int32),
        "targets": rng.uniform(shape, 2, FLAGS.vocab_size, dtype=tf.int32),
    }
    for _ in range(FLAGS.warmup_steps):
        train_step((batch,))[0].numpy()
    rates = []
    for _ in range(FLAGS.repeats):
        start = time.perf_counter()
        for _ in range(FLAGS.steps):
            out = train_step((batch,))
        out[0].numpy()
        rates.append(rows * FLAGS.length * FLAGS.steps / (time.perf_counter() - start))
    tokens_per_sec = statistics.median(rates)
    flops_per_token = common.transformer_flops_per_token(
        hp.hidden_size,
        hp.filter_size,
        hp.encoder_layers,
        hp.decoder_layers,
        FLAGS.vocab_size,
        FLAGS.length,
        FLAGS.length,
    )
    achieved = tokens_per_sec * flops_per_token / 1e9
    peak = common.matmul_peak_gflops()
    reference = {}
    if FLAGS.torch_reference:
        reference = torch_figures(hp, rows, tokens_per_sec, flops_per_token, peak)
    print(
        json.dumps(
            {
                "benchmark": "train_throughput",
                "hparams_set": FLAGS.hparams_set,
                "hparams": FLAGS.hparams,
                "parameters": model.count_params(),
                "batch_tokens": rows * FLAGS.length,
                "length": FLAGS.length,
                "vocab_size": FLAGS.vocab_size,
                "xla": FLAGS.xla_compile,
                "tokens_per_sec": round(tokens_per_sec, 1),
                "tokens_per_sec_repeats": [round(r, 1) for r in rates],
                "model_gflops_per_sec": common.significant(achieved),
                "matmul_peak_gflops": common.significant(peak),
                "mfu": common.significant(achieved / peak),
                **reference,
                "machine": common.machine(),
            }
        )
    )


def torch_figures(hp, rows: int, tokens_per_sec: float, flops_per_token: float, peak: float):
    import common

    try:
        import torch
        import torch_reference
    except ImportError:
        raise SystemExit(
            "the PyTorch reference needs torch (pip install torch), or pass --notorch_reference"
        ) from None
    torch.set_num_threads(os.cpu_count())
    rate, rates, parameters = torch_reference.tokens_per_second(
        hp, FLAGS.vocab_size, rows, FLAGS.length, FLAGS.steps, FLAGS.warmup_steps, FLAGS.repeats
    )
    return {
        "torch": torch.__version__,
        "torch_parameters": parameters,
        "torch_tokens_per_sec": round(rate, 1),
        "torch_tokens_per_sec_repeats": [round(r, 1) for r in rates],
        "torch_mfu": common.significant(rate * flops_per_token / 1e9 / peak),
        "ratio_vs_torch": round(tokens_per_sec / rate, 3),
    }


if __name__ == "__main__":
    app.run(main)
