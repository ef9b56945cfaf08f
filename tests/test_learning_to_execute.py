"""Learning to Execute problems: the grammar, its limits, and the data files."""

import contextlib
import io
import re

import numpy as np
import pytest
import tensorflow as tf

import t2t_lite.problems  # noqa: F401  (registers the problems)
from t2t_lite import sequences
from t2t_lite.data import problem, tfrecord
from t2t_lite.problems import learning_to_execute as lte
from t2t_lite.problems import lte_programs

NAMES = ["lte_copy", "lte_double", "lte_reverse", "lte_program", "lte_control", "lte_addition"]


def python_prints(text: str) -> str:
    """What Python itself prints for a program's one-line text."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(lte_programs.python_source(text), {})  # noqa: S102 (generated arithmetic)
    return out.getvalue().strip()


def examples(name: str, split: str = "dev", seed: int = 0) -> list[tuple[str, str]]:
    p = problem.get(name)
    rng = np.random.default_rng(seed)
    return [
        (p.decode_text(ex["inputs"]), p.decode_text(ex["targets"]))
        for ex in p.generate_examples(split, rng)
    ]


@pytest.mark.parametrize("name", ["lte_program", "lte_control", "lte_addition"])
def test_every_target_is_what_python_prints_for_the_program(name):
    for source, target in examples(name):
        assert python_prints(source) == target, source


@pytest.mark.parametrize("operations", [lte_programs.OPERATIONS, lte_programs.CONTROL_OPERATIONS])
@pytest.mark.parametrize("length,nesting", [(1, 1), (3, 2), (6, 3)])
def test_programs_respect_length_nesting_and_their_bounds(operations, length, nesting):
    generator = lte_programs.ProgramGenerator(np.random.default_rng(7), length, nesting, operations)
    seen_nestings = set()
    for _ in range(400):
        program = generator.program()
        assert 1 <= len(program.operations) <= nesting
        assert set(program.operations) <= set(operations)
        seen_nestings.add(len(program.operations))
        # Every literal: a number of at most `length` digits (10**length at
        # most) or a loop count / multiplier of at most 4 * length.
        for literal in re.findall(r"\d+", program.text):
            assert 1 <= int(literal) <= max(10**length, 4 * length), program.text
        assert len(program.text) <= lte_programs.max_program_chars(length, nesting)
        assert len(str(program.value)) <= lte_programs.max_value_chars(length, nesting)
        assert python_prints(program.text) == str(program.value)
    assert seen_nestings == set(range(1, nesting + 1))  # the mix strategy draws every nesting


def test_a_one_operation_program_with_length_one_is_hand_checkable():
    # length 1: numbers 1..10, multipliers and loop counts 1..4.
    generator = lte_programs.ProgramGenerator(np.random.default_rng(3), 1, 1)
    shapes = {
        "pair": r"\((\d+)([+-])(\d+)\)",
        "smallmul": r"\((\d+)\*(\d+)\)",
        "equality": r"(\d+)",
        "ifstat": r"\((\d+) if (\d+)([<>])(\d+) else (\d+)\)",
    }
    for _ in range(200):
        program = generator.program()
        (name,) = program.operations
        if name in shapes:
            assert not program.code
            assert re.fullmatch(shapes[name], program.expression), program.text
        elif name == "vars":
            (line,) = program.code
            assert re.fullmatch(r"([a-j])=\d+;", line)
            assert re.fullmatch(rf"\({line[0]}[+-]\d+\)", program.expression)
        else:  # small_loop: v=a, then for x in range(n):v+=b or v-=b, print(v)
            first, loop = program.code
            variable = first[0]
            assert re.fullmatch(rf"{variable}=\d+", first)
            assert re.fullmatch(rf"for x in range\([1-4]\):{variable}[+-]=\d+", loop)
            assert program.expression == variable


def test_memorization_inputs_present_the_target_as_the_reference_paper_does():
    for name, present in [
        ("lte_copy", lambda d: d),
        ("lte_double", lambda d: d + d),
        ("lte_reverse", lambda d: d[::-1]),
    ]:
        pairs = examples(name)
        lengths = {len(target) for _, target in pairs}
        assert min(lengths) >= 1 and max(lengths) == lte.MEMORIZATION_LENGTH
        for source, target in pairs:
            assert target.isdigit() and source == present(target)


@pytest.mark.parametrize("name", NAMES)
def test_ids_are_in_the_vocabulary_and_the_text_round_trips(name):
    p = problem.get(name)
    for ex in p.generate_examples("dev", np.random.default_rng(1)):
        for key in ("inputs", "targets"):
            ids = ex[key]
            assert ids and all(sequences.NUM_RESERVED_IDS <= i < p.vocab_size for i in ids)
            assert len(ids) < p.max_length("dev")
            assert p.encode_text(p.decode_text(ids)) == ids


def test_splits_are_disjoint_and_generation_is_deterministic(tmp_path, monkeypatch):
    monkeypatch.setattr(
        lte.Program, "splits", {"train": (300, 2), "dev": (100, 1), "test": (100, 1)}
    )
    p = problem.get("lte_program")
    texts = {}
    for split in p.splits:
        rng = np.random.default_rng(5)
        texts[split] = {
            tuple(ex["inputs"] + ex["targets"]) for ex in p.generate_examples(split, rng)
        }
    assert not texts["train"] & texts["dev"]
    assert not texts["train"] & texts["test"]
    assert not texts["dev"] & texts["test"]
    first, second = tmp_path / "a", tmp_path / "b"
    p.generate_data(str(first), seed=3)
    p.generate_data(str(second), seed=3)
    for path in p.filepaths(str(first), "train"):
        twin = path.replace(str(first), str(second))
        assert tf.io.gfile.GFile(path, "rb").read() == tf.io.gfile.GFile(twin, "rb").read()
    assert len(tfrecord.read_examples(p.filepaths(str(first), "dev"))) == 100


def test_impossible_generator_settings_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="nesting in 1..10"):
        lte_programs.ProgramGenerator(rng, 6, 11)
    with pytest.raises(ValueError, match="non-empty subset"):
        lte_programs.ProgramGenerator(rng, 6, 3, ("while_loop",))


def test_unknown_characters_are_named():
    with pytest.raises(ValueError, match=r"unknown character '/'"):
        problem.get("lte_program").encode_text("print((4/2))")


def test_the_graph_tokenizer_matches_the_python_encoding():
    p = problem.get("lte_control")
    tokenizer = p.graph_tokenizer("unused")
    lines = ["a=5#for x in range(3):a+=2#print(a)", "print((1 if 2>3 else 4))", "print(a/b)"]
    ids, known = tokenizer.tokenize(tf.constant(lines))
    assert known.numpy().tolist() == [True, True, False]
    for i in range(2):
        assert ids[i].numpy().tolist() == p.encode_text(lines[i])
    text = tokenizer.detokenize(tf.ragged.constant([p.encode_text(lines[0]) + [1, 0]]))
    assert text.numpy()[0].decode() == lines[0]
    assert tokenizer.vocabulary()[2:] == list(lte.CHARACTERS)
