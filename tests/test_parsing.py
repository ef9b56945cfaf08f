"""Constituency parsing: treebank reading, preprocessing, linearization, repair,
the EVALB scorer (hand-derived goldens), the problem and its programs."""

import json
import os

import pytest
from conftest import run_binary

from t2t_lite.decoding import runner
from t2t_lite.parsing import trees
from t2t_lite.scoring import evalb

MRG = """\
( (S
    (NP-SBJ-1 (NNP Pierre) (NNP Vinken) )
    (VP (VBD reported)
      (SBAR (-NONE- 0)
        (S (-NONE- *T*-1) )))
    (. .) ))
( (S (NP=2 (-LRB- -LRB-) (PRP it) (-RRB- -RRB-) ) (VP (VBZ is) ) ) )
"""


def tree(text: str) -> trees.Tree:
    [(parsed, _)] = trees.read_trees(text, "t")
    return parsed


def test_mrg_trees_are_read_with_their_lines_and_preprocessed_as_the_standard_says():
    read = list(trees.read_trees(MRG, "wsj_0001.mrg"))
    assert [line for _, line in read] == [1, 7]
    first, second = (trees.preprocess(t) for t, _ in read)
    # Empty elements and the SBAR and S they leave empty go; function tags go.
    assert first.bracketed() == "(S (NP (NNP Pierre) (NNP Vinken)) (VP (VBD reported)) (. .))"
    assert second.bracketed() == "(S (NP (-LRB- -LRB-) (PRP it) (-RRB- -RRB-)) (VP (VBZ is)))"
    assert first.words() == ["Pierre", "Vinken", "reported", "."]
    assert trees.clean_label("NP-SBJ-1") == "NP" and trees.clean_label("NP=2") == "NP"
    assert trees.clean_label("-LRB-") == "-LRB-" and trees.clean_label("PRP$") == "PRP$"
    assert trees.preprocess(tree("( (S (-NONE- *) ))")) is None
    # One tree per line and a (TOP ...) wrapper read the same.
    assert trees.preprocess(tree("(TOP (S (NN a)))")) == trees.preprocess(tree("( (S (NN a)))"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("( (S (NN a) )\n", "t.mrg:1: tree 1 is not closed"),
        ("(S (NN a)))\n", "t.mrg:1: a ')' after tree 1 closes no bracket"),
        ("\n\n", "t.mrg: holds no tree"),
        ("(S (NN a)) stray", "t.mrg:1: tree 2: the word 'stray' is outside any bracket"),
        ("(S (NN a b))", "t.mrg:1: tree 1: (NN a b ...) has more than one word"),
        ("(S\n (NP ))", "t.mrg:2: tree 1: the bracket (NP ...) holds nothing"),
        ("(S (NN a) b)", "t.mrg:1: tree 1: the word 'b' follows a bracket inside (S ...)"),
        # A word before child brackets: refused, not read as (S hello) without them.
        (
            "( (S hello (NP (NN x) (NN y)) (VP (VB z)) ) )",
            "t.mrg:1: tree 1: the word 'hello' comes before brackets inside (S ...)",
        ),
        ("\n" + "(A " * 201 + "(NN x)" + ")" * 201, "t.mrg:2: tree 1 is nested deeper than 200"),
        # A word of 3,000 characters is quoted cut to 40.
        (f"(S (NN a)) {'D' * 3000}", f"the word '{'D' * 40}...(3,000 characters)' is outside"),
    ],
)
def test_malformed_treebank_text_is_refused_naming_file_line_and_tree(text, message):
    with pytest.raises(trees.TreeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        list(trees.read_trees(text, "t.mrg"))


def test_linearized_trees_keep_or_normalize_tags_and_repair_back_exactly():
    t = trees.preprocess(tree("(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))"))
    assert trees.linearize(t) == "(S (NP DT NN )NP (VP VBZ )VP . )S"
    assert trees.linearize(t, "normalize") == "(S (NP XX XX )NP (VP XX )VP XX )S"
    assert trees.linearize(t, "word") == "(S (NP The dog )NP (VP barks )VP . )S"
    assert trees.repair(trees.linearize(t).split(), t.words()) == t
    with pytest.raises(ValueError, match="pos must be one of"):
        trees.linearize(t, "drop")


WORDS = ["The", "dog", "barks", "."]


def test_a_words_target_decodes_to_a_tree_tagged_xx_over_the_input_words():
    from t2t_lite.data import problem

    # The decoder wrote one word wrong and one unknown: the tree takes the input's.
    line = problem.get("parsing_from_files_words").postprocess_decode(
        "The dog barks .", "(S (NP The cat )NP (VP [UNK] )VP . )S"
    )
    assert line == "(TOP (S (NP (XX The) (XX dog)) (VP (XX barks)) (XX .)))"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        # Closes missing: closed at the end.
        ("(S (NP DT NN (VP VBZ .", "(S (NP (DT The) (NN dog) (VP (VBZ barks) (. .))))"),
        # A close with nothing open is dropped; the close's label does not matter.
        (")NP (S (NP DT NN )VP VBZ . )S )S", "(S (NP (DT The) (NN dog)) (VBZ barks) (. .))"),
        # Too few tags: the words left are appended, tagged XX, to the outermost open one.
        ("(S (NP DT )NP", "(S (NP (DT The)) (XX dog) (XX barks) (XX .))"),
        # Too many tags: those past the last word are dropped.
        ("(S DT NN VBZ . NN NN )S", "(S (DT The) (NN dog) (VBZ barks) (. .))"),
        # No bracket, or several top-level pieces: one S over them.
        ("DT NN VBZ .", "(S (DT The) (NN dog) (VBZ barks) (. .))"),
        ("(NP DT NN )NP (VP VBZ . )VP", "(S (NP (DT The) (NN dog)) (VP (VBZ barks) (. .)))"),
        # Constituents that get no word are removed.
        (
            "(S (PP )PP (NP DT NN (ADJP )ADJP )NP VBZ . )S",
            "(S (NP (DT The) (NN dog)) (VBZ barks) (. .))",
        ),
        # Nothing at all: a flat S of XX-tagged words.
        ("", "(S (XX The) (XX dog) (XX barks) (XX .))"),
    ],
)
def test_any_output_is_repaired_into_a_tree_over_exactly_the_input_words(output, expected):
    repaired = trees.repair(output.split(), WORDS)
    assert repaired.bracketed() == expected
    assert repaired.words() == WORDS
    line = trees.output_line(repaired)
    assert line == f"(TOP {expected})"
    assert evalb.score_sentence(line, line).status == evalb.OK  # EVALB reads it


GOLD = "(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))"
XX_TAGGED = "(TOP (S (NP (XX The) (XX dog)) (VP (XX barks)) (XX .)))"


def test_evalb_counts_brackets_as_collins_prm_says():
    # Gold: S [0,3) NP [0,2) VP [2,3) (TOP and the period do not count).
    # Test: S [0,3) NP [0,1) VP [1,3): S matches; VP [1,3) crosses NP [0,2).
    s = evalb.score_sentence(GOLD, "(TOP (S (NP (DT The)) (VP (NN dog) (VBZ barks)) (. .)))")
    assert (s.status, s.gold_brackets, s.test_brackets, s.matched) == (evalb.OK, 3, 3, 1)
    assert (s.crossing, s.words, s.correct_tags, s.length) == (1, 3, 3, 4)
    # Function tags are cut, ADVP = PRT, punctuation's tag does not count.
    gold = "(TOP (S (NP (PRP He)) (VP (VBD gave) (PRT (RP up))) (. .)))"
    test = "(TOP (S-TPC (NP-SBJ=1 (PRP He)) (VP (VBD gave) (ADVP (RB up))) (, .)))"
    s = evalb.score_sentence(gold, test)
    assert (s.status, s.matched, s.gold_brackets, s.test_brackets) == (evalb.OK, 4, 4, 4)
    assert s.correct_tags == 2  # RP vs RB; the "." is deleted in both
    # Duplicate spans: one gold (NP (NP ...)) pair against a single test NP: 1 of 2.
    s = evalb.score_sentence(
        "(TOP (S (NP (NP (NN a))) (VP (VB b))))", "(TOP (S (NP (NN a)) (VP (VB b))))"
    )
    assert (s.gold_brackets, s.test_brackets, s.matched) == (4, 3, 3)


@pytest.mark.parametrize(
    ("test", "status", "cause"),
    [
        ("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks))", evalb.ERROR, "too many open"),
        ("(TOP (S (NP (DT The)) (VP (VBZ barks)) (. .)))", evalb.ERROR, "length unmatch (3|2)"),
        ("(TOP (S (NP (DT A) (NN dog)) (VP (VBZ barks)) (. .)))", evalb.ERROR, "words unmatch"),
        ("", evalb.SKIP, "no word"),
        ("(TOP (S (. .)))", evalb.SKIP, "no word"),  # only deleted words
    ],
)
def test_evalb_errors_and_skips_are_left_out_of_the_totals(test, status, cause):
    s = evalb.score_sentence(GOLD, test)
    assert s.status == status and cause in s.error
    result = evalb.score_lines([GOLD, GOLD], [GOLD, test])
    assert (result["sentences"], result["valid"]) == (2, 1)
    assert result["errors"] == (status == evalb.ERROR) and result["skipped"] == (
        status == evalb.SKIP
    )
    assert result["f1"] == result["exact_match"] == 100.0
    assert result["problems"] == [f"2: {s.error}"]


def test_evalb_totals_are_corpus_level_and_the_cutoff_counts_punctuation():
    long_words = " ".join(f"(NN w{i})" for i in range(40))
    long_gold = f"(TOP (S (NP {long_words}) (. .)))"  # 41 words with the period
    long_test = f"(TOP (S {long_words} (. .)))"  # NP missing: 1 of 2
    short_test = "(TOP (S (NP (DT The)) (VP (NN dog) (VBZ barks)) (. .)))"  # 1 of 3
    result = evalb.score_lines([GOLD, long_gold], [short_test, long_test])
    # Corpus level: (1 + 1) / (3 + 2) recall, (1 + 1) / (3 + 1) precision.
    assert result["recall"] == pytest.approx(40.0) and result["precision"] == pytest.approx(50.0)
    assert result["f1"] == pytest.approx(2 * 40 * 50 / 90)
    assert result["exact_match"] == 0.0
    short = result["len<=40"]
    assert short["sentences"] == 1 and short["recall"] == pytest.approx(100 / 3)
    line = json.loads(evalb.json_line(result))
    assert line["f1"] == 44.44 and line["len<=40"]["precision"] == 33.33
    with pytest.raises(ValueError, match="2 lines and the test file 1"):
        evalb.score_lines([GOLD, GOLD], [GOLD])


def test_t2t_evalb_prints_one_json_line_and_refuses_unequal_files(tmp_path):
    gold, test = tmp_path / "gold.trees", tmp_path / "test.trees"
    gold.write_text(GOLD + "\n" + GOLD + "\n")
    test.write_text(GOLD + "\n(TOP (S (NP (DT The)) (VP (NN dog) (VBZ barks)) (. .)))\n")
    done = run_binary("t2t-evalb", f"--gold_file={gold}", f"--test_file={test}")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["recall"], result["precision"], result["exact_match"]) == (66.67, 66.67, 50.0)
    test.write_text(GOLD + "\n")
    done = run_binary("t2t-evalb", f"--gold_file={gold}", f"--test_file={test}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "the gold file has 2 lines and the test file 1" in done.stderr.strip().splitlines()[-1]
    # Every tag XX: EVALB's punctuation rule drops the sentence (the period is no
    # longer punctuation); --gold_tags scores its brackets, all right here.
    test.write_text(GOLD + "\n" + XX_TAGGED + "\n")
    plain = json.loads(run_binary("t2t-evalb", f"--gold_file={gold}", f"--test_file={test}").stdout)
    assert plain["errors"] == 1 and plain["sentences"] == 2
    done = run_binary("t2t-evalb", f"--gold_file={gold}", f"--test_file={test}", "--gold_tags")
    tagged = json.loads(done.stdout)
    assert tagged["errors"] == 0 and tagged["f1"] == 100.0 and tagged["exact_match"] == 100.0
    assert "scored with the test line's own tags" not in done.stderr
    # A gold line EVALB reads but the project's reader does not (a no-break
    # space inside a word): --gold_tags cannot tag it, and says so by line.
    gold.write_text(GOLD + "\n(TOP (S (DT a\u00a0b) (NN c) (. .)))\n", encoding="utf-8")
    test.write_text(GOLD + "\n(TOP (S (XX a\u00a0b) (XX c) (XX .)))\n", encoding="utf-8")
    done = run_binary("t2t-evalb", f"--gold_file={gold}", f"--test_file={test}", "--gold_tags")
    assert done.returncode == 0, done.stderr
    assert "line 2: the gold line is not a tree the reader takes" in done.stderr
    assert "scored with the test line's own tags" in done.stderr


def write_treebank(folder, names_and_trees):
    os.makedirs(folder, exist_ok=True)
    for name, text in names_and_trees.items():
        if isinstance(text, bytes):
            (folder / name).write_bytes(text)
        else:
            (folder / name).write_text(text)


SENTENCES = [
    "(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))",
    "(S (NP (PRP It)) (VP (VBD rained)) (. .))",
    "(S (NP (NNP Ann)) (VP (VBZ sees) (NP (DT a) (NN cat))) (. .))",
]


TINY_PARSER = (
    "num_hidden_layers=1,hidden_size=16,filter_size=32,num_heads=2,max_length=64,batch_size=256"
)


def tiny_treebank_data(tmp_path, name: str = "parsing_from_files") -> str:
    """SENTENCES' trees as a three-file treebank (train, dev, test) -> a data dir."""
    from t2t_lite.problems import datagen

    bank = tmp_path / "bank"
    write_treebank(bank, {f"f{i}.mrg": f"( {SENTENCES[i % 3]} )\n" * 2 for i in range(3)})
    data = str(tmp_path / "data")
    datagen.generate(
        name,
        data,
        train_files=[str(bank / "f0.mrg")],
        dev_files=[str(bank / "f1.mrg")],
        test_files=[str(bank / "f2.mrg")],
    )
    return data


def tiny_parser(
    tmp_path, name: str = "parsing_from_files", model: str = "transformer", steps: int = 1
) -> str:
    """A one-layer parser trained `steps` steps on `tiny_treebank_data` -> its run dir."""
    from t2t_lite import api

    hparams_set = PARSING_SETS[model]
    data, run = tiny_treebank_data(tmp_path, name), str(tmp_path / "run")
    api.train(name, model, hparams_set, data, run, hparams=TINY_PARSER,
              train_steps=steps, local_eval_frequency=max(steps, 1))  # fmt: skip
    return run


# Every parsing model family with its CPU parsing set: the linearized trees'
# encoder-decoders and the taggers of one label per word.
PARSING_SETS = {
    "universal_transformer_encoder": "universal_transformer_parsing_tagger",
    "transformer_encoder": "transformer_parsing_tagger",
    "universal_transformer": "universal_transformer_parsing_cpu",
    "transformer": "transformer_parsing_cpu",
}


@pytest.mark.parametrize("model", list(PARSING_SETS))
def test_every_parsing_family_is_inspected_for_t2t_visualize_untrained(tmp_path, model):
    """What t2t-visualize reads of a model (its attention, its ponder steps),
    from an untrained model of each family: a tagger has an encoder only."""
    from t2t_lite import hparams as hparams_lib
    from t2t_lite import registry
    from t2t_lite.data import problem
    from t2t_lite.visualization import inspection

    name = "parsing_from_files_labels" if model.endswith("_encoder") else "parsing_from_files"
    data = tiny_treebank_data(tmp_path, name)
    prob = problem.get(name)
    prob.bind(data)
    hp = hparams_lib.override(registry.HPARAMS.get(PARSING_SETS[model])(), TINY_PARSER)
    built = registry.MODELS.get(model)(hp, prob.vocab_size)
    built.build_variables()
    words = prob.encode_text("The dog barks .")
    target = prob.encode_text(prob.target(tree(f"( {SENTENCES[0]} )")))
    seen = inspection.inspect(built, prob, words, target)
    assert seen.input_tokens == ["The", "dog", "barks", ".", "<EOS>"]
    assert seen.attention[inspection.ENCODER].shape[-2:] == (5, 5)  # [layers or steps, H, 5, 5]
    assert (inspection.ENCODER in seen.attention) and len(seen.attention) == (
        1 if model.endswith("_encoder") else 3
    )


@pytest.mark.slow
def test_t2t_visualize_draws_the_readme_recipes_model_family(tmp_path):
    """The README's parse section's model (a UT encoder tagger), one step
    trained: t2t-visualize --inputs draws its tree and its attention."""
    run = tiny_parser(tmp_path, "parsing_from_files_labels", "universal_transformer_encoder")
    out = tmp_path / "viz"
    done = run_binary(
        "t2t-visualize", f"--output_dir={run}", f"--visualize_dir={out}",
        "--inputs=He saw it.",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (out / "001_tree.png").exists() and (out / "001_encoder_attention.png").exists()
    [(drawn, _)] = trees.read_trees((out / "001_tree.txt").read_text().split("\t")[1], "drawn")
    assert drawn.words() == ["He", "saw", "it", "."]


def test_the_wsj_sections_split_and_otherwise_the_last_files_are_dev_and_test():
    from t2t_lite.problems import parsing

    wsj = [f"/x/wsj_{s:02d}{n:02d}.mrg" for s in (0, 2, 21, 22, 23, 24) for n in (1, 2)]
    split, how = parsing.split_files(wsj)
    assert "WSJ sections" in how
    assert split["train"] == [p for p in wsj if "_02" in p or "_21" in p]
    assert split["dev"] == ["/x/wsj_2201.mrg", "/x/wsj_2202.mrg"]
    assert split["test"] == ["/x/wsj_2301.mrg", "/x/wsj_2302.mrg"]
    # The NLTK sample's names (sections 00 and 01 only): by file, a tenth each.
    sample = [f"/x/wsj_{n:04d}.mrg" for n in range(1, 200)]
    split, how = parsing.split_files(sample)
    assert (len(split["train"]), len(split["dev"]), len(split["test"])) == (161, 19, 19)
    assert split["test"][0] == "/x/wsj_0181.mrg" and split["dev"][0] == "/x/wsj_0162.mrg"
    with pytest.raises(ValueError, match="2 file"):
        parsing.split_files(sample[:2])


def test_datagen_writes_whole_symbol_tokens_and_the_gold_files(tmp_path):
    from t2t_lite.data import problem, tfrecord
    from t2t_lite.problems import datagen

    bank = tmp_path / "bank"
    write_treebank(bank, {f"f{i}.mrg": f"( {SENTENCES[i % 3]} )\n" * 2 for i in range(3)})
    data = str(tmp_path / "data")
    counts = datagen.generate(
        "parsing_from_files",
        data,
        train_files=[str(bank / "f0.mrg")],
        dev_files=[str(bank / "f1.mrg")],
        test_files=[str(bank / "f2.mrg")],
    )
    assert counts == {"train": 2, "dev": 2, "test": 2}
    prob = problem.get("parsing_from_files")
    prob.bind(data)
    vocabulary = prob.tokenizer.tokens
    assert {"(S", ")S", "(NP", ")NP", "DT", ".", "barks"} <= set(vocabulary)
    [first, _] = tfrecord.read_examples(prob.split_files(data, "train"), -1)
    assert prob.decode_text(first["targets"]) == "(S (NP DT NN )NP (VP VBZ )VP . )S"
    assert prob.decode_text(first["inputs"]) == "The dog barks ."
    words, gold = prob.gold_paths(data, "test")
    with open(words) as f:
        assert f.read() == "Ann sees a cat .\n" * 2
    with open(gold) as f:
        assert f.read() == f"(TOP {SENTENCES[2]})\n" * 2
    # A decode whose symbols are not a tree becomes one over the line's words.
    # NNP is not in the vocabulary (no training tree has it): its shape, written XX.
    ids = prob.encode_text("(S (NP NNP )NP VBZ (NP DT NN")
    line = prob.decoded_line("Ann sees a cat .", ids)
    assert line == "(TOP (S (NP (XX Ann)) (VBZ sees) (NP (DT a) (NN cat)) (XX .)))"
    assert prob.decoded_line("", ids) == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("( (S (NN a) )\n", "bad.mrg:1: tree 1 is not closed"),
        ("", "bad.mrg: holds no tree"),
        ("(S (NN a))\n( (S (-NONE- *T*)))\n", "bad.mrg:2: tree 2 has no words"),
        # The user's file is named, with the line, not a file datagen wrote.
        (b"(S (NN a))\n(S (NN b\x00c))\n", "bad.mrg:2: holds a NUL byte"),
        (b"(S (NN a))\n\n(S (NN caf\xe9))\n", "bad.mrg:3: not valid UTF-8"),
    ],
)
def test_bad_treebank_files_get_one_line_and_leave_no_data(tmp_path, text, message):
    bank = tmp_path / "bank"
    write_treebank(
        bank,
        {"good.mrg": f"{SENTENCES[0]}\n", "good2.mrg": f"{SENTENCES[1]}\n", "bad.mrg": text},
    )
    data = tmp_path / "data"
    done = run_binary(
        "t2t-datagen",
        "--problem=parsing_from_files",
        f"--data_dir={data}",
        f"--train_files={bank / 'good.mrg'}",
        f"--dev_files={bank / 'bad.mrg'}",
        f"--test_files={bank / 'good2.mrg'}",
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert message in done.stderr.strip().splitlines()[-1]
    assert not [p for p in os.listdir(data) if p.startswith("parsing_from_files-")]


def test_a_word_of_any_number_of_clitics_splits_without_recursion():
    from t2t_lite.parsing import treebank_text

    words = treebank_text.tokenize("a" + "'s" * 1500)
    assert words == ["a"] + ["'s"] * 1500


def test_a_tag_that_function_tag_stripping_would_empty_is_kept_whole():
    assert trees.clean_label("=X") == "=X" and trees.clean_label("=2") == "=2"
    t = trees.preprocess(tree("( (S (=X hello) (NN world) (. .)) )"))
    # One preterminal per word, and the gold line reads back.
    assert trees.linearize(t) == "(S =X NN . )S"
    assert trees.is_tree_over(trees.linearize(t).split(), 3)
    assert tree(trees.output_line(t)).children[0] == t


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(S (NP+X (NN a) (NN b)) (VB go) (. .))", "the label 'NP+X' holds '+'"),
        ("(S (PRT/ADVP (RP up) (RB now)) (VB go) (. .))", "the label 'PRT/ADVP' holds '/'"),
        # A one-word tree without a constituent: the labels cannot name its root.
        ("(NN hello)", "does not decode back to it"),
    ],
)
def test_a_tree_the_labels_cannot_describe_is_refused_naming_it(tmp_path, text, message):
    bank = tmp_path / "bank"
    write_treebank(
        bank,
        {
            "good.mrg": f"{SENTENCES[0]}\n{text}\n",
            "good2.mrg": f"{SENTENCES[1]}\n",
            "good3.mrg": f"{SENTENCES[2]}\n",
        },
    )
    data = tmp_path / "data"
    done = run_binary(
        "t2t-datagen",
        "--problem=parsing_from_files_labels",
        f"--data_dir={data}",
        f"--train_files={bank / 'good.mrg'}",
        f"--dev_files={bank / 'good2.mrg'}",
        f"--test_files={bank / 'good3.mrg'}",
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "good.mrg:2: tree 2: " in last and message in last
    assert not [p for p in os.listdir(data) if p.startswith("parsing_from_files")]


def test_a_bare_bracket_is_a_tag_to_the_repair_the_check_and_the_constraint():
    from t2t_lite.parsing import constraints

    assert not trees.is_open("(") and not trees.is_close(")")
    assert trees.is_tree_over(["(S", ")", "NN", ")S"], 2)
    repaired = trees.repair(["(S", ")", "NN", ")S"], ["a", "b"])
    assert repaired.bracketed() == "(S (-RRB- a) (NN b))"  # the tag ), written as the treebank does
    constraint = constraints.TreeConstraint(["<pad>", "<EOS>", "(S", ")S", ")", "NN"], "keep")
    assert constraint.is_tag.numpy().tolist() == [False, False, False, False, True, True]


def test_a_tree_search_without_room_for_its_root_is_refused():
    from t2t_lite.decoding import decoder
    from t2t_lite.parsing import constraints

    tokens = ["<pad>", "<EOS>", "(S", ")S", "XX"]
    hp = decoder.decode_hparams("beam_size=1,extra_length=1")
    with pytest.raises(ValueError, match="extra_length=2 or more"):
        constraints.for_trees(tokens, "normalize", hp)
    hp = decoder.decode_hparams("beam_size=1,min_length=3")
    with pytest.raises(ValueError, match="min_length=0"):
        constraints.for_trees(tokens, "normalize", hp)
    assert constraints.for_trees(tokens, "normalize", decoder.decode_hparams("")) is not None


def test_a_repaired_tree_nested_as_deep_as_allowed_reads_back():
    symbols = ["(S"] * (trees.MAX_DEPTH + 10) + ["NN"]
    line = trees.output_line(trees.repair(symbols, ["a"]))
    [(back, _)] = trees.read_trees(line, "out")
    assert back.words() == ["a"]


def test_a_parsing_table_refuses_what_it_does_not_read_in_one_line(tmp_path):
    from t2t_lite.reproduction import parsing_table, runs
    from t2t_lite.training import trainer

    data = tiny_treebank_data(tmp_path)
    for config, extra, flag in (
        (trainer.TrainConfig(keep_best="dev/loss"), {}, "--keep_best"),
        (trainer.TrainConfig(), {"greedy_examples": 5}, "--greedy_examples"),
    ):
        request = runs.Request(
            str(tmp_path / "out"), ["right_branching"], ["parsing_from_files"], data, config,
            None, "", split="dev", **extra,
        )  # fmt: skip
        with pytest.raises(ValueError, match=f"{flag}: for the algorithmic"):
            parsing_table.compare(request)
    assert not (tmp_path / "out").exists()


def test_the_papers_parsing_search_is_a_named_preset():
    from t2t_lite.decoding import decoder

    hp = decoder.decode_hparams("parsing")
    assert (hp.beam_size, hp.alpha, hp.extra_length) == (21, 0.3, 300)
    hp = decoder.decode_hparams("parsing,beam_size=4")
    assert (hp.beam_size, hp.alpha) == (4, 0.3)
    with pytest.raises(ValueError, match="neither key=value nor a preset"):
        decoder.decode_hparams("parse")


@pytest.mark.slow
def test_the_parsing_table_scores_each_run_by_evalb_and_keeps_the_scores(tmp_path, monkeypatch):
    from t2t_lite.reproduction import parsing_table, runs
    from t2t_lite.training import trainer

    data = tiny_treebank_data(tmp_path)
    out = tmp_path / "out"
    tiny = TINY_PARSER
    config = trainer.TrainConfig(train_steps=1, local_eval_frequency=1)
    search = "beam_size=2,extra_length=12"

    def table():
        rows = ["right_branching", "transformer_parsing"]
        seeds = ["1", "2"]  # two runs: the cell is their median [min, max]
        problems = ["parsing_from_files"]
        return parsing_table.compare(
            runs.Request(
                str(out), rows, problems, data, config, seeds, tiny, split="dev", search=search,
                records_dir=str(tmp_path / "records"),
            )
        )  # fmt: skip

    text = table()
    lines = [line for line in text.splitlines() if line.startswith("|")]
    rows = {line.split("|")[1].strip(): line for line in lines[2:5]}
    # Right-branching over "It rained ." against (S (NP It) (VP rained) .): of the
    # gold S, NP, VP and its S [0,2), S [1,2) (S [2,2) spans only the deleted
    # period) only S [0,2) matches: R 1/3, P 1/2.
    assert rows["Right-branching baseline"].split("|")[4].strip() == "40.00"
    assert "| Transformer (4 layers) | WSJ only, discriminative | 91.3 | | |" in lines
    assert len(lines) == 2 + 2 + len(parsing_table.PAPER_TABLE4)
    for key in ["transformer_parsing"]:
        entry = parsing_table.ENTRIES[key]
        f1s = []
        for seed in (1, 2):
            run = out / f"seed{seed}" / "parsing_from_files" / key
            kept = json.loads((run / "parse_dev.json").read_text())
            decoded = (run / "parse_dev.trees").read_text().splitlines()
            gold_path = tmp_path / "data" / "parsing_from_files-dev.trees"
            gold = gold_path.read_text().splitlines()
            tagged = parsing_table.with_gold_tags(decoded, str(gold_path))
            assert kept["figures"]["f1"] == evalb.score_lines(gold, tagged)["f1"]
            assert kept["figures"]["errors"] == 0  # every output is a tree over the words
            # The gold tags replace the decoded ones, and nothing else.
            for line, tagged_line in zip(decoded, tagged, strict=True):
                [(before, _)] = trees.read_trees(line, "d")
                [(after, _)] = trees.read_trees(tagged_line, "t")
                assert after.words() == before.words() == ["It", "rained", "."]
                assert after.tags() == ["PRP", "VBD", "."]
                assert trees.linearize(after, "normalize") == trees.linearize(before, "normalize")
            assert kept["depends_on"]["decode_hparams"]["beam_size"] == 2
            f1s.append(kept["figures"]["f1"])
            # --records keeps the same figures, with what they depend on.
            record = tmp_path / "records" / "parsing_from_files" / "dev" / key / f"seed{seed}.json"
            assert json.loads(record.read_text()) == kept
        from t2t_lite.reproduction import seed_stats

        assert rows[entry.label].split("|")[4].strip() == seed_stats.spread(f1s)
    # Read back while nothing changed; decoded again when the search changes.
    from t2t_lite.decoding import runner

    decode_file = runner.decode_file
    decoded = []

    def counted(*args):
        decoded.append(args[3])
        return decode_file(*args)

    monkeypatch.setattr(runner, "decode_file", counted)
    assert table() == text and decoded == []

    from t2t_lite import files

    def known(decoder, problem, input_path, output_path):
        """A parser that misses the NP of "It rained .": a decode scored by hand."""
        decoded.append(output_path)
        lines = files.read_lines(input_path)
        with open(output_path, "w") as f:
            f.writelines("(TOP (S (XX It) (VP (XX rained)) (XX .)))\n" for _ in lines)
        return []

    monkeypatch.setattr(runner, "decode_file", known)
    search = "beam_size=1,extra_length=12"
    text = table()
    assert len(decoded) == 2  # both seeds' runs
    kept = json.loads((out / "seed1" / "parsing_from_files" / key / "parse_dev.json").read_text())
    assert kept["depends_on"]["decode_hparams"]["beam_size"] == 1
    # Gold S [0,2), NP [0,1), VP [1,2) (the period deleted); decoded S, VP: both
    # right, NP missed: recall 2/3, precision 2/2, F1 80.00, no exact match.
    assert kept["figures"]["f1"] == pytest.approx(80.0)
    assert kept["figures"]["exact_match"] == 0.0
    row = next(line for line in text.splitlines() if line.startswith(f"| {entry.label} "))
    assert row.split("|")[4].strip() == "80.00 [80.00, 80.00]"


def test_treebank_files_are_each_read_once_and_a_byte_order_mark_is_no_word(tmp_path):
    from t2t_lite.problems import datagen

    bank = tmp_path / "bank"
    write_treebank(
        bank / "loop",
        {"a.mrg": "\ufeff" + "\n".join(SENTENCES[:2]), "dev.mrg": SENTENCES[2]},
    )
    write_treebank(bank, {"test.mrg": SENTENCES[0]})
    os.symlink("..", bank / "loop" / "up")  # a link loop under the folder
    counts = datagen.generate(
        "parsing_from_files",
        str(tmp_path / "data"),
        # a.mrg named twice, and again inside the folder (through the loop too).
        train_files=[str(bank / "loop" / "a.mrg"), str(bank / "loop" / "a.mrg")],
        dev_files=[str(bank / "loop" / "dev.mrg")],
        test_files=[str(bank / "test.mrg")],
    )
    assert counts == {"train": 2, "dev": 1, "test": 1}
    with pytest.raises(ValueError, match=r"--dev_files: .*a\.mrg is also one of the train files"):
        datagen.generate(
            "parsing_from_files",
            str(tmp_path / "data2"),
            train_files=[str(bank / "loop")],
            dev_files=[str(bank / "loop" / "a.mrg")],
            test_files=[str(bank / "test.mrg")],
        )


@pytest.mark.parametrize(
    ("vocab_size", "message"),
    [(-5, "--vocab_size must be 0"), (1, "--vocab_size=1 leaves no room for a word")],
)
def test_a_vocabulary_size_that_leaves_no_word_is_refused(tmp_path, vocab_size, message):
    from t2t_lite.problems import datagen

    bank = tmp_path / "bank"
    write_treebank(bank, {f"{name}.mrg": tree for name, tree in zip("abc", SENTENCES, strict=True)})
    with pytest.raises(ValueError, match=message):
        datagen.generate(
            "parsing_from_files",
            str(tmp_path / "data"),
            train_files=[str(bank / "a.mrg")],
            dev_files=[str(bank / "b.mrg")],
            test_files=[str(bank / "c.mrg")],
            vocab_size=vocab_size,
        )


def test_an_input_holding_brackets_decodes_to_a_tree_that_reads_back():
    from t2t_lite.data import problem

    source = "the ( board ) will a(b ."
    line = problem.get("parsing_from_files").postprocess_decode(source, "(S DT ( NN ) MD NN . )S")
    [(read, _)] = trees.read_trees(line, "decoded")
    assert trees.preprocess(read).words() == [
        "the",
        "-LRB-",
        "board",
        "-RRB-",
        "will",
        "a-LRB-b",
        ".",
    ]
    assert evalb.score_lines([line], [line])["f1"] == 100.0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("He didn't see the (red) car.", "He did n't see the -LRB- red -RRB- car ."),
        ('"Yes," she said.', "`` Yes , '' she said ."),
        ("I can't, won't: cannot.", "I ca n't , wo n't : can not ."),
        ("They're 'quoted' in investors' money...", "They 're ` quoted ' in investors ' money ..."),
        ("It's John's [sic] {x}.", "It 's John 's -LSB- sic -RSB- -LCB- x -RCB- ."),
        (
            "Profit rose 5% to US$1,000 at 10:30 a.m. at Acme Inc.",
            ("Profit rose 5 % to US$ 1,000 at 10:30 a.m. at Acme Inc. ."),
        ),
        ("We\u2019re \u201cdone\u201d \u2014 mostly\u2026", "We 're `` done '' -- mostly ..."),
        ("S&L shares, 62%-owned, fell; why?", "S&L shares , 62%-owned , fell ; why ?"),
        # The treebank's elisions stay whole.
        ("It's a rock 'n' roll band.", "It 's a rock 'n' roll band ."),
        ("That's what `em do.", "That 's what `em do ."),
    ],
)
def test_raw_text_is_split_into_words_as_the_treebank_writes_them(text, words):
    from t2t_lite.parsing import treebank_text

    assert treebank_text.tokenize(text) == words.split()
    # Text already split comes back unchanged.
    assert treebank_text.tokenize(words) == words.split()


@pytest.mark.slow
def test_a_raw_sentence_parses_end_to_end_into_a_tree_that_reads_back(tmp_path):
    """`He didn't see the (red) car.` through the Python API and t2t-decode: split
    as the treebank writes it, one readable tree per line over those words;
    parse_input=tokens keeps a tokenized line's words as they are."""
    from t2t_lite import api

    run = tiny_parser(tmp_path, "parsing_from_files_labels", "transformer_encoder")
    sentence = "He didn't see the (red) car."
    expected = ["He", "did", "n't", "see", "the", "-LRB-", "red", "-RRB-", "car", "."]
    parsed = api.load(run)
    [line] = parsed.decode([sentence], beam_size=2, extra_length=20)
    [(tree, _)] = trees.read_trees(line, "decoded")
    assert tree.label == "TOP" and tree.words() == expected
    assert evalb.score_lines([line], [line])["f1"] == 100.0
    [kept] = parsed.decode(["a (b"], parse_input="tokens", extra_length=4)
    assert trees.preprocess(next(trees.read_trees(kept, "d"))[0]).words() == ["a", "-LRB-b"]
    source = tmp_path / "raw.txt"
    source.write_text(sentence + "\n\n" + '"Stop," he said.\n')
    out = tmp_path / "raw.trees"
    done = run_binary(
        "t2t-decode",
        f"--output_dir={run}",
        f"--decode_from_file={source}",
        f"--decode_to_file={out}",
        "--decode_hparams=beam_size=1,extra_length=20",
    )
    assert done.returncode == 0, done.stderr
    assert "Parsed 2 sentences in " in done.stderr and " sentences/s" in done.stderr
    first, empty, third = out.read_text().splitlines()
    [(tree, _)] = trees.read_trees(first, "decoded")
    assert tree.words() == expected
    assert empty == ""
    [(tree, _)] = trees.read_trees(third, "decoded")
    assert tree.words() == ["``", "Stop", ",", "''", "he", "said", "."]


@pytest.mark.slow
def test_t2t_visualize_draws_a_raw_sentences_parse_beside_its_gold_tree(tmp_path):
    from t2t_lite.visualization import runner as visualize

    run, out = (
        tiny_parser(tmp_path, "parsing_from_files_labels", "universal_transformer_encoder"),
        str(tmp_path / "viz"),
    )
    gold = "(TOP (S (NP (PRP He)) (VP (VBD saw) (NP (PRP it))) (. .)))"
    (tmp_path / "gold.trees").write_text(gold + "\n")
    written = visualize.visualize(
        run, out, ["He saw it."], "--inputs", decode_hparams="extra_length=20",
        gold_trees=str(tmp_path / "gold.trees"),
    )  # fmt: skip
    assert f"{out}/001_tree.png" in written and f"{out}/001_encoder_attention.png" in written
    decoded, drawn_gold = (tmp_path / "viz" / "001_tree.txt").read_text().splitlines()
    [(tree, _)] = trees.read_trees(decoded.removeprefix("decoded\t"), "drawn")
    assert tree.words() == ["He", "saw", "it", "."]  # the raw text split as the treebank writes it
    assert drawn_gold == "gold\t" + gold
    with pytest.raises(ValueError, match=r"gold.trees: 1 tree\(s\) for 2 input\(s\)"):
        visualize.visualize(
            run, out, ["a", "b"], "--inputs", gold_trees=str(tmp_path / "gold.trees")
        )


def test_the_tree_constraint_allows_only_what_keeps_a_tree_over_the_words():
    import numpy as np
    import tensorflow as tf

    from t2t_lite.parsing import constraints

    tokens = ["<pad>", "<EOS>", "[UNK]", "(S", ")S", "(NP", ")NP", "XX", "dog"]
    ids = {token: i for i, token in enumerate(tokens)}
    inputs = tf.constant([[8, 8, 1]])  # two words, EOS

    def allowed_after(written: str, pos: str = "normalize") -> set[str]:
        constraint = constraints.TreeConstraint(tokens, pos)
        state = constraint.initial_state(inputs, extra_length=20)
        for symbol in ["<pad>", *written.split()]:  # the start symbol first
            state = constraint.advance(state, tf.constant([ids[symbol]]))
        row = constraint.allowed(state).numpy()[0]
        return {tokens[i] for i in np.flatnonzero(row)}

    assert allowed_after("") == {"(S", "(NP"}  # a root first
    assert allowed_after("(S") == {"(S", "(NP", "XX"}  # no empty constituent
    assert allowed_after("(S (NP XX") == {"(S", "(NP", "XX", ")NP"}  # its own close only
    assert allowed_after("(S (NP XX )NP XX") == {")S"}  # every word placed: close
    assert allowed_after("(S (NP XX )NP XX )S") == {"<EOS>"}
    assert allowed_after("(S XX XX", "word") == {")S"}
    assert allowed_after("(S", "word") == {"(S", "(NP", "dog"}  # the next word itself
    # Keep: a tag of the training targets (here no shapes: every non-bracket
    # symbol but the reserved); with a parsing vocabulary's word shapes, the
    # words after them are no tags (review L7).
    assert allowed_after("(S", "keep") == {"(S", "(NP", "XX", "dog"}
    from t2t_lite.parsing import word_shapes

    shaped = [*tokens[:8], *word_shapes.tokens(), "dog"]
    keep = constraints.TreeConstraint(shaped, "keep")
    assert [shaped[i] for i in np.flatnonzero(keep.is_tag.numpy())] == ["XX"]


@pytest.mark.slow
@pytest.mark.parametrize("pos", ["normalize", "keep", "word", "labels", "tagger"])
def test_constrained_searches_write_trees_over_the_words_with_no_repair(tmp_path, pos, caplog):
    """An untrained parser (one step): every greedy and beam decode is already
    a tree over its sentence's words, before any repair."""
    from t2t_lite import api
    from t2t_lite.parsing import tree_labels

    name = {
        "keep": "parsing_from_files",
        "normalize": "parsing_from_files_xx",
        "labels": "parsing_from_files_labels",
        "tagger": "parsing_from_files_labels",
    }.get(pos, "parsing_from_files_words")
    run = tiny_parser(tmp_path, name, "transformer_encoder" if pos == "tagger" else "transformer")
    if pos == "tagger":
        pos = "labels"
    parsed = api.load(run)
    sentences = ["The dog barks .", "It rained .", "Ann sees a cat .", "a b c d e f g h"]
    inputs = [parsed.problem.encode_text(s) for s in sentences]
    # Labels, either search: a label per word, a tree over the words that reads
    # back. (That the strict search's labels decode unchanged is checked by
    # hand in test_tree_labels.py: this treebank's three trees give too few
    # count changes for it to finish every row, and such a row falls back to
    # the shape.)
    searches = ["", ",label_constraint=strict"] if pos == "labels" else [""]
    for beam, search in [(beam, search) for beam in (1, 3) for search in searches]:
        hp = f"beam_size={beam},extra_length=40,parse_input=tokens{search}"
        decoder = runner.make_decoder(parsed.model, hp, problem=parsed.problem)
        for sentence, hypotheses in zip(sentences, decoder.decode_ids(inputs), strict=True):
            symbols = parsed.problem.decode_text(hypotheses[0][0]).split()
            if pos == "labels":
                tree, _ = tree_labels.decode(symbols, sentence.split())
                assert len(symbols) == len(sentence.split()), (beam, search, symbols)
                [(back, _)] = trees.read_trees(trees.output_line(tree), "decoded")
                assert back.words() == sentence.split()
            else:
                assert trees.is_tree_over(symbols, len(sentence.split())), (beam, symbols)
    # A decode that needed the repair is counted in a warning.
    if pos == "normalize":
        with caplog.at_level("WARNING"):
            lines = parsed.problem.decoded_lines(
                ["It rained .", "It rained ."],
                [parsed.problem.encode_text(t) for t in ("(S XX XX XX )S", "(S XX )S")],
            )
        assert "1 of 2 decoded line(s) were not trees" in caplog.text
        assert lines[1] == "(TOP (S (S (XX It)) (XX rained) (XX .)))"  # words slid under a new S


def test_a_damaged_or_missing_files_configuration_is_one_line_naming_it(tmp_path):
    from t2t_lite.data import problem

    prob = problem.get("parsing_from_files")
    data = str(tmp_path)
    with pytest.raises(ValueError, match="reads your treebank: run t2t-datagen --problem=pars"):
        prob.split_trees(data, "dev").__next__()
    (tmp_path / "parsing_from_files.files.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"parsing_from_files\.files\.json: not t2t-datagen's"):
        prob.split_trees(data, "dev").__next__()
