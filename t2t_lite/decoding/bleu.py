"""BLEU with sacrebleu on detokenized text (never on subword ids)."""

import sacrebleu

from t2t_lite import sequences
from t2t_lite.data import problem as problem_lib


def corpus_bleu(hypotheses: list[str], references: list[str]) -> float:
    """sacrebleu's corpus BLEU (13a tokenization), 0..100."""
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: "
            "they must be aligned line by line"
        )
    return sacrebleu.corpus_bleu(hypotheses, [references]).score


def decoded_bleu(
    problem: problem_lib.Problem,
    examples: list[dict[str, list[int]]],
    outputs: list[list[tuple[list[int], float]]],
) -> float:
    """BLEU of the best decoded hypotheses (Decoder.decode_ids' outputs for the
    examples' inputs) against the examples' targets, both detokenized."""
    hypotheses = [problem.decode_text(hyps[0][0]) for hyps in outputs]
    references = [problem.decode_text(sequences.strip_eos(e["targets"])) for e in examples]
    return corpus_bleu(hypotheses, references)
