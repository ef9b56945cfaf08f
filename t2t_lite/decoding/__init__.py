"""Decoding: greedy, sampling and beam search over cached decode steps."""
