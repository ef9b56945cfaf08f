"""Labelled bracket scoring of parses, as the EVALB program scores them.

EVALB (Sekine and Collins, 1997) with its COLLINS.prm parameters is the
scorer every constituency-parsing figure is reported with. This module
follows its C source line by line (reading, deletion, label equivalence,
matching, crossing, the error and skip rules, the totals), so the figures
are EVALB's, checked against the compiled program by
`bench/evalb_reference.py`. Its rules, from COLLINS.prm:

- words tagged `,` `:` `` `` `` `''` `.` or `-NONE-` are deleted with their
  brackets; constituents labelled `TOP` are not counted; a constituent left
  spanning no word is not counted;
- labels lose what follows their first `-` or `=` (NP-SBJ-1 -> NP);
  ADVP and PRT are the same label;
- a sentence whose test parse has no word is skipped; one whose lengths or
  words differ, or whose brackets do not balance, is an error; neither
  counts in the totals;
- a gold bracket matches at most one test bracket of the same span and
  label, and the other way round;
- the totals also hold for sentences of at most 40 words (`-NONE-` not
  counted, punctuation counted).

One tree per line in both files. Where the C program misbehaves this
module does not follow it, and says so: a word outside any bracket (EVALB
loops on it until its error limit ends the run) is an error sentence, and a
file with more errors than the limit (-e, 10 by default) is scored whole
instead of ending the run without totals.
"""

import dataclasses
import json

from t2t_lite.parsing import trees

DELETE_LABELS = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
DELETE_LABELS_FOR_LENGTH = frozenset({"-NONE-"})
EQUAL_LABELS = (("ADVP", "PRT"),)
CUTOFF_LENGTH = 40

OK, ERROR, SKIP = 0, 1, 2
# C's isspace() in the "C" locale; a UTF-8 byte above 127 is never one.
_SPACES = frozenset(" \t\n\v\f\r")
_TERMINATORS = _SPACES | frozenset("()")


@dataclasses.dataclass
class _Bracket:
    start: int
    end: int = -1
    label: str = ""
    counted: bool = True
    matched: bool = False


@dataclasses.dataclass
class _Parse:
    """One line as EVALB reads it."""

    terminals: list[tuple[str, str]]  # (tag, word), deleted ones left out
    brackets: list[_Bracket]
    length: int  # words not tagged -NONE- (the cutoff's length)
    error: str | None


def _is_terminator(char: str) -> bool:
    return char in _TERMINATORS


def _read(line: str) -> _Parse:
    """EVALB's read_line: terminals, brackets and length of one bracketed line."""
    terminals: list[tuple[str, str]] = []
    brackets: list[_Bracket] = []
    stack: list[int] = []
    error = None
    length = 0
    p, n = 0, len(line)
    while p < n:
        char = line[p]
        if char in _SPACES:
            p += 1
        elif char == "(":
            p += 1
            start = p
            while p < n and not _is_terminator(line[p]):
                p += 1
            label = line[start:p]
            if p < n and line[p] in _SPACES:
                q = p
                while q < n and line[q] in _SPACES:
                    q += 1
                start = q
                while q < n and not _is_terminator(line[q]):
                    q += 1
                word = line[start:q]
                if q < n and line[q] == ")":
                    if label not in DELETE_LABELS_FOR_LENGTH:
                        length += 1
                    if label not in DELETE_LABELS:
                        terminals.append((label, word))
                    p = q + 1
                    continue
                if q >= n or line[q] != "(":
                    error = error or "more than two elements in a bracket"
            stack.append(len(brackets))
            brackets.append(_Bracket(len(terminals), label=label))
        elif char == ")":
            if stack:
                brackets[stack.pop()].end = len(terminals)
            else:
                error = error or "unbalanced brackets (too many close brackets)"
            p += 1
        else:
            # EVALB reports this and reads the same character again until its
            # error limit stops the program; here the sentence is an error.
            error = error or f"a word outside a bracket at character {p + 1}"
            while p < n and not _is_terminator(line[p]):
                p += 1
    if stack:
        error = error or "unbalanced brackets (too many open brackets)"
        for index in stack:  # never closed: EVALB leaves their end unset
            brackets[index].end = -1
    return _Parse(terminals, brackets, length, error)


def _same_label(a: str, b: str) -> bool:
    return a == b or any({a, b} == {x, y} for x, y in EQUAL_LABELS)


def _massage(parse: _Parse) -> int:
    """Marks the brackets that do not count -> the number that do."""
    for bracket in parse.brackets:
        bracket.matched = False
        if bracket.start == bracket.end:
            bracket.counted = False
            continue
        # EVALB's modify_label: the label ends at its first "-" or "=".
        cut = next((i for i, c in enumerate(bracket.label) if c in "-="), len(bracket.label))
        bracket.label = bracket.label[:cut]
        bracket.counted = not any(_same_label(bracket.label, d) for d in DELETE_LABELS)
    return sum(bracket.counted for bracket in parse.brackets)


@dataclasses.dataclass
class Sentence:
    """One sentence's figures, as EVALB's per-sentence line has them."""

    status: int  # OK, ERROR or SKIP
    length: int  # the gold's length for the cutoff
    gold_brackets: int = 0
    test_brackets: int = 0
    matched: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    error: str | None = None


def score_sentence(gold_line: str, test_line: str) -> Sentence:
    """One gold line against one test line (EVALB's calc_result)."""
    gold, test = _read(gold_line), _read(test_line)
    error = gold.error or test.error
    status = ERROR if error else OK
    if not test.terminals:
        return Sentence(SKIP, gold.length, error="the test parse has no word")
    if len(gold.terminals) != len(test.terminals):
        counts = f"{len(gold.terminals)}|{len(test.terminals)}"
        return Sentence(ERROR, gold.length, error=f"length unmatch ({counts})")
    for (_, gold_word), (_, test_word) in zip(gold.terminals, test.terminals, strict=True):
        if gold_word != test_word:
            return Sentence(ERROR, gold.length, error=f"words unmatch ({gold_word}|{test_word})")
    gold_count, test_count = _massage(gold), _massage(test)
    matched = 0
    for g in gold.brackets:
        if not g.counted:
            continue
        for t in test.brackets:
            same_span = (g.start, g.end) == (t.start, t.end)
            if t.counted and not t.matched and same_span and _same_label(g.label, t.label):
                g.matched = t.matched = True
                matched += 1
                break
    crossing = 0
    for t in test.brackets:
        if not t.counted:
            continue
        for g in gold.brackets:
            if g.counted and (
                (g.start < t.start < g.end < t.end) or (t.start < g.start < t.end < g.end)
            ):
                crossing += 1
                break
    correct = sum(
        _same_label(g_tag, t_tag)
        for (g_tag, _), (t_tag, _) in zip(gold.terminals, test.terminals, strict=True)
    )
    return Sentence(
        status=status,
        length=gold.length,
        gold_brackets=gold_count,
        test_brackets=test_count,
        matched=matched,
        crossing=crossing,
        words=len(gold.terminals),
        correct_tags=correct,
        error=error,
    )


def totals(sentences: list[Sentence]) -> dict:
    """EVALB's summary of the given sentences (its "All" or "len<=40" block)."""
    valid = [s for s in sentences if s.status == OK]
    gold = sum(s.gold_brackets for s in valid)
    test = sum(s.test_brackets for s in valid)
    matched = sum(s.matched for s in valid)
    words = sum(s.words for s in valid)
    recall = 100.0 * matched / gold if gold else 0.0
    precision = 100.0 * matched / test if test else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    n = len(valid)
    complete = sum(s.gold_brackets == s.test_brackets == s.matched for s in valid)
    return {
        "sentences": len(sentences),
        "errors": sum(s.status == ERROR for s in sentences),
        "skipped": sum(s.status == SKIP for s in sentences),
        "valid": n,
        "recall": recall,
        "precision": precision,
        "f1": f1,
        "exact_match": 100.0 * complete / n if n else 0.0,
        "average_crossing": sum(s.crossing for s in valid) / n if n else 0.0,
        "no_crossing": 100.0 * sum(s.crossing == 0 for s in valid) / n if n else 0.0,
        "two_or_less_crossing": 100.0 * sum(s.crossing <= 2 for s in valid) / n if n else 0.0,
        "tagging_accuracy": 100.0 * sum(s.correct_tags for s in valid) / words if words else 0.0,
    }


def score_lines(gold_lines: list[str], test_lines: list[str]) -> dict:
    """Corpus figures (percentages, as EVALB prints them) for all sentences and
    for those of at most CUTOFF_LENGTH words, with every error sentence's
    number and cause. Raises ValueError when the line counts differ."""
    if len(gold_lines) != len(test_lines):
        raise ValueError(
            f"the gold file has {len(gold_lines)} lines and the test file {len(test_lines)}: "
            "one tree per line in both, in the same order"
        )
    sentences = [score_sentence(g, t) for g, t in zip(gold_lines, test_lines, strict=True)]
    result = totals(sentences)
    result[f"len<={CUTOFF_LENGTH}"] = totals([s for s in sentences if s.length <= CUTOFF_LENGTH])
    result["problems"] = [
        f"{number}: {s.error}" for number, s in enumerate(sentences, start=1) if s.error
    ]
    return result


def json_line(result: dict) -> str:
    """The one-line report: figures rounded as EVALB prints them (two decimals)."""

    def rounded(block: dict) -> dict:
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in block.items()}

    short = {k: v for k, v in result.items() if k != "problems"}
    short = rounded(short)
    short[f"len<={CUTOFF_LENGTH}"] = rounded(result[f"len<={CUTOFF_LENGTH}"])
    short["problems"] = len(result["problems"])
    return json.dumps(short)


def with_gold_tags(gold_lines: list[str], test_lines: list[str]) -> list[str]:
    """Each test tree with its gold tree's part-of-speech tags, so brackets are
    scored on every sentence: EVALB deletes punctuation by its tag and drops a
    sentence whose lengths then differ (a comma tagged NN, or every tag XX),
    and tags are a tagger's business. A line that is not a tree, or whose
    words differ in number from the gold's, is left as it is (EVALB counts it);
    `gold_tagged` also says which and why."""
    return gold_tagged(gold_lines, test_lines)[0]


def gold_tagged(gold_lines: list[str], test_lines: list[str]) -> tuple[list[str], list[str]]:
    """(with_gold_tags' lines, one note per line left with the test's own tags:
    "N: why", N counting from 1)."""
    tagged, untagged = [], []
    for number, (gold_line, test_line) in enumerate(zip(gold_lines, test_lines, strict=True), 1):
        gold, why = _one_tree(gold_line, "gold")
        test, test_why = _one_tree(test_line, "test") if gold else (None, "")
        if gold is None or test is None:
            untagged.append(f"{number}: {why or test_why}")
            tagged.append(test_line)
            continue
        leaves, tags = test.preterminals(), gold.tags()
        if len(leaves) != len(tags):
            untagged.append(f"{number}: {len(leaves)} test words against {len(tags)} gold tags")
            tagged.append(test_line)
            continue
        for leaf, tag in zip(leaves, tags, strict=True):
            leaf.label = tag
        tagged.append(test.bracketed())
    return tagged, untagged


def _one_tree(line: str, which: str) -> tuple[trees.Tree | None, str]:
    """(the line's one tree, "") or (None, why the project's reader refuses it)."""
    try:
        read = list(trees.read_trees(line, which))
    except trees.TreeError as err:
        reason = str(err).split(": ", 2)[-1]
        return None, f"the {which} line is not a tree the reader takes ({reason})"
    if len(read) != 1:
        return None, f"the {which} line holds {len(read)} trees, not one"
    return read[0][0], ""
