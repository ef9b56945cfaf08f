"""t2t-decode's two engines on a real test file, against OpenNMT-py's onmt_translate.

Reads a work directory of bench/bleu_vs_opennmt.py (its t2t_lite run, its
OpenNMT-py checkpoints of the same shape, vocabulary and data, and the test
file as ids for OpenNMT-py) and decodes the test file, whole process each,
one after the other with the same threads:

- `t2t-decode --engine=tensorflow` and `--engine=ctranslate2`, greedy and
  beam (the conversion made by an untimed first call, so the timed one
  reuses it, as every decode after a run's first does);
- `onmt_translate` with the same beam and GNMT alpha (beam search only).

One JSON line: per search, each side's wall seconds, BLEU (sacrebleu,
against --reference), the lines where the two engines differ (and the
first few of them), the ratio of the CTranslate2 engine's wall time to
onmt_translate's, and the like-for-like figure: each search's output tokens
(subwords of the one vocabulary both sides share) per second of search, as
t2t-decode's "Search:" line and onmt_translate's -report_time give them (the
two models write outputs of other lengths, so whole-process seconds alone
compare different work). The machine is named; run it with the machine quiet.

  python bench/engines_on_file.py --work_dir=W --step=1200 \\
      --source=test.en --reference=test.de --onmt_python=onmt/bin/python
"""

import json
import os
import re
import subprocess
import sys
import time

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FLAGS = flags.FLAGS
flags.DEFINE_string("work_dir", None, "A bench/bleu_vs_opennmt.py work directory.")
flags.DEFINE_integer("step", None, "The checkpoint step both sides decode with.")
flags.DEFINE_string("source", None, "The test file's source text (one sentence a line).")
flags.DEFINE_string("reference", None, "The test file's reference translations.")
flags.DEFINE_string("onmt_python", "", "Python of OpenNMT-py's venv (none: no peer).")
flags.DEFINE_multi_string(
    "searches",
    ["beam_size=1", "beam_size=4,alpha=0.6"],
    "decode_hparams of one search (repeatable).",
)
flags.DEFINE_integer("threads", 2, "Threads of every decode (OMP_NUM_THREADS, TensorFlow's).")
flags.DEFINE_integer("shown", 3, "Differing lines shown per search.")
flags.mark_flags_as_required(["work_dir", "step", "source", "reference"])


SEARCH_LINE = re.compile(r"Search: (\d+) output tokens of \d+ lines in ([\d.]+) s")
ONMT_TIME_LINE = re.compile(r"Total translation time \(s\): ([\d.]+)")


def timed(command: list[str]) -> tuple[float, str]:
    """Wall seconds of a whole process run with --threads threads, and what it logged."""
    threads = str(FLAGS.threads)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": threads,
        "TF_NUM_INTRAOP_THREADS": threads,
        "TF_NUM_INTEROP_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    start = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, env=env, text=True)
    return round(time.perf_counter() - start, 2), done.stdout + done.stderr


def t2t_decode(engine: str, search: str, output: str) -> tuple[float, float | None, int]:
    """(whole-process seconds, the search's seconds and output tokens from t2t-decode's report)."""
    import translation_sides

    run_dir = os.path.join(FLAGS.work_dir, "t2t_run")
    command = [
        translation_sides.t2t_binary("t2t-decode"), f"--output_dir={run_dir}",
        f"--checkpoint_path={run_dir}/model.ckpt-{FLAGS.step}",
        f"--decode_from_file={FLAGS.source}", f"--decode_to_file={output}",
        f"--decode_hparams={search}", f"--engine={engine}",
    ]  # fmt: skip
    if engine == "ctranslate2":
        timed(command)  # the conversion, once per checkpoint: not timed
    seconds, log = timed(command)
    found = SEARCH_LINE.search(log)
    if not found:
        return seconds, None, 0
    return seconds, float(found.group(2)), int(found.group(1))


def onmt_decode(beam_size: int, alpha: float, output: str) -> tuple[float, float | None]:
    """(whole-process seconds, the translation's seconds from -report_time)."""
    import translation_sides

    checkpoint = translation_sides.onmt_checkpoint(FLAGS.work_dir, FLAGS.step)
    translate = os.path.join(os.path.dirname(FLAGS.onmt_python), "onmt_translate")
    source = os.path.join(FLAGS.work_dir, "onmt_test.src")
    seconds, log = timed(
        [translate, "-model", checkpoint, "-src", source, "-output", output,
         "-beam_size", str(beam_size), "-length_penalty", "wu", "-alpha", str(alpha),
         "-batch_size", "32", "-report_time"]
    )  # fmt: skip
    found = ONMT_TIME_LINE.search(log)
    return seconds, float(found.group(1)) if found else None


def per_second(tokens: int, seconds: float | None) -> float | None:
    return round(tokens / seconds, 1) if seconds else None


def main(argv):
    del argv
    import common
    import translation_sides

    from t2t_lite import files
    from t2t_lite.data import subword
    from t2t_lite.decoding import decoder as decoder_lib

    references = files.read_lines(FLAGS.reference)
    out = os.path.join(FLAGS.work_dir, "engines")
    os.makedirs(out, exist_ok=True)
    result = {"benchmark": "engines_on_file", "machine": common.machine(), "step": FLAGS.step}
    result["lines"] = len(references)
    for search in FLAGS.searches:
        hp = decoder_lib.decode_hparams(search)
        row, texts = {}, {}
        for engine in ("tensorflow", "ctranslate2"):
            output = os.path.join(out, f"{engine}.{search}.out")
            seconds, searched, tokens = t2t_decode(engine, search, output)
            row[f"{engine}_seconds"] = seconds
            row[f"{engine}_search_seconds"] = searched
            row[f"{engine}_output_tokens"] = tokens
            row[f"{engine}_tokens_per_search_second"] = per_second(tokens, searched)
            texts[engine] = [line.split("\t")[0] for line in files.read_lines(output)]
            row[f"{engine}_bleu"] = translation_sides.scores(texts[engine], references)["bleu"]
        pairs = zip(texts["tensorflow"], texts["ctranslate2"], strict=True)
        differ = [i for i, (a, b) in enumerate(pairs) if a != b]
        row["lines_that_differ"] = len(differ)
        row["differing"] = [
            {"line": i + 1, "tensorflow": texts["tensorflow"][i], "ctranslate2": texts["ctranslate2"][i]}
            for i in differ[: FLAGS.shown]
        ]  # fmt: skip
        if FLAGS.onmt_python and hp.beam_size > 1:
            output = os.path.join(out, f"onmt.{search}.ids")
            seconds, searched = onmt_decode(hp.beam_size, hp.alpha, output)
            row["onmt_translate_seconds"] = seconds
            row["onmt_translate_search_seconds"] = searched
            vocab = subword.load(
                os.path.join(FLAGS.work_dir, "t2t_run", "translate_from_files.vocab")
            )
            tokenizer = subword.SubwordTokenizer(vocab)
            ids = [
                [int(t) for t in line.split() if t.isdigit()] for line in files.read_lines(output)
            ]
            tokens = sum(len(line) for line in ids)  # subwords of the one shared vocabulary
            row["onmt_translate_output_tokens"] = tokens
            row["onmt_translate_tokens_per_search_second"] = per_second(tokens, searched)
            row["onmt_translate_bleu"] = translation_sides.scores(
                tokenizer.decode_many(ids), references
            )["bleu"]
            row["ctranslate2_over_onmt_translate"] = round(
                row["ctranslate2_seconds"] / row["onmt_translate_seconds"], 2
            )
            # Like for like: the two models write outputs of other lengths, so
            # the search's rate per output token (the same subword units) is
            # the figure that compares the searches; above 1: ours is faster.
            ours, theirs = (
                row["ctranslate2_tokens_per_search_second"],
                row["onmt_translate_tokens_per_search_second"],
            )
            row["tokens_per_second_ctranslate2_over_onmt_translate"] = (
                round(ours / theirs, 2) if ours and theirs else None
            )
        result[search] = row
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    app.run(main)
