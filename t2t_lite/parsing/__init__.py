"""Constituency parsing: Penn Treebank trees (`trees`), a tree as one label
per word (`tree_labels`), raw English split as the treebank writes it
(`treebank_text`), unknown words read by their shape (`word_shapes`), and
the searches that write only trees (`constraints`, a parsing problem's
`decode_constraint`). The problems are problems/parsing.py; the scorer is
scoring/evalb.py."""
