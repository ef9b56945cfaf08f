"""Reliability: one trainer per run dir, only finite checkpoints, recovery, clean errors."""

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
from conftest import LOOP_HPARAMS, ROOT, run_binary, write_small_data

from t2t_lite import checkpoints, experiment, files, run_lock
from t2t_lite import run_dir as run_dir_lib
from t2t_lite.data import problem, text_files, tfrecord
from t2t_lite.decoding import runner
from t2t_lite.training import averaging, trainer

HPARAMS = LOOP_HPARAMS


def make_trainer(data_dir, run_dir, steps=4, overrides=HPARAMS):
    exp = experiment.Experiment.resolve(
        "transformer", "test_identity_small", "transformer_test", overrides
    )
    config = trainer.TrainConfig(
        train_steps=steps, local_eval_frequency=2, eval_steps=1, keep_checkpoint_max=10
    )
    return trainer.Trainer(exp, data_dir, run_dir, config)


def hold_lock(run_dir: str, lock_file: str = run_lock.LOCK_FILE) -> subprocess.Popen:
    """Another process that takes the directory's lock and keeps it until killed."""
    code = (
        "import sys, time; from t2t_lite import run_lock; "
        "run_lock.RunLock(sys.argv[1], sys.argv[2]).acquire(); print('held', flush=True); "
        "time.sleep(120)"
    )
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    os.makedirs(run_dir, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", code, run_dir, lock_file], stdout=subprocess.PIPE, text=True, env=env
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_a_second_trainer_is_refused_and_a_dead_owners_lock_is_taken_over(
    small_data, tmp_path, caplog
):
    run = str(tmp_path / "run")
    holder = hold_lock(run)
    try:
        result = run_binary(
            "t2t-train", "--problem=test_identity_small", "--model=transformer",
            "--hparams_set=transformer_test", f"--hparams={HPARAMS}",
            f"--data_dir={small_data}", f"--output_dir={run}", "--train_steps=2",
        )  # fmt: skip
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert (
            result.stderr.strip()
            .splitlines()[-1]
            .startswith(
                f"t2t-train: error: '{run}' is being trained by pid {holder.pid} on {files.HOST}"
            )
        )
        assert not os.path.exists(os.path.join(run, experiment.EXPERIMENT_FILE))  # untouched
    finally:
        holder.kill()
        holder.wait()
    # The owner died (kill -9): its lock is stale and taken over, with a log line.
    results = trainer.train(
        experiment.Experiment.resolve(
            "transformer", "test_identity_small", "transformer_test", HPARAMS
        ),
        small_data,
        run,
        trainer.TrainConfig(train_steps=2, local_eval_frequency=2, eval_steps=1),
    )
    assert results["dev"]["examples"] == 40
    assert f"Taking over the stale lock {run}/{run_lock.LOCK_FILE}" in caplog.text
    assert not os.path.exists(os.path.join(run, run_lock.LOCK_FILE))  # released at the end


def test_a_lock_from_another_host_is_stale_only_without_heartbeat(tmp_path):
    lock = run_lock.RunLock(str(tmp_path))
    record = {"host": "elsewhere", "pid": 1, "started": time.time(), "heartbeat": time.time()}
    (tmp_path / run_lock.LOCK_FILE).write_text(json.dumps(record))
    with pytest.raises(run_lock.RunLockedError, match="pid 1 on elsewhere"):
        lock.acquire()
    record["heartbeat"] -= run_lock.STALE_AFTER_S + 1
    (tmp_path / run_lock.LOCK_FILE).write_text(json.dumps(record))
    lock.acquire()
    assert lock.owner()["host"] == files.HOST and lock.owner()["pid"] == os.getpid()
    lock.release()
    assert lock.owner() is None


def test_non_finite_weights_are_never_saved(small_data, tmp_path):
    t = make_trainer(small_data, str(tmp_path / "run"))
    t.model.weights[0].assign(tf.fill(t.model.weights[0].shape, math.nan))
    with pytest.raises(
        trainer.NonFiniteLossError, match="No checkpoint with finite weights has been written"
    ):
        t._save(1)
    assert checkpoints.by_step(str(tmp_path / "run")) == []

    t = make_trainer(small_data, str(tmp_path / "run2"))
    t._save(1)
    t.model.weights[0].assign(tf.fill(t.model.weights[0].shape, math.inf))
    with pytest.raises(
        trainer.NonFiniteLossError, match=r"newest checkpoint with finite weights, .*model.ckpt-1,"
    ):
        t._save(2)
    assert [os.path.basename(p) for p in checkpoints.by_step(str(tmp_path / "run2"))] == [
        "model.ckpt-1"
    ]


def corrupt(path_prefix: str) -> None:
    """Flips bytes in the middle of a checkpoint's data file."""
    data = path_prefix + ".data-00000-of-00001"
    with open(data, "rb") as f:
        raw = bytearray(f.read())
    for i in range(len(raw) // 3, len(raw) // 3 + 64):
        raw[i] ^= 0xFF
    with open(data, "wb") as f:
        f.write(bytes(raw))


def test_resume_skips_a_corrupt_checkpoint_for_the_newest_readable_one(
    small_data, tmp_path, caplog
):
    run = str(tmp_path / "run")
    make_trainer(small_data, run, steps=4).train()  # checkpoints at 2 and 4
    newest, older = checkpoints.by_step(run)
    corrupt(newest)
    resumed = make_trainer(small_data, run, steps=4)
    assert int(resumed.step.numpy()) == 2
    assert f"Skipping checkpoint {newest}, which cannot be read" in caplog.text
    corrupt(older)
    with pytest.raises(ValueError, match=r"no readable checkpoint in .* \(2 tried"):
        make_trainer(small_data, run, steps=4)


@pytest.mark.slow  # the corrupt checkpoint's test (fast tier) takes the same path
def test_resume_skips_a_truncated_newest_checkpoint(small_data, tmp_path, caplog):
    """`truncate -s` of the newest .data file: skipped with a warning, not a traceback."""
    run = str(tmp_path / "run")
    make_trainer(small_data, run, steps=4).train()
    newest, _ = checkpoints.by_step(run)
    data = newest + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 3)
    # The read-only tools name it in one line.
    with pytest.raises(ValueError, match=f"checkpoint {newest} cannot be read"):
        averaging.run(run, 2, [])
    with pytest.raises(ValueError, match=f"checkpoint {newest} cannot be read"):
        run_dir_lib.open_run(run)
    resumed = make_trainer(small_data, run, steps=4)
    assert int(resumed.step.numpy()) == 2
    assert f"Skipping checkpoint {newest}, which cannot be read" in caplog.text


def write_list(run: str, *steps: int) -> None:
    """The run's `checkpoint` list naming steps 2 and `steps`, the last the newest."""
    paths = [f"{run}/model.ckpt-{step}" for step in (2, *steps)]
    tf.compat.v1.train.update_checkpoint_state(run, paths[-1], paths)


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_a_reader_retries_when_the_trainer_deletes_the_checkpoint_it_chose(
    small_data, tmp_path, monkeypatch, caplog
):
    """t2t-decode/export/visualize follow a running trainer: the checkpoint they chose
    (step 4) is deleted during the read while step 6 is saved; they read step 6.
    The `checkpoint` list naming a deleted checkpoint falls back to what is on disk."""
    run = str(tmp_path / "run")
    make_trainer(small_data, run, steps=4).train()  # checkpoints at 2 and 4
    chosen = checkpoints.by_step(run)[0]
    restore, calls = checkpoints.restore_model, []

    def trainer_moves_on(model, path):
        calls.append(path)
        if len(calls) == 1:  # the trainer saves step 6 and deletes step 4
            for name in tf.io.gfile.glob(chosen + ".*"):
                tf.io.gfile.rename(name, name.replace("model.ckpt-4", "model.ckpt-6"))
            write_list(run, 6)
        restore(model, path)

    monkeypatch.setattr(checkpoints, "restore_model", trainer_moves_on)
    _, _, path = run_dir_lib.open_run(run)
    assert calls == [chosen, f"{run}/model.ckpt-6"] and path == f"{run}/model.ckpt-6"
    assert f"Checkpoint {chosen} was deleted while it was read" in caplog.text
    monkeypatch.setattr(checkpoints, "restore_model", restore)

    # A given --checkpoint_path is not swapped for another: its loss is an error.
    with pytest.raises(FileNotFoundError, match="--checkpoint_path: no checkpoint at"):
        run_dir_lib.open_run(run, chosen)
    # The list names step 8, deleted: the newest on disk is read, and averaged.
    write_list(run, 6, 8)
    assert run_dir_lib.open_run(run)[2] == f"{run}/model.ckpt-6"
    assert run_dir_lib.kept_checkpoints(run) == [f"{run}/model.ckpt-2", f"{run}/model.ckpt-6"]


def write_nan_checkpoint(small_data, run: str, step: int) -> str:
    """A complete, readable training checkpoint at `step` whose embedding is NaN (as a
    copy from a diverged run or a broken external tool would leave), saved by the
    checkpoint manager directly, past the trainer's finite check."""
    t = make_trainer(small_data, run, steps=step)
    t.model.embedding.weights_matrix.assign(t.model.embedding.weights_matrix * np.nan)
    path = t.manager.save(checkpoint_number=step)
    t.lock.release()
    return path


@pytest.mark.slow  # for the fast tier's time (docs/testing.md)
def test_a_checkpoint_with_nan_weights_is_refused_by_every_reader_and_skipped_on_resume(
    small_data, tmp_path, caplog
):
    run = str(tmp_path / "run")
    make_trainer(small_data, run, steps=4).train()
    bad = write_nan_checkpoint(small_data, run, 6)
    assert checkpoints.by_step(run)[0] == bad
    for read in (
        lambda: run_dir_lib.open_run(run),  # t2t-decode, t2t-export, t2t-visualize
        lambda: averaging.run(run, 2, []),  # t2t-avg-checkpoints
    ):
        with pytest.raises(ValueError, match=f"checkpoint {bad} holds non-finite"):
            read()
    resumed = make_trainer(small_data, run, steps=4)
    assert int(resumed.step.numpy()) == 4
    assert f"Skipping checkpoint {bad}, which cannot be read: it holds non-finite" in caplog.text


def test_a_partial_data_dir_is_an_error_naming_what_is_missing(small_data, tmp_path):
    """One missing shard used to make t2t-train regenerate (overwrite) every shard."""
    prob = problem.get("test_identity_small")
    train_shards = prob.filepaths(small_data, "train")
    kept = {path: tf.io.gfile.GFile(path, "rb").read() for path in prob.data_files(small_data)}
    os.remove(train_shards[1])
    with pytest.raises(
        FileNotFoundError, match=r"holds part of test_identity_small's data: 1 of 4"
    ):
        make_trainer(small_data, str(tmp_path / "run"))
    for path, content in kept.items():
        if path != train_shards[1]:
            assert tf.io.gfile.GFile(path, "rb").read() == content  # nothing rewritten
    # An interrupted datagen's leftover (a shard under its temporary name) is redone.
    open(train_shards[1] + ".incomplete", "wb").close()
    make_trainer(small_data, str(tmp_path / "run2"))
    assert not prob.missing_data(small_data)


def test_metrics_are_strict_json_and_empty_splits_are_refused(tmp_path):
    assert json.loads(files.strict_json({"a": {"loss": math.nan, "n": 1}})) == {
        "a": {"loss": None, "n": 1}
    }
    data = str(tmp_path / "data")
    problem.get("test_identity_small").generate_data(data, seed=1)
    paths = problem.get("test_identity_small").filepaths(data, "dev")
    for path in paths:
        with tf.io.TFRecordWriter(path):
            pass  # an empty dev split, as datagen counted it (a zero-byte shard it
    counts = {"examples": 0, "inputs_tokens": 0, "targets_tokens": 0}  # counted full is refused)
    files.write_atomically(tfrecord.stats_path(paths), json.dumps(counts))
    with pytest.raises(ValueError, match=r"the dev split of test_identity_small .* no examples"):
        make_trainer(data, str(tmp_path / "run"))


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_nonsensical_learning_rates_are_refused(value):
    with pytest.raises(ValueError, match="learning_rate_constant"):
        experiment.Experiment.resolve(
            "transformer", "test_identity_small", "transformer_test",
            f"learning_rate_constant={value}",
        )  # fmt: skip


def test_user_files_byte_order_mark_empty_file_and_interactive_utf8(tmp_path, copy_run):
    path = tmp_path / "bom.tsv"
    path.write_bytes("\ufeffhallo\thello\nzwei\ttwo\n".encode())
    assert files.read_lines(str(path)) == ["hallo\thello", "zwei\ttwo"]
    (tmp_path / "empty.tsv").write_text("\n\n")
    with pytest.raises(ValueError, match=r"empty.tsv: the file is empty"):
        list(text_files.read_pairs([str(tmp_path / "empty.tsv")]))
    _, run_dir = copy_run
    prob, model, _ = run_dir_lib.open_run(run_dir)
    out = __import__("io").StringIO()
    runner.decode_interactive(runner.make_decoder(model, ""), prob, [b"\xff 1\n", b"1 2\n"], out)
    assert out.getvalue().splitlines()[0] == "error: <stdin>:1: not valid UTF-8"


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_averaging_and_export_clean_their_own_leftovers_only(copy_run, tmp_path):
    from t2t_lite.export import exporter

    _, run_dir = copy_run
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead_tag, live_tag = f"{dead.pid}@{files.HOST}@", f"{live.pid}@{files.HOST}@"
    out = tmp_path / "avg"
    out.mkdir()
    for tag in (dead_tag, live_tag):
        (out / f"model.ckpt-800.incomplete-{tag}.index").write_text("")
    (out / f"model.ckpt-600.incomplete-{dead_tag}-part0.index").write_text("")  # older step
    (out / "model.ckpt-800.incomplete-unrelated").write_text("")
    averaging.run(run_dir, 2, [], str(out / "model.ckpt-800"))
    names = sorted(os.listdir(out))
    assert f"model.ckpt-800.incomplete-{dead_tag}.index" not in names
    assert f"model.ckpt-600.incomplete-{dead_tag}-part0.index" not in names
    assert f"model.ckpt-800.incomplete-{live_tag}.index" in names  # a running process's
    live.kill()
    assert "model.ckpt-800.incomplete-unrelated" in names  # not a name averaging makes
    # Averaging never writes beside a training run's checkpoints.
    with pytest.raises(ValueError, match="training run's directory"):
        averaging.run("", 2, checkpoints.by_step(run_dir)[:2], f"{run_dir}/model.ckpt-9")

    export_dir = tmp_path / "export"
    (export_dir / f".incomplete-{dead_tag}3").mkdir(parents=True)
    exporter.export(run_dir, str(export_dir), overrides="beam_size=1")
    assert sorted(os.listdir(export_dir)) == ["1"]


def run_datagen_fresh(data_dir: str, tsv: str) -> None:
    code = (
        "import sys; sys.path[:0] = sys.argv[3:5]; import conftest; "
        "from t2t_lite.data import problem; "
        "problem.get('test_identity_small').generate_data(sys.argv[1], seed=5); "
        "p = problem.get('translate_from_files'); p.configure(sys.argv[1], [sys.argv[2]], "
        "[sys.argv[2]], 60); p.generate_data(sys.argv[1], seed=5)"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run(
        [sys.executable, "-c", code, data_dir, tsv, ROOT, os.path.join(ROOT, "tests")],
        check=True,
        env=env,
        capture_output=True,
    )


@pytest.mark.slow
def test_the_same_seed_gives_byte_identical_shards_in_fresh_processes(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "eins", "zwei", "drei"]
    tsv.write_text("".join(f"{' '.join(rng.choice(words, 4))}\t{' '.join(rng.choice(words, 3))}\n"
                           for _ in range(60)))  # fmt: skip
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    run_datagen_fresh(first, str(tsv))
    run_datagen_fresh(second, str(tsv))
    shards = sorted(n for n in os.listdir(first) if "-of-" in n)
    assert any(n.startswith("translate_from_files-train") for n in shards)
    assert any(n.startswith("test_identity_small-train") for n in shards)
    for name in shards:
        with (
            open(os.path.join(first, name), "rb") as a,
            open(os.path.join(second, name), "rb") as b,
        ):
            assert a.read() == b.read(), name


def load_probe():
    spec = importlib.util.spec_from_file_location(
        "reliability", os.path.join(ROOT, "bench", "reliability.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_training_killed_twice_leaves_readable_artefacts_and_resumes():
    """Two SIGKILLs at seeded moments, then a resume to the end (bench/reliability.py has more)."""
    figures = load_probe().probe(kills=2, steps=30, seed=3)
    assert figures["trials"] == 2
    assert figures["corrupt_artefacts"] == 0, figures["details"]
    assert figures["failed_resumes"] == 0, figures["details"]


BAD_INPUTS = [
    # (binary, flags, what the one error line must say); {f} is a regular file, {r} a run.
    ("t2t-train", ["--output_dir={f}"], "--output_dir '{f}' is a file"),
    ("t2t-train", ["--output_dir={f}/sub"], "--output_dir '{f}/sub' is not a writable directory"),
    ("t2t-train", ["--hparams=learning_rate_constant=-1"], "learning_rate_constant"),
    ("t2t-train", ["--hparams=learning_rate_constant=nan"], "learning_rate_constant"),
    ("t2t-train", ["--hparams=clip_grad_norm=inf"], "clip_grad_norm"),
    ("t2t-datagen", ["--data_dir={f}"], "--data_dir '{f}' is a file"),
    ("t2t-export", ["--export_dir={f}"], "--export_dir '{f}' is a file"),
    ("t2t-decode", ["--output_dir={f}"], "experiment.json not found"),
    ("t2t-avg-checkpoints", ["--output_path={r}/model.ckpt-9"], "training run's directory"),
    ("t2t-train", ["--hparams=hidden_size=16,hidden_size=32"], "'hidden_size' is given twice"),
    ("t2t-train", ["--random_seed=-1"], "--random_seed must be in [0, 2**31)"),
    ("t2t-decode", ["--output_dir={r}", "--decode_to_file={f}"], "is the input file"),
    ("t2t-decode", ["--output_dir={r}", "--decode_hparams=temperature=inf"], "(temperature)"),
    ("t2t-decode", ["--output_dir={r}", "--checkpoint_path={r}/model.ckpt-9"], "no checkpoint"),
]
DEFAULTS = {
    "t2t-train": ["--problem=test_identity_small", "--model=transformer",
                  "--hparams_set=transformer_test", "--data_dir={d}", "--output_dir={o}",
                  "--train_steps=1", f"--hparams={HPARAMS}"],
    "t2t-datagen": ["--problem=test_identity_small"],
    "t2t-export": ["--output_dir={r}"],
    "t2t-decode": ["--decode_from_file={f}"],
    "t2t-avg-checkpoints": ["--checkpoints={r}/model.ckpt-2"],
}  # fmt: skip


@pytest.fixture(scope="module")
def two_step_run(tmp_path_factory) -> str:
    """make_trainer's run of 2 steps (checkpoint model.ckpt-2), trained once for the
    bad-input cases that only need a run to exist; each copies it first."""
    root = tmp_path_factory.mktemp("two_step")
    make_trainer(write_small_data(str(root / "data")), str(root / "run"), steps=2).train()
    return str(root / "run")


@pytest.mark.parametrize(("binary", "flags", "expected"), BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_1(binary, flags, expected, tmp_path, small_data, request):
    regular = tmp_path / "a_file"
    regular.write_text("x\n")
    run = tmp_path / "run"
    if any("{r}" in flag for flag in flags + DEFAULTS[binary]):
        shutil.copytree(request.getfixturevalue("two_step_run"), run)
    names = {"f": str(regular), "r": str(run), "d": small_data, "o": str(tmp_path / "out")}
    given = [flag.format(**names) for flag in flags]
    keys = {flag.split("=")[0] for flag in given}
    defaults = [f.format(**names) for f in DEFAULTS[binary] if f.split("=")[0] not in keys]
    before = snapshot(tmp_path, small_data)
    result = run_binary(binary, *defaults, *given)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{binary}: error: ") and expected.format(**names) in last
    assert snapshot(tmp_path, small_data) == before  # nothing written, moved or removed


def snapshot(*roots) -> dict[str, bytes]:
    """Every file and directory under roots -> its bytes (b"/" for a directory)."""
    found = {}
    for root in map(str, roots):
        for directory, subdirectories, names in os.walk(root):
            for name in subdirectories:
                found[os.path.join(directory, name)] = b"/"
            for name in names:
                with open(os.path.join(directory, name), "rb") as f:
                    found[os.path.join(directory, name)] = f.read()
    return found


def test_small_user_mistakes_are_named(tmp_path):
    """Each was silently accepted or a traceback before."""
    from t2t_lite import hparams as hparams_lib
    from t2t_lite.decoding import decoder as decoder_lib
    from t2t_lite.models import transformer_hparams

    with pytest.raises(ValueError, match="'hidden_size' is given twice"):
        hparams_lib.override(transformer_hparams.transformer_test(), "hidden_size=8,hidden_size=16")
    for value in ("inf", "nan"):
        with pytest.raises(ValueError, match="temperature"):
            hparams_lib.override(decoder_lib.DecodeHParams(), f"temperature={value}")
    with pytest.raises(ValueError, match=r"--random_seed must be in \[0, 2\*\*31\), got -1"):
        trainer.TrainConfig(random_seed=-1)
    source = tmp_path / "in.txt"
    source.write_text("1 2\n")
    with pytest.raises(ValueError, match="--decode_to_file .* is the input file"):
        runner.decode_file(None, None, str(source), str(source))
    with pytest.raises(ValueError, match="--decode_to_file .* is a directory"):
        runner.decode_file(None, None, str(source), str(tmp_path))
    assert source.read_text() == "1 2\n"


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_a_second_datagen_on_one_data_dir_is_refused_and_writes_nothing(tmp_path):
    data = str(tmp_path / "data")
    holder = hold_lock(data, run_lock.DATAGEN_LOCK_FILE)
    try:
        result = run_binary("t2t-datagen", "--problem=test_identity_small", f"--data_dir={data}")
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert (
            result.stderr.strip()
            .splitlines()[-1]
            .startswith(
                f"t2t-datagen: error: '{data}' is being written by pid {holder.pid} on {files.HOST}"
            )
        )
        assert os.listdir(data) == [run_lock.DATAGEN_LOCK_FILE]  # no shard, no stats
    finally:
        holder.kill()
        holder.wait()
    # The owner is gone: the next datagen takes over, and removes a dead writer's
    # shard under its temporary name.
    dead = f"{2**22 + 1}@{files.HOST}@"
    leftover = os.path.join(data, f"test_identity_small-train-00000-of-00002.incomplete-{dead}")
    open(leftover, "wb").close()
    assert (
        run_binary("t2t-datagen", "--problem=test_identity_small", f"--data_dir={data}").returncode
        == 0
    )
    names = os.listdir(data)
    assert not [n for n in names if "incomplete" in n] and run_lock.DATAGEN_LOCK_FILE not in names


def test_shards_are_written_under_the_writers_own_temporary_names(tmp_path):
    from t2t_lite.data import tfrecord

    seen = []

    def examples():
        yield {"inputs": [3, 1], "targets": [3, 1]}
        seen.extend(sorted(os.listdir(tmp_path)))
        yield {"inputs": [4, 1], "targets": [4, 1]}

    paths = [str(tmp_path / f"p-train-{i:05d}-of-00002") for i in range(2)]
    assert tfrecord.write_shards(examples(), paths) == 2
    tag = files.owner_tag()
    assert seen == [f"p-train-{i:05d}-of-00002.incomplete-{tag}" for i in range(2)]
