import filecmp
import os

import pytest

from t2t_lite import registry, sequences
from t2t_lite.data import problem, tfrecord
from t2t_lite.problems import algorithmic

ALGORITHMIC = [n for n in registry.PROBLEMS.names() if n.startswith("algorithmic_")]


def small(name, train=60):
    """The registered problem with its splits shrunk (same generator)."""
    cls = registry.PROBLEMS.get(name)
    shrunk = type(
        cls.__name__, (cls,), {"splits": {"train": (train, 2), "dev": (10, 1), "test": (5, 1)}}
    )
    shrunk.name = name
    return shrunk()


def all_examples(prob, data_dir, split):
    return [ex for path in prob.filepaths(data_dir, split) for ex in tfrecord.read_records(path)]


@pytest.mark.parametrize("name", ALGORITHMIC)
def test_ids_within_vocab_and_eos_terminated(name, tmp_path):
    prob = small(name)
    prob.generate_data(str(tmp_path))
    for split in ("train", "test"):
        examples = all_examples(prob, str(tmp_path), split)
        assert len(examples) == prob.splits[split][0]
        for ex in examples:
            for ids in ex.values():
                assert ids[-1] == sequences.EOS_ID
                assert all(2 <= i < prob.vocab_size for i in ids[:-1])
            assert len(ex["inputs"]) - 1 <= prob.split_length(split)


def test_generation_is_deterministic(tmp_path):
    prob = small("algorithmic_reverse_decimal40")
    for d in ("a", "b", "c"):
        prob.generate_data(str(tmp_path / d), seed=7 if d != "c" else 8)
    names = sorted(os.listdir(tmp_path / "a"))
    match, mismatch, errors = filecmp.cmpfiles(tmp_path / "a", tmp_path / "b", names, shallow=False)
    assert match == names and not mismatch and not errors
    assert not filecmp.cmp(tmp_path / "a" / names[0], tmp_path / "c" / names[0], shallow=False)
    assert not any(n.endswith(".incomplete") for n in names)


def test_shard_names_follow_tensor2tensor(tmp_path):
    prob = small("algorithmic_identity_binary40")
    assert [os.path.basename(p) for p in prob.filepaths(str(tmp_path), "train")] == [
        "algorithmic_identity_binary40-train-00000-of-00002",
        "algorithmic_identity_binary40-train-00001-of-00002",
    ]


def test_reverse_targets_are_reversed_inputs(tmp_path):
    prob = small("algorithmic_reverse_binary40")
    prob.generate_data(str(tmp_path))
    for ex in all_examples(prob, str(tmp_path), "dev"):
        assert ex["targets"][:-1] == ex["inputs"][:-1][::-1]


@pytest.mark.parametrize("base_name, base", [("binary", 2), ("decimal", 10)])
def test_addition_sums_and_separator_inside_vocab(base_name, base, tmp_path):
    prob = small(f"algorithmic_addition_{base_name}40", train=200)
    assert prob.vocab_size == base + 3 and prob.separator_id == base + 2
    prob.generate_data(str(tmp_path))
    for ex in all_examples(prob, str(tmp_path), "train"):
        inputs = ex["inputs"][:-1]
        assert inputs.count(prob.separator_id) == 1
        sep = inputs.index(prob.separator_id)
        n1 = algorithmic.from_digits([i - 2 for i in inputs[:sep]], base)
        n2 = algorithmic.from_digits([i - 2 for i in inputs[sep + 1 :]], base)
        assert algorithmic.from_digits([i - 2 for i in ex["targets"][:-1]], base) == n1 + n2
        assert len(inputs) <= 40


def test_parity_and_sort_targets_by_hand(tmp_path):
    parity = registry.PROBLEMS.get("algorithmic_parity_binary40")()
    # ids 2, 3 are the bits 0, 1: three ones -> 1 (id 3); two ones -> 0 (id 2)
    assert parity.target([3, 2, 3, 3]) == [3]
    assert parity.target([3, 2, 2, 3]) == [2]
    assert parity.target([2]) == [2]
    assert parity.test_length == 400 and parity.vocab_size == 4
    assert "algorithmic_parity_decimal40" not in registry.PROBLEMS.names()
    sort = registry.PROBLEMS.get("algorithmic_sort_decimal20")()
    assert sort.target([9, 2, 11, 2]) == [2, 2, 9, 11]
    assert sort.test_length == 200
    prob = small("algorithmic_parity_binary40")
    prob.generate_data(str(tmp_path))
    for ex in all_examples(prob, str(tmp_path), "train"):
        assert ex["targets"] == [2 + ex["inputs"].count(3) % 2, sequences.EOS_ID]


def test_permute_targets_by_hand(tmp_path):
    prob = registry.PROBLEMS.get("algorithmic_permute_three20")()
    assert prob.symbols() == ["012", "021", "102", "120", "201", "210", "|"]
    assert prob.vocab_size == 9 and prob.test_length == 200
    # the start marker (id 8) comes first, added when the text leaves it out
    assert prob.encode_text("120 021") == [8, 5, 3] == prob.encode_text("| 120 021")

    def reached(text):
        return prob.decode_text(prob.target(prob.encode_text(text)))

    # "120" moves the first item to the end: once 120, twice 201, three times back
    assert reached("120") == "120"
    assert reached("120 120") == "201"
    assert reached("120 120 120") == "012"
    # Not abelian: swapping the last two then the first two is a rotation one
    # way, the other order the other way.
    assert reached("021 102") == "201"
    assert reached("102 021") == "120"
    assert reached("210 210") == "012"
    prob = small("algorithmic_permute_three40")
    prob.generate_data(str(tmp_path))
    examples = all_examples(prob, str(tmp_path), "train")
    assert all(ex["inputs"][0] == 8 and 8 not in ex["inputs"][1:-1] for ex in examples)
    answers = {tuple(ex["targets"]) for ex in examples}
    assert len(answers) > 1 and all(len(t) == 2 and 2 <= t[0] < 8 for t in answers)


def test_digits_helpers_by_hand():
    assert algorithmic.to_digits(6, 2) == [0, 1, 1]
    assert algorithmic.to_digits(0, 10) == [0]
    assert algorithmic.from_digits([3, 2, 1], 10) == 123


def test_unknown_split_is_an_error():
    with pytest.raises(ValueError, match="has no split 'eval'"):
        small("algorithmic_identity_binary40").filepaths("/tmp", "eval")


def test_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="Run t2t-datagen"):
        problem.get("test_identity_small").dataset(str(tmp_path), "train", 64)


def test_a_shard_that_is_a_directory_is_named(tmp_path):
    prob = problem.get("test_identity_small")
    data_dir = str(tmp_path)
    prob.generate_data(data_dir, seed=1)
    shard = prob.filepaths(data_dir, "dev")[0]
    os.remove(shard)
    os.mkdir(shard)
    with pytest.raises(ValueError, match=f"{shard} is a directory, not a data shard"):
        prob.dataset(data_dir, "dev", 64)
