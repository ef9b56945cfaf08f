"""Raw English text split into words as the Penn Treebank writes them, so that
a parser trained on treebank trees reads a user's sentence as it read its
training data:

    He didn't see the (red) car.  ->  He did n't see the -LRB- red -RRB- car .
    "Yes," she said.              ->  `` Yes , '' she said .

The conventions (the treebank's tokenization guidelines): punctuation is a
word of its own (a comma between digits, a colon between digits and a period
inside a word stay); the sentence's final period is split off (after an
abbreviation such as `U.S.` or `Inc.` the word keeps its period and another
follows, as the WSJ trees have it); contractions split before the clitic
(`did n't`, `ca n't`, `John 's`, `we 're`, `I 'm`, `they 've`, `we 'll`,
`he 'd`, `can not`, `gon na`); `$` after capitals (`US$`, `C$`) and `&` stay
in their word (`S&L`, `AT&T`); double quotes become `` and '' by
position, a single opening quote ` and a closing one '; brackets become
-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-; `--` and `...` are words; typographic
quotes, dashes and ellipses are read as their ASCII forms.

Text already split this way comes back unchanged (the treebank's own words,
`-LRB-`, ``, `n't`, `...`, are left as they are), so tokenized input may go
through it too.
"""

import re

BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}
# Words written with their period inside a sentence; at its end another period follows.
ABBREVIATIONS = frozenset(
    [
        "Inc.",
        "Corp.",
        "Co.",
        "Ltd.",
        "Bros.",
        "Jr.",
        "Sr.",
        "Mr.",
        "Mrs.",
        "Ms.",
        "Dr.",
        "Prof.",
        "St.",
        "Ave.",
        "Gen.",
        "Gov.",
        "Sen.",
        "Rep.",
        "Rev.",
        "Lt.",
        "Col.",
        "Sgt.",
        "Capt.",
        "No.",
        "vs.",
        "etc.",
        "Jan.",
        "Feb.",
        "Mar.",
        "Apr.",
        "Aug.",
        "Sept.",
        "Sep.",
        "Oct.",
        "Nov.",
        "Dec.",
        "a.m.",
        "p.m.",
    ]
)
# Words the treebank splits inside (the second part is the clitic).
SPLIT_WORDS = {
    "cannot": ("can", "not"),
    "gonna": ("gon", "na"),
    "wanna": ("wan", "na"),
    "gimme": ("gim", "me"),
    "lemme": ("lem", "me"),
}
_TYPOGRAPHIC = {
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u2018": "`",
    "\u2019": "'",
    "\u2013": "--",
    "\u2014": "--",
    "\u2026": "...",
}
_CLITIC = re.compile(r"(?i)^(.+?)(n't|'s|'re|'ve|'ll|'d|'m)$")
_INITIALS = re.compile(r"^([A-Za-z]\.)+$")
# Elisions the treebank writes as one word with their quotes: 'n' ("rock 'n'
# roll") and a backquoted `em / `til / `cause; kept whole.
_ELISION = re.compile(r"(?i)^(?:'n'|`(?:em|til|cause|n))$")


def tokenize(text: str) -> list[str]:
    """A line of raw English -> its words as the Penn Treebank writes them."""
    for typographic, plain in _TYPOGRAPHIC.items():
        text = text.replace(typographic, plain)
    # Double quotes: opening at the start or after a space or an opening bracket.
    text = re.sub(r'(^|[\s(\[{<])"', r"\1 `` ", text)
    text = text.replace('"', " '' ")
    text = re.sub(r"\.\.\.", " ... ", text)
    text = re.sub(r"--", " -- ", text)
    text = re.sub(r"[;?!]|%(?!-)|(?<![A-Z])\$", r" \g<0> ", text)  # US$, 62%-owned stay
    text = re.sub(r"\$(?=[\d.])", "$ ", text)  # US$5 -> US$ 5
    text = re.sub(r"[()\[\]{}<>]", r" \g<0> ", text)
    text = re.sub(r",(?!\d)|(?<!\d),", " , ", text)  # 1,000 stays whole
    text = re.sub(r":(?!\d)|(?<!\d):", " : ", text)  # 10:30 stays whole
    words: list[str] = []
    for word in _final_period(text.split()):
        words += _split_word(word)
    return words


def _split_word(word: str) -> list[str]:
    if word in BRACKETS:
        return [BRACKETS[word]]
    if word in ("``", "''", "`", "'", "--", "...") or word in BRACKETS.values():
        return [word]
    before: list[str] = []
    after: list[str] = []
    # An opening single quote before a letter, not a clitic or an elision ('s, '90s, 'em).
    if _ELISION.match(word):  # the treebank's own words: 'n' (rock 'n' roll), `em
        return [word]
    elided = re.match(r"(?i)'(em|tis|twas|n)$", word)
    opening = len(word) > 1 and word[0] == "'" and word[1].isalpha()
    if opening and not elided and not _CLITIC.match("x" + word):
        before, word = ["`"], word[1:]
    if word.startswith("`") and word != "`":
        before, word = ["`"], word.lstrip("`")
    # A closing single quote (or a plural possessive's apostrophe): its own word.
    if len(word) > 1 and word.endswith("'") and not word.endswith("''"):
        word, after = word[:-1], ["'"]
    if word.lower() in SPLIT_WORDS:
        first = SPLIT_WORDS[word.lower()][0]
        return [*before, word[: len(first)], word[len(first) :], *after]
    return before + _clitics(word) + after


def _clitics(word: str) -> list[str]:
    """did|n't, John|'s, ca|n't (can't: the lazy stem), it|'s; a clitic alone
    stays. Clitics come off the end one at a time, in a loop: a word of any
    number of them (`a's's's...`) costs no recursion."""
    clitics: list[str] = []
    while match := _CLITIC.match(word):
        word, clitic = match.groups()
        clitics.append(clitic)
    return [word, *reversed(clitics)]


def _final_period(words: list[str]) -> list[str]:
    """The sentence's final period split off (before closing quotes and brackets)."""
    closing = ("''", "'", *BRACKETS.values(), ")", "]", "}")
    end = len(words)
    while end > 0 and words[end - 1] in closing:
        end -= 1
    if end == 0:
        return words
    last = words[end - 1]
    if last == "." or not last.endswith(".") or last.endswith("..."):
        return words
    if last in ABBREVIATIONS or _INITIALS.match(last):
        middle = [last, "."]
    else:
        middle = [last[:-1], "."]
    return words[: end - 1] + middle + words[end:]
