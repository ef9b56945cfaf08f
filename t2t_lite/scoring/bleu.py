"""BLEU with sacrebleu on detokenized text (never on subword ids)."""

import sacrebleu

from t2t_lite import sequences
from t2t_lite.data import problem as problem_lib


def corpus_bleu(hypotheses: list[str], references: list[str]) -> float:
    """sacrebleu's corpus BLEU (13a tokenization), 0..100."""
    _check_aligned(hypotheses, references)
    return sacrebleu.corpus_bleu(hypotheses, [references]).score


def _check_aligned(hypotheses: list[str], references: list[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: "
            "they must be aligned line by line"
        )


def file_bleu(hypotheses: list[str], references: list[str]) -> dict:
    """t2t-bleu's figures for aligned lines: sacrebleu's corpus BLEU (13a) on the
    text as written (cased) and lowercased, the line count and the signature."""
    if not references:
        raise ValueError("no lines to score")
    _check_aligned(hypotheses, references)
    cased = sacrebleu.metrics.BLEU()  # corpus_bleu's score; its signature after scoring
    uncased = sacrebleu.metrics.BLEU(lowercase=True)
    return {
        "bleu": round(cased.corpus_score(hypotheses, [references]).score, 2),
        "bleu_uncased": round(uncased.corpus_score(hypotheses, [references]).score, 2),
        "lines": len(references),
        "signature": str(cased.get_signature()),
    }


def decoded_bleu(
    problem: problem_lib.Problem,
    examples: list[dict[str, list[int]]],
    outputs: list[list[tuple[list[int], float]]],
) -> float:
    """BLEU of the best decoded hypotheses (Decoder.decode_ids' outputs for the
    examples' inputs) against the examples' targets, both detokenized."""
    hypotheses = problem.decode_texts([hyps[0][0] for hyps in outputs])
    references = problem.decode_texts([sequences.strip_eos(e["targets"]) for e in examples])
    return corpus_bleu(hypotheses, references)
