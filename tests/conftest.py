"""Shared fixtures: quiet TensorFlow, small registered problems, helpers."""

import atexit
import os
import subprocess

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import binary_server
import pytest

from t2t_lite.data import problem
from t2t_lite.problems import algorithmic


@problem.register("test_identity_small")
class IdentitySmall(algorithmic.AlgorithmicProblem):
    """Copy with lengths 1..6 (test: 1..12) and small splits, for fast tests."""

    base = 4
    train_length = 6
    test_length = 12
    splits = {"train": (400, 2), "dev": (40, 1), "test": (20, 1)}


@problem.register("test_reverse_small")
class ReverseSmall(algorithmic.ReverseProblem):
    """Reverse with lengths 1..6 over 4 symbols, for the trained reverse fixture."""

    base = 4
    train_length = 6
    test_length = 12
    splits = {"train": (4000, 2), "dev": (40, 1), "test": (20, 1)}


@problem.register("test_reverse_short")
class ReverseShort(algorithmic.ReverseProblem):
    """Reverse with lengths 1..8, for end-to-end learning tests."""

    base = 10
    train_length = 8
    test_length = 16
    splits = {"train": (20_000, 2), "dev": (200, 1), "test": (100, 1)}


@problem.register("test_addition_small")
class AdditionSmall(algorithmic.AdditionProblem):
    base = 10
    train_length = 8
    test_length = 16
    splits = {"train": (200, 2), "dev": (20, 1), "test": (20, 1)}


@problem.register("test_permute_small")
class PermuteSmall(algorithmic.PermuteProblem):
    """State tracking over S3 with lengths 1..6 (the marker counted), for fast tests."""

    train_length = 6
    test_length = 12
    splits = {"train": (400, 2), "dev": (40, 1), "test": (20, 1)}


def pytest_addoption(parser):
    parser.addoption(
        "--train-seed",
        type=int,
        default=1,
        help="random seed of the tests that train a model (tests/numerics_check.sh varies it)",
    )


# Session fixtures that train: under pytest-xdist (-n 2 --dist loadgroup) the
# tests that share one run on the same worker, so it is trained once.
TRAINED_FIXTURES = ("copy_run", "reverse_run")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    # Tests whose assertions depend on a training run (they take the seed,
    # directly or through copy_run) are the ones tests/numerics_check.sh runs.
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "train_seed" in names:
            item.add_marker(pytest.mark.trains)
        for fixture in TRAINED_FIXTURES:
            if fixture in names:
                item.add_marker(pytest.mark.xdist_group(fixture))
                break


@pytest.fixture(scope="session")
def train_seed(request) -> int:
    """The seed for tests that train; their assertions must hold for any seed."""
    return request.config.getoption("--train-seed")


def write_small_data(data_dir: str) -> str:
    """test_identity_small's files (seeded: the same bytes every time) into data_dir."""
    problem.get("test_identity_small").generate_data(data_dir, seed=3)
    return data_dir


@pytest.fixture
def small_data(tmp_path):
    """A data dir holding test_identity_small's files."""
    return write_small_data(str(tmp_path / "data"))


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# transformer_test's overrides for tests of the training loop's behaviour
# (cadence, signals, locks, checkpoints, keep-best, resume), which no
# assertion ties to depth: one layer traces its train and evaluation steps in
# about 60% of two layers' time (the largest cost of such a test). Tests of
# the stacks themselves (cached decoding, export, parameter counts) keep two.
LOOP_HPARAMS = "batch_size=64,max_length=8,learning_rate_warmup_steps=10,num_hidden_layers=1"
COPY_HPARAMS = (
    "batch_size=256,max_length=16,hidden_size=32,filter_size=64,learning_rate_warmup_steps=100"
)


# Steps for the copy fixture. It reaches 1.0 dev sequence accuracy by step 600
# under every numerics configuration tried (seeds 1-4, oneDNN on and off, AVX2
# and AVX-512 CPUs); at step 300 single runs ranged from 0.775 to 1.0.
COPY_STEPS = 800


def train_to_plateau(root, problem_name: str, seed: int, eval_every: int) -> tuple[str, str]:
    """A tiny Transformer trained COPY_STEPS steps on problem_name -> (data_dir, run_dir).

    How well it learned is asserted by one test of its own
    (test_decode.py::test_the_trained_fixtures_plateau), not here: a fixture
    that fell short fails that test instead of erroring every test that uses it.
    """
    from t2t_lite import experiment
    from t2t_lite.training import trainer

    exp = experiment.Experiment.resolve(
        "transformer", problem_name, "transformer_algorithmic_tiny", COPY_HPARAMS
    )
    config = trainer.TrainConfig(
        train_steps=COPY_STEPS, local_eval_frequency=eval_every, random_seed=seed
    )
    results = trainer.train(exp, str(root / "data"), str(root / "run"), config)
    PLATEAU[problem_name] = results["dev"]["sequence_accuracy"]
    return str(root / "data"), str(root / "run")


# Dev sequence accuracy of each trained fixture, by problem name.
PLATEAU: dict[str, float] = {}


@pytest.fixture(scope="session")
def copy_run(tmp_path_factory, train_seed):
    """A Transformer trained on test_identity_small to a plateau (~30 s).

    Checkpoints at steps 200, 400, 600 and 800. Returns (data_dir, run_dir).
    Tests of decoding and export compare against the model's own decodes;
    only the fixture's guard asserts how well it learned, with a wide margin.
    """
    return train_to_plateau(tmp_path_factory.mktemp("copy"), "test_identity_small", train_seed, 200)


@pytest.fixture(scope="session")
def reverse_run(tmp_path_factory, train_seed):
    """A Transformer trained on test_reverse_small to a plateau. Returns the run dir."""
    root = tmp_path_factory.mktemp("reverse")
    return train_to_plateau(root, "test_reverse_small", train_seed, COPY_STEPS)[1]


_BINARIES = binary_server.Client()
atexit.register(_BINARIES.close)


def tiny_translation(
    tmp_path,
    train: list[tuple[str, str]],
    dev: list[tuple[str, str]],
    vocab_size: int,
    hparams: str,
):
    """A translate_from_files problem over these pairs, its data generated in
    tmp_path/data, and a small Transformer on it -> (data_dir, experiment, run dir)."""
    from t2t_lite import experiment

    for name, pairs in (("train", train), ("dev", dev)):
        (tmp_path / f"{name}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    data_dir = str(tmp_path / "data")
    prob = problem.get("translate_from_files")
    prob.configure(data_dir, [str(tmp_path / "train.tsv")], [str(tmp_path / "dev.tsv")], vocab_size)
    prob.generate_data(data_dir)
    small = "hidden_size=64,filter_size=128,num_heads=4,learning_rate_constant=1.0"
    exp = experiment.Experiment.resolve(
        "transformer", "translate_from_files", "transformer_test", f"{small},{hparams}"
    )
    return data_dir, exp, str(tmp_path / "run")


def python_blocks(page: str) -> list[str]:
    """The ```python blocks of docs/<page>, in order: what a reader pastes."""
    import re

    with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.DOTALL)


def run_binary(name: str, *args: str) -> subprocess.CompletedProcess:
    """Runs bin/<name> in its own process that knows the tests' problems.

    The process is forked from a server that has imported TensorFlow once
    (tests/binary_server.py), so each run skips that import.
    """
    return _BINARIES.run(name, *args)


def compare_one_row(tmp_path, key: str, problem_name: str):
    """`key`'s entry trained 6 steps on problem_name through t2t-compare (evaluated
    at 3 and 6, all test examples greedy-decoded) -> (the table row's cells, the
    run's hparams).

    The row's figures are checked here against figures computed apart from the
    table: the run's own final evaluation (metrics.json) for the teacher-forced
    columns, and a greedy decode of every test example, scored by hand, for the
    greedy ones."""
    import json

    from t2t_lite import experiment, run_dir, sequences
    from t2t_lite.data import tfrecord
    from t2t_lite.decoding import runner
    from t2t_lite.reproduction import comparison, greedy, runs

    data_dir = str(tmp_path / "d")
    problem.get(problem_name).generate_data(data_dir, seed=3)
    config = runs.trainer.TrainConfig(train_steps=6, local_eval_frequency=3)
    out = str(tmp_path / "o")
    table = comparison.compare(
        runs.Request(out, [key], [problem_name], data_dir, config, greedy_examples=-1)
    )
    cells = [cell.strip() for cell in table.splitlines()[2].strip("|").split("|")]
    run = os.path.join(out, problem_name, key)
    with open(os.path.join(run, "metrics.json")) as f:
        final = json.load(f)
    assert cells[2] == f"{final['test']['accuracy']:.2f}"
    assert cells[3] == f"{final['test']['sequence_accuracy']:.2f}"
    assert cells[8] == f"{final['dev']['sequence_accuracy']:.2f}"  # at training lengths
    prob, model, _ = run_dir.open_run(run)
    examples = tfrecord.read_examples(prob.split_files(data_dir, "test"), -1)
    inputs = [sequences.strip_eos(e["inputs"]) for e in examples]
    outputs = runner.make_decoder(model, greedy.GREEDY).decode_ids(inputs)
    right = positions = exact = 0
    for example, [(ids, _)] in zip(examples, outputs, strict=True):
        target = list(example["targets"])  # EOS included
        decoded = [*ids, sequences.EOS_ID]
        right += sum(i < len(decoded) and decoded[i] == t for i, t in enumerate(target))
        positions += len(target)
        exact += decoded == target
    assert cells[4] == f"{right / positions:.2f}"
    assert cells[5] == f"{exact / len(examples):.2f}"
    return cells, experiment.Experiment.load(run).hparams


def entry_experiment(key: str, problem_name: str):
    """comparison.ENTRIES[key] resolved for problem_name, as `runs.run` resolves it."""
    from t2t_lite.reproduction import comparison, runs

    return runs.entry_experiment(comparison.ENTRIES[key], key, problem_name)
