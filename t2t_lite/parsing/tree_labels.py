"""Constituency trees as one label per word (Gómez-Rodríguez and Vilares 2018,
"Constituent parsing as sequence labeling"), and a tree from any labels.

A tree over N words is written as N labels. Word i's label (i < N) says how
it joins word i + 1: the change in the number of constituents the two share
(relative to the pair before; the first pair's count from 0), and the label
of the lowest constituent they share; each label also carries the unary
chain over the word alone (constituents spanning only that word, outermost
first). The last word's label carries its unary chain only. A chain of
constituents over the same words is one label, outermost first, joined by
`+` (`S+VP`).

    (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))
    -> +2/NP/  -1/S/  +0/S/VP  =/

(The and dog share S and NP: 2, lowest NP; dog and barks share S only: 1,
so -1; barks and . share S: +0, and barks's VP is its unary chain; the last
word has none.) Tags are not labels: a decoded tree's words are tagged XX.

Every label sequence decodes to a tree over exactly its words (`decode`): a
count below 1 is read as 1 and one above MAX_SHARED as MAX_SHARED, a shared
constituent no label names is left out (its children go to its parent), a
second, different label for a constituent already named is ignored, a root
no label names is `S`, and a missing or malformed label reads as "+0, no
label, no chain" (or, for the last word, no chain). Each of these changes
the tree the labels describe, and each is counted (`mended`): a sequence
decodes with a count of 0 exactly when it describes its tree as written.
The encoding of a treebank tree decodes with 0 (the parsing problem refuses
one that does not) and so does every sequence a label-constrained search
writes (parsing/constraints.py).
"""

import re

from t2t_lite.parsing import trees

# Between a label's fields; inside a chain, between its constituents' labels.
FIELD = "/"
CHAIN = "+"
# The last word's label starts with this, where the others have their change.
LAST = "="
# The label of a root that no decoded label names.
DEFAULT_ROOT = trees.REPAIR_ROOT
# The most constituents two words may share: half the levels an output tree
# may nest, the other half left to the unary chains on them.
MAX_SHARED = trees.CONSTITUENT_LEVELS // 2

_PAIR = re.compile(r"^([+-]\d+)/([^/\s]+)/([^/\s]*)$")
_LAST = re.compile(r"^=/([^/\s]*)$")


def pair_label(change: int, label: str, chain: str) -> str:
    return f"{change:+d}{FIELD}{label}{FIELD}{chain}"


def last_label(chain: str) -> str:
    return f"{LAST}{FIELD}{chain}"


def read_pair(token: str) -> tuple[int, str, str] | None:
    """A word's label (not the last word's) -> (change, label, chain); None if
    the token is no such label."""
    match = _PAIR.match(token)
    if not match:
        return None
    return int(match.group(1)), match.group(2), match.group(3)


def read_last(token: str) -> str | None:
    """The last word's label -> its chain ('' for none); None if it is no such label."""
    match = _LAST.match(token)
    return match.group(1) if match else None


def _spans(tree: trees.Tree) -> list[tuple[int, int, str]]:
    """Every constituent (not the preterminals) -> (first word, end, label), in
    pre-order (a constituent before those inside it)."""
    found = []

    def walk(node: trees.Tree, start: int) -> int:
        if node.is_preterminal:
            return start + 1
        index = len(found)
        found.append(None)
        end = start
        for child in node.children:
            end = walk(child, end)
        found[index] = (start, end, node.label)
        return end

    walk(tree, 0)
    return found


def encode(tree: trees.Tree) -> list[str]:
    """A preprocessed tree -> one label per word (module docstring)."""
    count = len(tree.preterminals())
    chains: dict[tuple[int, int], list[str]] = {}
    for start, end, label in _spans(tree):
        chains.setdefault((start, end), []).append(label)
    unary = [""] * count
    wide = []  # (start, end, chain) of constituents over two words or more
    for (start, end), labels in chains.items():
        if end - start == 1:
            unary[start] = CHAIN.join(labels)
        else:
            wide.append((start, end, CHAIN.join(labels)))
    result = []
    before = 0
    for i in range(count - 1):
        shared = [(end - start, chain) for start, end, chain in wide if start <= i and i + 1 < end]
        lowest = min(shared)[1]  # spans nest: the shortest is the lowest
        result.append(pair_label(len(shared) - before, lowest, unary[i]))
        before = len(shared)
    if count:
        result.append(last_label(unary[count - 1]))
    return result


def _chained(chain: str, children: list[trees.Tree]) -> trees.Tree:
    """`A+B` over children -> (A (B children...))."""
    labels = chain.split(CHAIN)
    node = trees.Tree(labels[-1], children)
    for label in reversed(labels[:-1]):
        node = trees.Tree(label, [node])
    return node


def _leaf(word: str, chain: str) -> trees.Tree:
    leaf = trees.Tree(trees.NORMALIZED_TAG, word=word)
    return _chained(chain, [leaf]) if chain else leaf


class _Open:
    """A constituent being built: its label (None until a label names it)."""

    def __init__(self):
        self.label: str | None = None
        self.children: list = []


def _built(node, root: bool, unnamed: list[int]) -> list[trees.Tree]:
    """An _Open and what it holds -> trees; an unnamed constituent gives its
    children (an unnamed root: DEFAULT_ROOT), and is counted in unnamed[0]."""
    if isinstance(node, trees.Tree):
        return [node]
    children = [tree for child in node.children for tree in _built(child, False, unnamed)]
    if node.label is None:
        unnamed[0] += 1
        if not root:
            return children
    return [_chained(node.label or DEFAULT_ROOT, children)]


def decode(labels: list[str], words: list[str]) -> tuple[trees.Tree, int]:
    """Labels (any tokens) -> (a tree over exactly `words`, how many changes
    the decode made to what the labels describe: labels missing, malformed or
    of the wrong kind for their place, past the last word, with a count below
    1 or above MAX_SHARED, naming a constituent already named otherwise; and
    constituents no label names, the root included). Module docstring."""
    count = len(words)
    mended = max(0, len(labels) - count)
    path: list[_Open] = []  # the constituents open over the current word, root first
    root = None
    before = 0
    for i, word in enumerate(words):
        token = labels[i] if i < len(labels) else ""
        if i < count - 1:
            pair = read_pair(token)
            change, label, chain = pair if pair is not None else (0, None, "")
            shared = min(max(1, before + change), MAX_SHARED)
            mended += pair is None or shared != before + change
        else:
            chain = read_last(token)
            mended += chain is None
            shared, label, chain = 0, None, chain or ""
        del path[before:]  # constituents that end before this word
        while len(path) < max(before, shared):
            node = _Open()
            if path:
                path[-1].children.append(node)
            else:
                root = node
            path.append(node)
        leaf = _leaf(word, chain)
        if path:
            path[-1].children.append(leaf)
        else:
            root = leaf
        if label is not None:
            named = path[shared - 1]
            if named.label is None:
                named.label = label
            else:
                mended += named.label != label
        before = shared
    if root is None:
        raise ValueError("no words to decode a tree over")
    unnamed = [0]
    (tree,) = _built(root, True, unnamed)
    if tree.is_preterminal:  # one word without a chain: a root over it, as trees.repair
        tree = trees.Tree(DEFAULT_ROOT, [tree])
        unnamed[0] += 1
    return tree, mended + unnamed[0]


def encode_exactly(tree: trees.Tree) -> list[str]:
    """encode(tree), for a tree whose labels decode back to it, unchanged;
    ValueError for any other (a label holding the encoding's separators, or
    a tree its labels cannot describe as it is): what a training target
    must be."""
    todo = [tree]
    while todo:  # every constituent, without recursion
        node = todo.pop()
        if node.is_preterminal:
            continue
        todo.extend(node.children)
        for separator in (FIELD, CHAIN):
            if separator in node.label:
                raise ValueError(
                    f"the label {node.label!r} holds {separator!r}, which the one-label-per-word "
                    "encoding uses between its parts; rename it in the treebank"
                )
    labels = encode(tree)
    decoded, mended = decode(labels, tree.words())
    if mended or trees.linearize(decoded, "normalize") != trees.linearize(tree, "normalize"):
        raise ValueError(
            "its one-label-per-word encoding does not decode back to it (as "
            f"{trees.output_line(decoded)[:80]}...); a tree this problem cannot learn"
        )
    return labels
