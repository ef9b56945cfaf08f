"""Either side of bleu_vs_opennmt at one checkpoint: decode a source file, score it.

t2t_lite decodes with t2t-decode from its run directory. OpenNMT-py decodes
with onmt_translate from its own venv, on the file as subword ids of
t2t_lite's vocabulary, and its ids are detokenized by that vocabulary
again, so both are scored on the same detokenized text (sacrebleu).
"""

import glob
import os
import re
import subprocess
import sys

import resumable

from t2t_lite import files


def t2t_binary(name: str) -> str:
    """A t2t_lite program of the Python that runs this bench."""
    return os.path.join(os.path.dirname(sys.executable), name)


def t2t_steps(run_dir: str) -> list[int]:
    """The steps of t2t_lite's checkpoints in run_dir, oldest first."""
    from t2t_lite import checkpoints

    return sorted(checkpoints.step_of(path) for path in checkpoints.by_step(run_dir))


def onmt_steps(work: str) -> list[int]:
    found = glob.glob(os.path.join(work, "onmt_model", "model_step_*.pt"))
    return sorted(int(re.search(r"_(\d+)\.pt$", path).group(1)) for path in found)


def onmt_checkpoint(work: str, step: int) -> str:
    return os.path.join(work, "onmt_model", f"model_step_{step}.pt")


def _run(command: list[str], core: int | None, one_thread: bool) -> None:
    """Runs a decode to its end; held to `core` with one thread where one is named."""
    env = {**os.environ, **resumable.ONE_THREAD} if one_thread or core is not None else None
    subprocess.run(resumable.pinned(command, core), check=True, capture_output=True, env=env)


def t2t_decode(
    run_dir: str, step: int, source: str, output: str, search: str, core: int | None = None
) -> list[str]:
    """t2t_lite's checkpoint of `step` translates the lines of `source` into `output`
    (search: decode_hparams such as "beam_size=4,alpha=0.6") -> its translations."""
    _run(
        [t2t_binary("t2t-decode"), f"--output_dir={run_dir}", f"--decode_from_file={source}",
         f"--decode_to_file={output}", f"--checkpoint_path={run_dir}/model.ckpt-{step}",
         f"--decode_hparams={search}"],
        core, one_thread=False,
    )  # fmt: skip
    return [line.split("\t")[0] for line in files.read_lines(output)]


def onmt_decode(
    onmt_python: str,
    checkpoint: str,
    source_ids: str,
    output: str,
    vocab: list[str],
    beam_size: int,
    alpha: float,
    core: int | None = None,
) -> list[str]:
    """OpenNMT-py's `checkpoint` translates the id lines of `source_ids` into `output`
    (ids), with the GNMT length penalty -> its translations as detokenized text."""
    from t2t_lite.data import subword

    translate = os.path.join(os.path.dirname(onmt_python), "onmt_translate")
    _run(
        [translate, "-model", checkpoint, "-src", source_ids, "-output", output,
         "-beam_size", str(beam_size), "-length_penalty", "wu", "-alpha", str(alpha),
         "-batch_size", "32"],
        core, one_thread=True,
    )  # fmt: skip
    tokenizer = subword.SubwordTokenizer(vocab)
    return [
        tokenizer.decode([int(t) for t in line.split() if t.isdigit()])
        for line in files.read_lines(output)
    ]


def scores(hypotheses: list[str], references: list[str]) -> dict:
    """sacrebleu's corpus BLEU and chrF of the first len(references) hypotheses."""
    import sacrebleu

    hypotheses = hypotheses[: len(references)]
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
    }
