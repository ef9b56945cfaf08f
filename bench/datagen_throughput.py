"""Datagen throughput: a parallel corpus from the user's files to a vocabulary and TFRecords.

Prints one JSON line. The corpus is self-generated and deterministic:
--pairs sentence pairs of 15..35 words a side (25 on average), the words
drawn Zipf-like from a fixed list of synthetic words (--words), written as
two aligned files. `t2t-datagen --problem=translate_from_files` then runs
end to end in this process (vocabulary sample, vocabulary, encoding,
shards). Reported: the wall time of each phase, pairs/s of encoding and
writing, peak resident memory, and the ratio against line-at-a-time eager
encoding (tokenizer.encode per line, as datagen ran before) of the same
pairs measured in the same run.

  python bench/datagen_throughput.py --pairs=1000000
  python bench/datagen_throughput.py --text_file=book.txt   # real text, as a copy corpus
"""

import itertools
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time

from absl import app, flags, logging

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_integer("pairs", 200_000, "Synthetic sentence pairs.")
flags.DEFINE_integer("words", 20_000, "Size of the synthetic word list.")
flags.DEFINE_string("text_file", "", "Instead: a real text (HTML tags stripped); pairs of lines.")
flags.DEFINE_integer("vocab_size", 8000, "Subword vocabulary size.")
flags.DEFINE_integer("reference_pairs", 2000, "Pairs encoded line at a time for the ratio.")
flags.DEFINE_string("workdir", "", "Where the corpus and data go (default: a temporary dir).")


def synthetic_words(count: int, rng) -> list[str]:
    syllables = [c + v for c in "bdfghklmnprstvwz" for v in "aeiou"]
    words = set()
    while len(words) < count:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def write_synthetic(directory: str, pairs: int, words: int) -> tuple[str, str]:
    import numpy as np

    rng = np.random.default_rng(1)
    import random

    vocab = synthetic_words(words, random.Random(1))
    ranks = np.arange(1, len(vocab) + 1)
    probs = (1.0 / ranks) / (1.0 / ranks).sum()  # Zipf-like word frequencies
    paths = (os.path.join(directory, "train.src"), os.path.join(directory, "train.tgt"))
    with open(paths[0], "w") as src, open(paths[1], "w") as tgt:
        for start in range(0, pairs, 10_000):
            n = min(10_000, pairs - start)
            lengths = rng.integers(15, 36, size=(n, 2))
            ids = rng.choice(len(vocab), size=int(lengths.sum()), p=probs)
            offset = 0
            for a, b in lengths:
                src.write(" ".join(vocab[i] for i in ids[offset : offset + a]) + ".\n")
                offset += a
                tgt.write(" ".join(vocab[i] for i in ids[offset : offset + b]).capitalize() + "\n")
                offset += b
    return paths


def write_real_text(directory: str, text_file: str) -> tuple[tuple[str, str], int]:
    """Sentences of a real text, paired with the next one."""
    with open(text_file, encoding="utf-8", errors="replace") as f:
        text = re.sub(r"<[^>]+>", " ", f.read())
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text))]
    sentences = [s for s in sentences if 3 <= len(s.split()) <= 60]
    paths = (os.path.join(directory, "train.src"), os.path.join(directory, "train.tgt"))
    with open(paths[0], "w") as src, open(paths[1], "w") as tgt:
        for a, b in itertools.pairwise(sentences):
            src.write(a + "\n")
            tgt.write(b + "\n")
    return paths, len(sentences) - 1


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
    import common

    import problems  # noqa: F401  (registers translate_from_files)
    from t2t_lite.data import problem

    workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="datagen-bench-")
    corpus = os.path.join(workdir, "corpus")
    os.makedirs(corpus, exist_ok=True)
    if FLAGS.text_file:
        paths, pairs = write_real_text(corpus, FLAGS.text_file)
    else:
        paths, pairs = write_synthetic(corpus, FLAGS.pairs, FLAGS.words), FLAGS.pairs
    dev = os.path.join(corpus, "dev.tsv")
    with open(paths[0]) as src, open(paths[1]) as tgt, open(dev, "w") as out:
        out.writelines(
            a.rstrip("\n") + "\t" + b for _, a, b in zip(range(1000), src, tgt, strict=False)
        )

    data_dir = os.path.join(workdir, "data")
    shutil.rmtree(data_dir, ignore_errors=True)
    prob = problem.get("translate_from_files")
    prob.configure(data_dir, list(paths), [dev], FLAGS.vocab_size)
    start = time.perf_counter()
    counts = prob.generate_data(data_dir)
    total = time.perf_counter() - start
    # Older versions did not time their phases: all of it counts as encoding there.
    phases = dict(getattr(prob, "last_generation_seconds", {"encode_and_write": total}))

    # The reference: the same tokenizer, one eager call per line.
    with open(paths[0]) as src, open(paths[1]) as tgt:
        sample = [
            (a.rstrip("\n"), b.rstrip("\n"))
            for _, a, b in zip(range(FLAGS.reference_pairs), src, tgt, strict=False)
        ]
    start = time.perf_counter()
    for a, b in sample:
        prob.encode_text(a), prob.encode_text(b)
    reference = len(sample) / (time.perf_counter() - start)

    encode_seconds = phases["encode_and_write"]
    result = {
        "benchmark": "datagen_throughput",
        "corpus": FLAGS.text_file or f"synthetic Zipf over {FLAGS.words} words, 15-35 words a side",
        "pairs": pairs,
        "examples": counts,
        "vocab_size": prob.vocab_size,
        "seconds_total": round(total, 1),
        "seconds": {k: round(v, 1) for k, v in phases.items()},
        "pairs_per_sec": round(pairs / encode_seconds),
        "pairs_per_sec_end_to_end": round(pairs / total),
        "reference_pairs_per_sec_line_at_a_time": round(reference),
        "ratio_vs_line_at_a_time": round(pairs / encode_seconds / reference, 1),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "machine": common.machine(),
    }
    print(json.dumps(result))
    if not FLAGS.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    app.run(main)
