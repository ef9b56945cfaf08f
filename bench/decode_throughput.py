"""Decoding throughput: output tokens/s of cached against uncached search.

For each model family and search (greedy, beam 4) prints one JSON line with
both rates and their ratio, measured in the same run. EOS is masked so every
hypothesis runs to max_length: the work is the same for both.

  python bench/decode_throughput.py --batch_size=32 --input_length=32 --extra_length=32
  python bench/decode_throughput.py --xla=off   # both searches without XLA
"""

import json
import os
import statistics
import sys
import time

from absl import app, flags

from t2t_lite import sequences

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "families",
    [
        "transformer:transformer_tiny",
        "universal_transformer:universal_transformer_tiny",
        "universal_transformer:adaptive_universal_transformer_tiny",
    ],
    "model:hparams_set pairs.",
)
flags.DEFINE_integer("batch_size", 32, "Inputs per batch.")
flags.DEFINE_integer("input_length", 32, "Input length.")
flags.DEFINE_integer("extra_length", 32, "Output length = input_length + extra_length.")
flags.DEFINE_integer("vocab_size", 8000, "Shared vocabulary size.")
flags.DEFINE_list("beam_sizes", ["1", "4"], "1 is greedy.")
flags.DEFINE_integer("repeats", 3, "Timed repeats; the median is reported.")
flags.DEFINE_string(
    "xla", "default", "default (as t2t-decode: on for at most 32 search rows), on or off."
)
flags.DEFINE_integer("seed", 1, "Seeds the random weights (ACT's halting depends on them).")


def use_xla(beam_size: int) -> bool:
    from t2t_lite.decoding import decoder

    if FLAGS.xla == "default":
        return FLAGS.batch_size * beam_size <= decoder.XLA_MAX_ROWS
    return FLAGS.xla == "on"


def make_search(model, cached: bool, beam_size: int, max_length: int, no_eos):
    """A compiled search: inputs -> ids, with EOS masked so every output is max_length long."""
    import tensorflow as tf

    from t2t_lite.decoding import reference, search

    def run(inputs):
        encoded, bias = model.encode(inputs)
        if cached:
            # As t2t-decode: caches grow with the output, preallocated under XLA.
            length = max_length if use_xla(beam_size) else None
            step_fn, cache = model.decode_step, model.init_cache(encoded, bias, length)
        else:
            init_cache, step_fn = reference.uncached_step_fn(model, max_length)
            cache = init_cache(encoded, bias)

        def without_eos(ids, index, cache):
            logits, cache = step_fn(ids, index, cache)
            return logits + no_eos, cache

        batch_size = tf.shape(inputs)[0]
        if beam_size == 1:
            return search.sample(without_eos, cache, batch_size, max_length)[0]
        return search.beam_search(without_eos, cache, batch_size, max_length, beam_size, 0.6)[0]

    return tf.function(run, jit_compile=use_xla(beam_size))


def tokens_per_sec(fn, inputs, output_length: int) -> float:
    """Median output tokens/s (best hypothesis per input) over FLAGS.repeats calls."""
    fn(inputs).numpy()  # trace and warm up
    rates = []
    for _ in range(FLAGS.repeats):
        start = time.perf_counter()
        fn(inputs).numpy()
        rates.append(inputs.shape[0] * output_length / (time.perf_counter() - start))
    return statistics.median(rates)


def main(argv):
    del argv
    import common
    import keras
    import tensorflow as tf

    from t2t_lite import checkpoints, experiment
    from t2t_lite.decoding import search

    max_length = FLAGS.input_length + FLAGS.extra_length
    rng = tf.random.Generator.from_seed(1)
    inputs = rng.uniform([FLAGS.batch_size, FLAGS.input_length], 2, FLAGS.vocab_size, tf.int32)
    no_eos = tf.one_hot(sequences.EOS_ID, FLAGS.vocab_size) * search.NEG  # [V]
    for family in FLAGS.families:
        model_name, hparams_set = family.split(":")
        exp = experiment.Experiment.resolve(
            model_name, "algorithmic_identity_decimal40", hparams_set
        )
        keras.utils.set_random_seed(FLAGS.seed)
        model = exp.build_model(FLAGS.vocab_size)
        checkpoints.build_model(model)
        for beam_size in (int(b) for b in FLAGS.beam_sizes):
            cached, uncached = (
                tokens_per_sec(
                    make_search(model, c, beam_size, max_length, no_eos), inputs, max_length
                )
                for c in (True, False)
            )
            print(
                json.dumps(
                    {
                        "benchmark": "decode_throughput",
                        "model": model_name,
                        "hparams_set": hparams_set,
                        "search": "greedy" if beam_size == 1 else f"beam{beam_size}",
                        "batch_size": FLAGS.batch_size,
                        "output_length": max_length,
                        "vocab_size": FLAGS.vocab_size,
                        "xla": use_xla(beam_size),
                        "seed": FLAGS.seed,
                        "cached_tokens_per_sec": round(cached, 1),
                        "uncached_tokens_per_sec": round(uncached, 1),
                        "cached_over_uncached": round(cached / uncached, 2),
                        "machine": common.machine(),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    app.run(main)
