"""Penn Treebank trees: bracketed files read, the standard preprocessing, the
linearized form a parser writes, and a well-formed tree made from any output.

Bracketed text holds trees like `(S (NP (NNP Pierre) (NNP Vinken)) (VP ...))`,
many per file, spread over lines or one per line, each optionally inside an
outer `( ... )` wrapper without a label (the treebank's `.mrg` files) or a
`(TOP ...)` / `(ROOT ...)` one. A node with a word is a preterminal: its
label is the word's part-of-speech tag.

The linearized form (Vinyals et al. 2015, "Grammar as a foreign language",
which the Transformer paper follows for parsing) writes a tree depth-first as
whitespace-separated symbols: `(X` opens constituent X, `)X` closes it, and
each word is its tag (or `XX` when tags are normalized, or the word itself):

    (S (NP (NNP Pierre) (NNP Vinken)) (VP (VBZ sleeps)) (. .))
    -> (S (NP NNP NNP )NP (VP VBZ )VP . )S
"""

import dataclasses
import re
from collections.abc import Iterator

# Labels of the wrapper a treebank puts around each tree.
WRAPPER_LABELS = ("", "TOP", "ROOT")
# The label of an empty element (trace, null complementizer).
EMPTY_ELEMENT = "-NONE-"
# The tag every word gets in linearized trees with normalized tags.
NORMALIZED_TAG = "XX"
# The label a repaired tree's root gets when the output has none or several.
REPAIR_ROOT = "S"
# The wrapper written around every output tree (EVALB's COLLINS.prm deletes it).
OUTPUT_ROOT = "TOP"
# How a linearized tree writes a word: its tag ("keep"), XX ("normalize"), or
# the word itself ("word": the decoder reads the sentence as it writes the
# tree, so where it stands in the input is never counted).
POS_MODES = ("keep", "normalize", "word")
# The deepest nesting a tree may have: the WSJ's deepest trees are about 40
# levels; the recursive walks below stay far inside Python's recursion limit.
MAX_DEPTH = 200
# The constituents an output tree may nest: MAX_DEPTH less the TOP wrapper
# `output_line` adds and the preterminal at the bottom, so that whatever a
# search or a repair writes reads back (the constraints and the label decode
# take their depth from here).
CONSTITUENT_LEVELS = MAX_DEPTH - 2
# Words quoted in an error message are cut to this many characters.
QUOTED_CHARACTERS = 40

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class TreeError(ValueError):
    """A bracketed text that is not a tree; the message names file, line and tree."""


def escaped(token: str) -> str:
    """A word or label with its brackets written as the treebank's -LRB- / -RRB-."""
    return token.replace("(", "-LRB-").replace(")", "-RRB-")


def _cut(token: str) -> str:
    """A word or label as an error message shows it, cut to QUOTED_CHARACTERS."""
    if len(token) <= QUOTED_CHARACTERS:
        return token
    return f"{token[:QUOTED_CHARACTERS]}...({len(token):,} characters)"


def _quoted(token: str) -> str:
    return repr(_cut(token))


@dataclasses.dataclass
class Tree:
    """A constituent (children, no word) or a preterminal (a tag and its word)."""

    label: str
    children: list["Tree"] = dataclasses.field(default_factory=list)
    word: str | None = None

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def preterminals(self) -> list["Tree"]:
        if self.is_preterminal:
            return [self]
        return [leaf for child in self.children for leaf in child.preterminals()]

    def words(self) -> list[str]:
        return [leaf.word for leaf in self.preterminals()]

    def tags(self) -> list[str]:
        return [leaf.label for leaf in self.preterminals()]

    def bracketed(self) -> str:
        """The tree on one line: `(S (NP (NNP Pierre)) ...)`; a bracket inside a
        word or label is written as the treebank writes it (`-LRB-`, `-RRB-`),
        so that the line reads back as the same tree."""
        if self.is_preterminal:
            return f"({escaped(self.label)} {escaped(self.word)})"
        inside = " ".join(child.bracketed() for child in self.children)
        return f"({escaped(self.label)} {inside})" if self.label else f"( {inside})"


def read_trees(text: str, source: str) -> Iterator[tuple[Tree, int]]:
    """Every tree of a bracketed text -> (tree, the line it starts on), as written.

    Raises TreeError naming `source`, the line and the tree's number for an
    unclosed tree, a ")" that closes nothing, a word outside any bracket, a
    bracket with a label and more than one word, a word beside child brackets
    (before or after them), a tree nested deeper than MAX_DEPTH, or a text
    with no tree.
    """
    count = 0
    stack: list[Tree] = []
    start_line = 1
    line = 1
    position = 0
    for match in _TOKEN.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        token = match.group()
        where = f"{source}:{line}: tree {count + 1}"
        if token == "(":
            if not stack:
                start_line = line
            elif stack[-1].word is not None:
                node = stack[-1]
                raise TreeError(
                    f"{where}: the word {_quoted(node.word)} comes before brackets "
                    f"inside ({_cut(node.label)} ...)"
                )
            elif len(stack) >= MAX_DEPTH:
                raise TreeError(f"{where} is nested deeper than {MAX_DEPTH} levels")
            stack.append(Tree(""))
            continue
        if token == ")":
            if not stack:
                raise TreeError(f"{source}:{line}: a ')' after tree {count} closes no bracket")
            node = stack.pop()
            if not node.children and node.word is None:
                raise TreeError(f"{where}: the bracket ({_cut(node.label)} ...) holds nothing")
            if stack:
                stack[-1].children.append(node)
            else:
                count += 1
                yield node, start_line
            continue
        if not stack:
            raise TreeError(f"{where}: the word {_quoted(token)} is outside any bracket")
        node = stack[-1]
        if match.start() and text[match.start() - 1] == "(":  # right after "(": a label
            node.label = token
        elif node.children:
            raise TreeError(
                f"{where}: the word {_quoted(token)} follows a bracket inside ({_cut(node.label)} ...)"
            )
        elif node.word is not None:
            raise TreeError(
                f"{where}: ({_cut(node.label)} {_cut(node.word)} {_cut(token)} ...) "
                "has more than one word"
            )
        elif not node.label:
            raise TreeError(
                f"{where}: the word {_quoted(token)} has no tag (a bracket with no label)"
            )
        else:
            node.word = token
    if stack:
        raise TreeError(
            f"{source}:{start_line}: tree {count + 1} is not closed (unbalanced brackets)"
        )
    if not count:
        raise TreeError(f"{source}: holds no tree")


def clean_label(label: str) -> str:
    """A label without function tags or indices: NP-SBJ-1 -> NP, NP=2 -> NP.

    Labels that start with "-" (-NONE-, -LRB-, -RRB-) are kept whole, and so
    is a label that stripping would empty (`=X`, `=2`): a tag must stay a tag.
    """
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def preprocess(tree: Tree) -> Tree | None:
    """The standard preprocessing: the wrapper dropped, empty elements and the
    constituents they leave empty removed, function tags and indices stripped.
    None when no word is left."""
    while not tree.is_preterminal and tree.label in WRAPPER_LABELS and len(tree.children) == 1:
        tree = tree.children[0]
    return _clean(tree)


def _clean(tree: Tree) -> Tree | None:
    if tree.is_preterminal:
        if tree.label == EMPTY_ELEMENT:
            return None
        return Tree(clean_label(tree.label), word=tree.word)
    children = [kept for child in tree.children if (kept := _clean(child)) is not None]
    if not children:
        return None
    return Tree(clean_label(tree.label) or REPAIR_ROOT, children)


def linearize(tree: Tree, pos: str = "keep") -> str:
    """A preprocessed tree -> its linearized symbols (module docstring)."""
    if pos not in POS_MODES:
        raise ValueError(f"pos must be one of {POS_MODES}, not {pos!r}")
    symbols: list[str] = []

    def walk(node: Tree) -> None:
        if node.is_preterminal:
            symbols.append({"keep": node.label, "word": node.word}.get(pos, NORMALIZED_TAG))
            return
        symbols.append("(" + node.label)
        for child in node.children:
            walk(child)
        symbols.append(")" + node.label)

    walk(tree)
    return " ".join(symbols)


def is_open(symbol: str) -> bool:
    """`(X`: a linearized symbol that opens constituent X (a bare `(` is a tag)."""
    return symbol.startswith("(") and len(symbol) > 1


def is_close(symbol: str) -> bool:
    """`)X`: a linearized symbol that closes constituent X (a bare `)` is a tag)."""
    return symbol.startswith(")") and len(symbol) > 1


def is_tree_over(symbols: list[str], word_count: int) -> bool:
    """Whether linearized symbols are one tree over exactly `word_count` words as
    they stand: each close the innermost open's (`)X` for `(X`), no empty
    constituent, one root, and one preterminal per word (what `repair` would
    leave unchanged)."""
    stack: list[list] = []  # [label, has a child]
    roots = words = 0
    for symbol in symbols:
        if is_open(symbol):
            if not stack and roots:
                return False
            if stack:
                stack[-1][1] = True
            stack.append([symbol[1:], False])
        elif is_close(symbol):
            if not stack or stack[-1][0] != symbol[1:] or not stack[-1][1]:
                return False
            stack.pop()
            roots += not stack
        else:
            if not stack:
                return False
            stack[-1][1] = True
            words += 1
    return not stack and roots == 1 and words == word_count


def repair(symbols: list[str], words: list[str]) -> Tree:
    """A well-formed tree over exactly `words`, from any sequence of output symbols.

    The symbols are read left to right with a stack of open constituents:
    `(X` opens X; `)X` (any label) closes the innermost open one and is
    dropped when none is open (`is_open`, `is_close`); any other symbol, a bare
    `(` or `)` too, is a preterminal whose tag is the symbol and whose word is
    the next input word, dropped when every word is placed. An open past
    CONSTITUENT_LEVELS is dropped. Words left over at the end are appended, tagged `XX`, to the
    outermost open constituent (or the root). Open constituents are closed at
    the end, constituents that hold no word are removed, and several top-level
    pieces (or none) are put under one `S`. The result is wrapped in `(TOP ...)`
    by `output_line`, not here.
    """
    root = Tree("")
    stack = [root]
    placed = dropped = 0
    for symbol in symbols:
        if is_open(symbol):
            if len(stack) > CONSTITUENT_LEVELS:  # deeper than any tree: dropped with its close
                dropped += 1
                continue
            node = Tree(symbol[1:])
            stack[-1].children.append(node)
            stack.append(node)
        elif is_close(symbol):
            if dropped:
                dropped -= 1
            elif len(stack) > 1:
                stack.pop()
        elif placed < len(words):
            stack[-1].children.append(Tree(symbol, word=words[placed]))
            placed += 1
    target = stack[1] if len(stack) > 1 else root
    for word in words[placed:]:
        target.children.append(Tree(NORMALIZED_TAG, word=word))
    pruned = _prune(root)
    children = pruned.children if pruned else []
    if len(children) == 1 and not children[0].is_preterminal:
        return children[0]
    return Tree(REPAIR_ROOT, children)


def _prune(tree: Tree) -> Tree | None:
    if tree.is_preterminal:
        return tree
    children = [kept for child in tree.children if (kept := _prune(child)) is not None]
    return Tree(tree.label, children) if children else None


def output_line(tree: Tree) -> str:
    """The line a parser writes for a tree: `(TOP (S ...))`."""
    return Tree(OUTPUT_ROOT, [tree]).bracketed()
