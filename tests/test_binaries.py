import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, run_binary


def run_alone(name, *args):
    """bin/<name> started the usual way, in a Python of its own (TensorFlow imported
    again: 5 s or more). The other tests use conftest's forked server, which
    test_the_test_server_reports_what_python_would holds to this."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "bin", name), *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_bad_hparams_key_is_one_clear_line(tmp_path):
    result = run_binary(
        "t2t-train",
        "--problem=algorithmic_identity_binary40",
        "--model=transformer",
        "--hparams_set=transformer_tiny",
        "--hparams=hiden_size=3",
        f"--data_dir={tmp_path}/data",
        f"--output_dir={tmp_path}/run",
    )
    assert result.returncode == 1
    assert "t2t-train: error: unknown hparam 'hiden_size'; valid keys:" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_problem_lists_known_ones(tmp_path):
    result = run_binary("t2t-datagen", "--problem=algorithmic_copy", f"--data_dir={tmp_path}")
    assert result.returncode == 1
    assert "unknown problem 'algorithmic_copy'; known problems: algorithmic_addition_binary20" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_datagen_then_train_prints_metrics(tmp_path):
    data = str(tmp_path / "data")
    gen = run_alone("t2t-datagen", "--problem=algorithmic_reverse_binary40", f"--data_dir={data}")
    assert gen.returncode == 0, gen.stderr
    assert (
        "dev: 1000 examples, test: 1000 examples, train: 100000 examples, "
        "valid_long: 1000 examples" in gen.stdout
    )
    result = run_alone(
        "t2t-train",
        "--problem=algorithmic_reverse_binary40",
        "--model=transformer",
        "--hparams_set=transformer_test",
        f"--data_dir={data}",
        f"--output_dir={tmp_path}/run",
        "--train_steps=3",
        "--local_eval_frequency=2",
    )
    assert result.returncode == 0, result.stderr
    assert "tokens/s=" in result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["split", "examples", "loss", "accuracy", "seq_acc"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["dev", "1000"],
        ["test", "1000"],
        ["valid_long", "1000"],
    ]
    assert sorted(f for f in os.listdir(tmp_path / "run") if f.endswith(".index")) == [
        "model.ckpt-2.index",
        "model.ckpt-3.index",
    ]


def test_compare_refuses_an_unknown_model_in_one_line(tmp_path):
    result = run_binary(
        "t2t-compare",
        "--models=transformer,lstm",
        f"--data_dir={tmp_path}",
        f"--output_dir={tmp_path}",
    )
    assert result.returncode == 1
    assert "t2t-compare: error: --models: unknown ['lstm']" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("models", ["transformer", "t3_base"])
def test_compare_refuses_a_bad_records_flag_in_one_line(tmp_path, models):
    path = tmp_path / "records"
    path.write_text("")
    result = run_binary(
        "t2t-compare",
        f"--models={models}",
        "--problems=translate_from_files",
        f"--data_dir={tmp_path}",
        f"--output_dir={tmp_path}",
        f"--records={path}",
    )
    assert result.returncode == 1
    assert f"t2t-compare: error: --records '{path}' is a file, not a directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_test_server_reports_what_python_would():
    # The tests' programs run in forked children (tests/binary_server.py): an
    # uncaught exception must still show as a traceback with status 1, and a
    # program's exit status and streams must come back as they were.
    missing = run_binary("t2t-no-such-program")
    assert missing.returncode == 1 and "Traceback" in missing.stderr
    usage = run_binary("t2t-datagen", "--random_seed=x")
    assert usage.returncode == 1 and "random_seed" in usage.stderr
    # The same answer as a program started the usual way (its own Python).
    for args in (["--help"], ["--output_dir=/nonexistent/run"]):
        alone = run_alone("t2t-decode", *args)
        forked = run_binary("t2t-decode", *args)
        assert (forked.returncode, forked.stdout) == (alone.returncode, alone.stdout)
        assert forked.stderr.splitlines()[-1:] == alone.stderr.splitlines()[-1:]


def test_programs_are_console_scripts_into_the_package_and_bin_only_launches_them():
    """An editable install runs the package's code as it is now: every program
    is a console script t2t_lite.programs.<name>:run (tensor2tensor's program
    names too), and bin/ holds launchers that import nothing else."""
    import ast
    import importlib.metadata

    scripts = {
        e.name: e.value
        for e in importlib.metadata.entry_points(group="console_scripts")
        if e.name.startswith("t2t-")
    }
    launchers = sorted(os.listdir(os.path.join(ROOT, "bin")))
    # tensor2tensor's names are other names of the same programs.
    aliases = {
        "t2t-trainer": "t2t-train",
        "t2t-decoder": "t2t-decode",
        "t2t-avg-all": "t2t-avg-checkpoints",
        "t2t-exporter": "t2t-export",
    }
    assert {alias: scripts.get(alias) for alias in aliases} == {
        alias: scripts[program] for alias, program in aliases.items()
    }
    assert sorted(set(scripts) - set(aliases)) == launchers and len(launchers) == 9
    for name in launchers:
        module = name[len("t2t-") :].replace("-", "_")
        assert scripts[name] == f"t2t_lite.programs.{module}:run"
        with open(os.path.join(ROOT, "bin", name)) as f:
            tree = ast.parse(f.read())
        imported = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        assert [(n.module, [a.name for a in n.names]) for n in imported] == [
            ("t2t_lite.programs", [module])
        ]


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
@pytest.mark.skipif(
    os.path.exists("/proc/driver/nvidia/version"), reason="a machine with an NVIDIA driver"
)
def test_no_cuda_error_on_a_machine_without_a_gpu(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bin", "t2t-datagen"),
         "--problem=algorithmic_identity_binary40", f"--data_dir={tmp_path}"],
        capture_output=True, text=True, env=dict(env, PYTHONPATH=ROOT), timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "cuInit" not in result.stderr and "CUDA error" not in result.stderr


def test_ctrl_c_and_a_saved_stop_are_one_line_with_the_signal_status(capsys):
    from t2t_lite import cli

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as exited:
        cli.run("t2t-export", interrupted)
    assert exited.value.code == 130
    assert capsys.readouterr().err == ("t2t-export: interrupted; no file was left half-written\n")

    # Saved but unfinished: 128 + the signal's number, as the shell reports a
    # process a signal ended (SIGTERM is 15, SIGINT 2 on every Linux).
    for name, status in (("SIGTERM", 143), ("SIGINT", 130), ("a signal on another worker", 143)):

        def stopped(name=name):
            raise cli.Interrupted(f"stopped by {name} at step 7; saved r/model.ckpt-7", name)

        with pytest.raises(SystemExit) as exited:
            cli.run("t2t-train", stopped)
        assert exited.value.code == status
        assert (
            capsys.readouterr().err
            == f"t2t-train: stopped by {name} at step 7; saved r/model.ckpt-7\n"
        )


@pytest.mark.parametrize(
    ("binary", "flags", "says"),
    [
        (
            "t2t-train",
            [
                "--problem=algorithmic_identity_binary40",
                "--model=transformer",
                "--hparams_set=transformer_test",
                "--keep_best=valid_long",
            ],
            "--keep_best='valid_long': expected SPLIT/METRIC",
        ),
        (
            "t2t-compare",
            ["--models=t3_base", "--problems=translate_from_files", "--keep_best=dev/loss"],
            "--keep_best: for the algorithmic and Learning to Execute tables, not translation rows",
        ),
    ],
)
def test_a_bad_keep_best_is_one_line(tmp_path, binary, flags, says):
    result = run_binary(binary, *flags, f"--data_dir={tmp_path}", f"--output_dir={tmp_path}")
    assert result.returncode == 1
    assert f"{binary}: error: {says}" in result.stderr
    assert "Traceback" not in result.stderr


SIGTERM_OUTSIDE_THE_LOOP = """
import sys, time
from t2t_lite import cli, run_lock
from t2t_lite.data import problem
from t2t_lite.problems import algorithmic, datagen

def working():  # a minute of work that returns to Python between operations
    # Python runs a signal's handler in the main thread at its next bytecode; the
    # kernel may hand SIGTERM to another thread (TensorFlow's), which would not
    # cut a single long sleep of the main thread short.
    for _ in range(600):
        time.sleep(0.1)

def final_evaluation():  # a trainer's lock held, as during its last evaluation
    run_lock.RunLock(sys.argv[1]).acquire()
    print("ready", flush=True)
    working()

def generating():  # t2t-datagen half way through a shard
    def slow(self, data_dir, seed=1):
        with open(data_dir + "/p-train-00000-of-00001.incomplete-x", "w") as f:
            f.write("half")
        print("ready", flush=True)
        working()
    problem.get("algorithmic_identity_binary40").__class__.generate_data = slow
    datagen.generate("algorithmic_identity_binary40", sys.argv[1])

cli.run("t2t-train", {"train": final_evaluation, "datagen": generating}[sys.argv[2]])
"""


@pytest.mark.parametrize(
    "where",
    ["train", pytest.param("datagen", marks=pytest.mark.slow)],  # the fast tier's budget
)
def test_sigterm_outside_a_training_loop_is_one_line_and_leaves_no_lock(tmp_path, where):
    """A scheduler's SIGTERM during data generation or a final evaluation (no
    training loop to save): status 143, one line, the lock and the unfinished
    shard removed, as Ctrl-C there does."""
    import signal

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    process = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_OUTSIDE_THE_LOOP, str(tmp_path), where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err[-2000:]
    assert err.strip().splitlines()[-1] == (
        "t2t-train: stopped by SIGTERM; no file was left half-written"
    )
    assert sorted(os.listdir(tmp_path)) == []  # no lock, no unfinished shard


def test_t2t_bleu_scores_a_translation_file_cased_and_uncased(tmp_path):
    """Identical lines score 100; a hypothesis differing from its reference only
    in case scores 100 uncased and less cased; misaligned files are one error."""
    reference = tmp_path / "ref.de"
    reference.write_text("das ist ein kleines haus .\nwir gehen heute nach hause .\n")
    cased = tmp_path / "cased.de"
    cased.write_text("Das ist ein kleines Haus .\nwir gehen heute nach hause .\n")
    short = tmp_path / "short.de"
    short.write_text("das ist ein kleines haus .\n")

    def bleu(translation):
        return run_binary("t2t-bleu", f"--translation={translation}", f"--reference={reference}")

    same = json.loads(bleu(reference).stdout)
    assert (same["bleu"], same["bleu_uncased"], same["lines"]) == (100.0, 100.0, 2)
    assert same["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    figures = json.loads(bleu(cased).stdout)
    assert figures["bleu_uncased"] == 100.0 and figures["bleu"] < 100.0
    result = bleu(short)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"t2t-bleu: error: --translation {short}, --reference {reference}: "
        "1 hypotheses but 2 references: they must be aligned line by line"
    )


def test_a_missing_flag_is_one_error_line_and_help_is_a_success():
    done = run_binary("t2t-train", "--problem=test_identity_small")
    assert done.returncode == 1 and "FATAL" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "t2t-train: error: missing required flags --model, --hparams_set, --data_dir, "
        "--output_dir (--helpshort lists the flags)"
    )
    done = run_binary("t2t-decode", "--decode_hparams=beam_size=x")
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1].startswith(
        "t2t-decode: error: "
    )
    for asked in ("--helpfull", "--helpshort", "--help"):
        done = run_binary("t2t-evalb", asked)
        assert done.returncode == 0 and "--gold_file" in done.stdout + done.stderr


def test_compares_split_flag_keeps_its_earlier_name():
    from absl import flags

    from t2t_lite.programs import compare  # noqa: F401  (defines the flags)

    parsed = flags.FlagValues()
    for name in ("split", "bleu_split"):
        parsed[name] = flags.FLAGS[name]
    try:
        parsed(["t2t-compare", "--bleu_split=test"])
        assert parsed.split == "test"
    finally:
        flags.FLAGS["split"].value = "dev"  # the flag objects are the program's
