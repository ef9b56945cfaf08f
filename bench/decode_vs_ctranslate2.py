"""Decoding speed against CTranslate2 on identical weights, in the same run.

For each shape (a Transformer hparams set with random weights), search
(greedy, beam 4) and batch size, one JSON line: output tokens/s of
t2t-decode's in-process search (`Decoder.search`, its defaults), of the
exported SavedModel's `serving_default` (text in, text out: what TF Serving
runs; as exported by default, and with `--xla_max_rows`), and of CTranslate2 (fp32, `--ct2_threads` threads) running the model
`t2t-export --format=ctranslate2` writes from the same weights, and of
`t2t-decode --engine=ctranslate2` (that Translator behind t2t-decode's
decode_ids); ratios are t2t_lite over CTranslate2. Every output is forced to `--output_length`
symbols (EOS masked before, then EOS), so all of them do the same steps.

  python bench/decode_vs_ctranslate2.py
  python bench/decode_vs_ctranslate2.py --shapes=transformer_tiny:8000 --batch_sizes=32
"""

import json
import os
import statistics
import sys
import tempfile
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "shapes",
    ["transformer_tiny:8000", "transformer_base:32000"],
    "hparams_set:vocab_size pairs (random weights).",
)
flags.DEFINE_list("batch_sizes", ["1", "32"], "Inputs per call.")
flags.DEFINE_list("beam_sizes", ["1", "4"], "1 is greedy.")
flags.DEFINE_integer("input_length", 32, "Symbols per input.")
flags.DEFINE_integer("output_length", 64, "Symbols per output (then EOS).")
flags.DEFINE_integer("repeats", 3, "Timed repeats; the median is reported.")
flags.DEFINE_integer("ct2_threads", 2, "CTranslate2 intra-op threads.")
flags.DEFINE_bool("serving", True, "Also time the SavedModel's serving_default.")
flags.DEFINE_string("xla", "default", "t2t_lite's search: default (the Decoder's), on or off.")
flags.DEFINE_integer("seed", 1, "Seeds the random weights and inputs.")


def median_rate(fn, tokens: int) -> float:
    fn()  # trace / warm up
    times = []
    for _ in range(FLAGS.repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return tokens / statistics.median(times)


def measure(model, symbols, translator, inputs, beam_size: int) -> dict:
    """Output tokens/s of each engine on `inputs` [B, S] ids, every output forced to the same length."""
    import tensorflow as tf

    from t2t_lite import sequences
    from t2t_lite.data import graph_tokenizer
    from t2t_lite.decoding import decoder as decoder_lib
    from t2t_lite.export import ctranslate2_engine, serving

    batch_size, steps = len(inputs), FLAGS.output_length + 1  # the symbols, then EOS
    tokens = [sequences.PAD_TOKEN, sequences.EOS_TOKEN, *symbols]
    source = [[tokens[i] for i in row] for row in inputs]
    hp = decoder_lib.DecodeHParams(
        beam_size=beam_size,
        batch_size=batch_size,
        extra_length=FLAGS.output_length - FLAGS.input_length,
        min_length=FLAGS.output_length,
        max_input_length=FLAGS.input_length,  # the engine's output limit: output_length + EOS
    )
    xla = {"default": None, "on": True, "off": False}[FLAGS.xla]
    decoder = decoder_lib.Decoder(model, hp, xla_compile=xla)
    batch = tf.constant(next(decoder.batches(inputs))[1])
    ours = decoder.search(batch)[0].numpy()
    assert {len(sequences.until_eos(row[0])) for row in ours} == {FLAGS.output_length}

    def ct2():
        return translator.translate_batch(
            source,
            beam_size=beam_size,
            max_batch_size=batch_size,
            min_decoding_length=steps,
            max_decoding_length=steps,
        )

    assert {len(result.hypotheses[0]) for result in ct2()} == {steps}
    total = batch_size * steps
    # t2t-decode --engine=ctranslate2: the same Translator behind the engine's
    # decode_ids (ids in and out, t2t_lite's scores and ranking).
    engine = ctranslate2_engine.Ctranslate2Decoder(translator, tokens, hp)
    got = {len(h[0][0]) for h in engine.decode_ids(inputs)}
    assert got == {FLAGS.output_length}, got
    rates = {
        "t2t_decode": median_rate(lambda: decoder.search(batch)[0].numpy(), total),
        "ctranslate2": median_rate(ct2, total),
        "engine_ctranslate2": median_rate(lambda: engine.decode_ids(inputs), total),
    }
    if FLAGS.serving:
        tokenizer = graph_tokenizer.SymbolTokenizer(symbols, 2)
        text = tf.constant([" ".join(row) for row in source])
        # The default export, and one with t2t-export --xla_max_rows=XLA_MAX_ROWS.
        for name, xla_rows in (("serving", 0), ("serving_xla", decoder_lib.XLA_MAX_ROWS)):
            module = serving.ServingModule(model, tokenizer, hp, len(tokens), xla_rows)
            saved = tempfile.mkdtemp(prefix="bench-sm-")
            tf.saved_model.save(module, saved, signatures=module.signatures())
            serve = tf.saved_model.load(saved).signatures[serving.TEXT_SIGNATURE]
            rates[name] = median_rate(
                lambda serve=serve: serve(inputs=text)["outputs"].numpy(), total
            )
    return {
        "search": "greedy" if beam_size == 1 else f"beam{beam_size}",
        "batch_size": batch_size,
        "output_tokens": steps,
        "xla": decoder.xla_compile,
        **{f"{k}_tokens_per_sec": round(v, 1) for k, v in rates.items()},
        **{
            f"{k}_over_ctranslate2": round(v / rates["ctranslate2"], 2)
            for k, v in rates.items()
            if k != "ctranslate2"
        },
    }


def main(argv):
    del argv
    import common
    import ctranslate2
    import numpy as np

    from t2t_lite import sequences
    from t2t_lite.export import ctranslate2_model

    rng = np.random.default_rng(FLAGS.seed)
    for shape in FLAGS.shapes:
        hparams_set, vocab_size = shape.split(":")
        vocab_size = int(vocab_size)
        model = common.random_transformer(hparams_set, vocab_size, FLAGS.seed)
        symbols = [f"w{i}" for i in range(vocab_size - 2)]
        tokens = [sequences.PAD_TOKEN, sequences.EOS_TOKEN, *symbols]
        ct2_dir = tempfile.mkdtemp(prefix="bench-ct2-")
        positions = FLAGS.input_length + FLAGS.output_length + 2
        ctranslate2_model.write(model, tokens, positions, ct2_dir)
        translator = ctranslate2.Translator(
            ct2_dir, device="cpu", inter_threads=1, intra_threads=FLAGS.ct2_threads
        )
        for batch_size in (int(b) for b in FLAGS.batch_sizes):
            inputs = rng.integers(2, vocab_size, [batch_size, FLAGS.input_length]).tolist()
            for beam_size in (int(b) for b in FLAGS.beam_sizes):
                record = {
                    "benchmark": "decode_vs_ctranslate2",
                    "hparams_set": hparams_set,
                    "vocab_size": vocab_size,
                    **measure(model, symbols, translator, inputs, beam_size),
                    "ct2_threads": FLAGS.ct2_threads,
                    "ctranslate2": ctranslate2.__version__,
                    "machine": common.machine(),
                }
                print(json.dumps(record), flush=True)


if __name__ == "__main__":
    app.run(main)
