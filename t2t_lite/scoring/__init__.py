"""Scorers: BLEU and chrF (sacrebleu), labelled brackets as EVALB scores them,
and two line-aligned files scored together (`aligned`)."""
