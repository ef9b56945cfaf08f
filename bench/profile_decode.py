"""Where decoding's time goes: TensorFlow op time of one `Decoder.search` call.

Builds a Transformer with random (seeded) weights, as
`decode_vs_ctranslate2.py` does, forces every output to `--output_length`
symbols, and profiles one search call (after a warm-up) with TensorFlow's
profiler. Prints one JSON line: wall seconds per call, ops per decoder
step, and the op time (summed over threads) of the `--top` largest op
types, or of single graph nodes for the types named in `--by_node`.

  python bench/profile_decode.py --beam_size=4 --batch_size=32
  python bench/profile_decode.py --by_node=Einsum,ConcatV2,GatherV2
"""

import collections
import json
import os
import statistics
import sys
import tempfile
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_string("hparams_set", "transformer_tiny", "A Transformer hparams set.")
flags.DEFINE_integer("vocab_size", 8000, "Vocabulary size (random weights).")
flags.DEFINE_integer("batch_size", 32, "Inputs per call.")
flags.DEFINE_integer("beam_size", 4, "1 is greedy.")
flags.DEFINE_integer("input_length", 32, "Symbols per input.")
flags.DEFINE_integer("output_length", 64, "Symbols per output (then EOS).")
flags.DEFINE_string("xla", "default", "default (the Decoder's), on or off.")
flags.DEFINE_integer("top", 12, "Op types (or nodes) to print.")
flags.DEFINE_list("by_node", [], "Op types whose graph nodes are listed one by one.")
flags.DEFINE_integer("seed", 1, "Seeds the random weights and inputs.")


def op_times(logdir: str, by_node: set[str]) -> tuple[dict[str, float], int]:
    """{op type or node: milliseconds} over the host's threads, and the op count."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    (path,) = tf.io.gfile.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    with tf.io.gfile.GFile(path, "rb") as f:
        space.ParseFromString(f.read())
    times, count = collections.Counter(), 0
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" not in name or "::" in name:  # "node:OpType" for TensorFlow ops
                    continue
                node, op = name.rsplit(":", 1)
                # TensorFlow ops only: not whole functions, executor or process events.
                if not op.isidentifier() or op in ("Run", "Process") or "__inference" in node:
                    continue
                times[name if op in by_node else op] += event.duration_ps / 1e9
                count += 1
    return dict(times), count


def main(argv):
    del argv
    import common
    import numpy as np
    import tensorflow as tf

    from t2t_lite.decoding import decoder as decoder_lib

    model = common.random_transformer(FLAGS.hparams_set, FLAGS.vocab_size, FLAGS.seed)
    rng = np.random.default_rng(FLAGS.seed)
    inputs = rng.integers(2, FLAGS.vocab_size, [FLAGS.batch_size, FLAGS.input_length]).tolist()
    hp = decoder_lib.DecodeHParams(
        beam_size=FLAGS.beam_size,
        batch_size=FLAGS.batch_size,
        extra_length=FLAGS.output_length - FLAGS.input_length,
        min_length=FLAGS.output_length,
    )
    xla = {"default": None, "on": True, "off": False}[FLAGS.xla]
    decoder = decoder_lib.Decoder(model, hp, xla_compile=xla)
    batch = tf.constant(next(decoder.batches(inputs))[1])
    decoder.search(batch)[0].numpy()  # trace and warm up
    times = []
    for _ in range(3):
        start = time.perf_counter()
        decoder.search(batch)[0].numpy()
        times.append(time.perf_counter() - start)
    logdir = tempfile.mkdtemp(prefix="bench-profile-")
    tf.profiler.experimental.start(logdir)
    decoder.search(batch)[0].numpy()
    tf.profiler.experimental.stop()
    op_ms, count = op_times(logdir, set(FLAGS.by_node))
    steps = FLAGS.output_length + 1
    top = sorted(op_ms.items(), key=lambda item: -item[1])[: FLAGS.top]
    print(
        json.dumps(
            {
                "benchmark": "profile_decode",
                "hparams_set": FLAGS.hparams_set,
                "vocab_size": FLAGS.vocab_size,
                "batch_size": FLAGS.batch_size,
                "beam_size": FLAGS.beam_size,
                "xla": decoder.xla_compile,
                "steps": steps,
                "wall_seconds_per_call": round(statistics.median(times), 4),
                "ops_per_step": round(count / steps, 1),
                "op_ms_total": round(sum(op_ms.values()), 1),
                "op_ms": {name: round(ms, 1) for name, ms in top},
                "machine": common.machine(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    app.run(main)
