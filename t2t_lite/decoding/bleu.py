"""BLEU with sacrebleu on detokenized text (never on subword ids)."""

import sacrebleu

from t2t_lite.data import problem as problem_lib
from t2t_lite.data import tfrecord
from t2t_lite.decoding import decoder as decoder_lib


def corpus_bleu(hypotheses: list[str], references: list[str]) -> float:
    """sacrebleu's corpus BLEU (13a tokenization), 0..100."""
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: "
            "they must be aligned line by line"
        )
    return sacrebleu.corpus_bleu(hypotheses, [references]).score


def strip_eos(ids: list[int]) -> list[int]:
    return ids[:-1] if ids and ids[-1] == problem_lib.EOS_ID else list(ids)


def examples_bleu(
    decoder: decoder_lib.Decoder, problem: problem_lib.Problem, examples: list[dict]
) -> tuple[float, list[str]]:
    """Decodes the examples' inputs; BLEU of the detokenized outputs against the targets."""
    outputs = decoder.decode_ids([strip_eos(e["inputs"]) for e in examples])
    hypotheses = [problem.decode_text(hyps[0][0]) for hyps in outputs]
    references = [problem.decode_text(strip_eos(e["targets"])) for e in examples]
    return corpus_bleu(hypotheses, references), hypotheses


def read_examples(paths: list[str], limit: int) -> list[dict]:
    """The first `limit` examples of a split's shards (all when limit < 0)."""
    examples: list[dict] = []
    for path in paths:
        tfrecord.check_file(path)
        for example in tfrecord.read_records(path):
            if 0 <= limit <= len(examples):
                return examples
            examples.append(example)
    return examples
