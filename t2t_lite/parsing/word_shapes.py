"""An unknown word's shape: the token a word outside a word vocabulary reads as.

A word vocabulary cut at the training words' most frequent (the parsing
problems') reads every other word as one unknown token, so a model learns
one embedding for "Barrington", "reopened" and "12.5". Parsers have long
read such words by their shape instead (Petrov et al. 2006's and the
Stanford parser's unknown-word signatures): a few classes from the word's
capitalization, digits, hyphen and suffix, each its own token
(`[UNK-Cap-ed]`). Training words rarer than the vocabulary's cut read as
their shapes too, so each shape's embedding is trained on them.

The same rules run in Python (`shape`, for datagen and host decoding) and in
the graph (`shapes`, for serving raw text); a test holds them equal.
"""

import re

import tensorflow as tf

# Suffixes, longest first where one ends another; the first that matches wins.
SUFFIXES = ("ing", "ion", "ity", "ed", "ly", "er", "est", "al", "ive", "ous", "ble", "ic", "s", "y")
NUMBER = "num"
OTHER = ""


def _token(case: str, kind: str) -> str:
    return f"[UNK-{case}-{kind}]" if kind else f"[UNK-{case}]"


def tokens() -> list[str]:
    """Every shape token, in a fixed order: numbers, then capitalized,
    lower-case and other words, each with a hyphen, each suffix, or neither."""
    out = [f"[UNK-{NUMBER}]"]
    for case in ("Cap", "low", "other"):
        out += [_token(case, kind) for kind in ("dash", *SUFFIXES, OTHER)]
    return out


def is_shape(token: str) -> bool:
    """Whether a token is one of the shapes (an output that is no tag)."""
    return token in _TOKENS


def shape(word: str) -> str:
    """A word -> its shape token (module docstring; capitals are ASCII's)."""
    if re.search(r"[0-9]", word):
        return f"[UNK-{NUMBER}]"
    if re.match(r"[A-Z]", word):  # ASCII, as the graph's
        case = "Cap"
    elif re.match(r"[a-z]", word):
        case = "low"
    else:
        case = "other"
    if "-" in word:
        return _token(case, "dash")
    lower = word.lower()
    for suffix in SUFFIXES:
        if lower.endswith(suffix) and len(lower) > len(suffix) + 1:
            return _token(case, suffix)
    return _token(case, OTHER)


_TOKENS = frozenset(tokens())


def shapes(words: tf.Tensor) -> tf.Tensor:
    """Words (a string tensor of any shape) -> their shape tokens, as `shape`
    (ASCII case; a word's first letter outside ASCII reads as "other")."""
    lower = tf.strings.lower(words)
    case = tf.where(
        tf.strings.regex_full_match(words, "[A-Z].*"),
        "Cap",
        tf.where(tf.strings.regex_full_match(words, "[a-z].*"), "low", "other"),
    )
    kind = tf.fill(tf.shape(words), OTHER)
    decided = tf.zeros(tf.shape(words), tf.bool)
    for suffix in SUFFIXES:
        # Longer than the suffix by two characters or more, as `shape` asks.
        hit = tf.strings.regex_full_match(lower, f"(?s).{{2,}}{suffix}") & ~decided
        kind = tf.where(hit, suffix, kind)
        decided |= hit
    dash = tf.strings.regex_full_match(words, "(?s).*-.*")
    kind = tf.where(dash, "dash", kind)
    named = tf.where(
        kind == OTHER,
        tf.strings.join(["[UNK-", case, "]"]),
        tf.strings.join(["[UNK-", case, "-", kind, "]"]),
    )
    number = tf.strings.regex_full_match(words, "(?s).*[0-9].*")
    return tf.where(number, f"[UNK-{NUMBER}]", named)
