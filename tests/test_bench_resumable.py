"""A side-by-side benchmark's work directory: refused when reused with other
settings, a wall-time ledger summed over reruns, and a stop that saves both."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import resumable


def test_a_work_dir_keeps_its_settings_and_refuses_others(tmp_path):
    work = str(tmp_path)
    resumable.check_settings(work, {"hidden_size": 128, "train": ("a", "b")})
    resumable.check_settings(work, {"hidden_size": 128, "train": ["a", "b"]})  # same, as JSON
    with pytest.raises(ValueError) as err:
        resumable.check_settings(work, {"hidden_size": 256, "train": ["a", "b"]})
    message = str(err.value)
    assert message.startswith("--hidden_size: ") and "128" in message and "256" in message
    with pytest.raises(ValueError, match="^--seed: .*None.*not 3"):  # a setting it lacked
        resumable.check_settings(work, {"hidden_size": 128, "train": ["a", "b"], "seed": 3})
    kept = json.loads((tmp_path / resumable.SETTINGS_FILE).read_text())
    assert kept == {"hidden_size": 128, "train": ["a", "b"]}  # the first run's, unchanged


def test_an_input_file_is_its_content_as_well_as_its_path(tmp_path):
    path = tmp_path / "train.en"
    path.write_text("one\n")
    first = resumable.file_identity(str(path))
    assert first.startswith(str(path) + " sha256:")
    assert resumable.file_identity(str(path)) == first
    path.write_text("two\n")
    assert resumable.file_identity(str(path)) != first


@pytest.fixture
def now(monkeypatch):
    """The clock the ledger reads, set by the test: now[0] seconds."""
    reading = [0.0]
    monkeypatch.setattr(resumable.time, "perf_counter", lambda: reading[0])
    return reading


def test_the_wall_clock_sums_every_run_of_a_side(tmp_path, now):
    now[0] = 100.0
    clock = resumable.WallClock(str(tmp_path))
    clock.start("t2t_lite")
    now[0] = 130.0
    clock.stop("t2t_lite")
    assert clock.total("t2t_lite") == 30.0 and clock.total("opennmt_py") == 0.0
    clock.save()
    again = resumable.WallClock(str(tmp_path))  # the rerun
    now[0] = 1000.0
    again.start("t2t_lite")
    again.start("opennmt_py")
    now[0] = 1005.0
    assert again.total("t2t_lite") == 35.0  # while it runs: 30 before + 5 now
    again.save()
    assert json.loads((tmp_path / resumable.WALL_FILE).read_text()) == {
        "seconds": {"opennmt_py": 5.0, "t2t_lite": 35.0},
        "checkpoints": {},
    }
    now[0] = 1010.0
    again.stop("t2t_lite")
    now[0] = 1020.0  # the other side runs on; t2t_lite's total stays
    assert again.total("t2t_lite") == 40.0 and again.total("opennmt_py") == 20.0


def test_a_rerun_charges_a_side_from_its_newest_checkpoint(tmp_path, now):
    clock = resumable.WallClock(str(tmp_path))
    clock.start("opennmt_py")
    now[0] = 100.0
    clock.mark("opennmt_py", [250])
    now[0] = 190.0
    clock.mark("opennmt_py", [250, 500])  # 250 keeps the time it was first seen at
    now[0] = 250.0  # stopped 60 s after its newest checkpoint, which kept nothing of them
    clock.stop("opennmt_py")
    clock.save()
    assert (clock.at("opennmt_py", 250), clock.at("opennmt_py", 500)) == (100.0, 190.0)
    assert clock.at("opennmt_py", 750) is None and clock.total("opennmt_py") == 250.0
    again = resumable.WallClock(str(tmp_path))  # the rerun, from step 500
    assert again.at("opennmt_py", 500) == 190.0 and again.total("opennmt_py") == 250.0
    again.rewind("opennmt_py", 500)
    assert again.total("opennmt_py") == 190.0  # the lost minute is redone, not charged twice
    again.rewind("opennmt_py", 750)  # a checkpoint it never saw: nothing to go by
    assert again.total("opennmt_py") == 190.0
    # Going back to an earlier checkpoint drops the marks of the later ones.
    again.rewind("opennmt_py", 250)
    assert again.total("opennmt_py") == 100.0 and again.at("opennmt_py", 500) is None


def test_a_ledger_of_totals_only_is_read_with_no_checkpoint_times(tmp_path):
    (tmp_path / resumable.WALL_FILE).write_text('{"t2t_lite": 12.5, "opennmt_py": 7.0}')
    clock = resumable.WallClock(str(tmp_path))
    assert clock.total("t2t_lite") == 12.5 and clock.at("t2t_lite", 250) is None
    clock.rewind("t2t_lite", 250)
    assert clock.total("t2t_lite") == 12.5


def test_waiting_notes_the_time_of_each_new_checkpoint_only(tmp_path):
    (tmp_path / "step_1").write_text("")  # from an earlier run: its time is not known here
    writer = "import pathlib, sys, time; time.sleep(0.5); pathlib.Path(sys.argv[1]).write_text('')"
    clock = resumable.WallClock(str(tmp_path))
    job = resumable.start(
        [sys.executable, "-c", writer, str(tmp_path / "step_2")], str(tmp_path / "a.log"), None
    )
    clock.start("a")

    def steps():
        return sorted(int(p.name.split("_")[1]) for p in tmp_path.glob("step_*"))

    resumable.wait({"a": job}, clock, {"a": steps, "b": steps})  # b: not a job, not watched
    assert clock.at("a", 1) is None and clock.at("b", 2) is None
    assert 0.0 <= clock.at("a", 2) <= clock.total("a")
    kept = json.loads((tmp_path / resumable.WALL_FILE).read_text())
    assert kept["checkpoints"] == {"a": {"2": clock.at("a", 2)}}


BENCH = """
import sys, time
sys.path.insert(0, {bench!r})
import resumable
clock = resumable.WallClock({work!r})
jobs = {{}}
for name, child in (("a", SLEEPER), ("b", SLOW_TO_STOP)):
    jobs[name] = resumable.start(
        [sys.executable, "-c", child, {work!r}], {work!r} + "/" + name + ".log", None)
    clock.start(name)
resumable.wait(jobs, clock)
"""
# The sides sleep far longer than any start-up takes (the bench stops them).
SLEEPER = "import time; print('up', flush=True); time.sleep(3600)"
# Takes 3 s to stop after SIGTERM (as t2t-train, which saves a checkpoint first).
SLOW_TO_STOP = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(3), sys.exit(0)))\n"
    "print('up', flush=True); time.sleep(3600)"
)
# How long the bench and its two sides may take to start: no speed is asked,
# only a bound on a hung start (a loaded machine took over a minute).
START_S = 900


def _command_lines() -> list[str]:
    """Every live process's command line (Linux's /proc), its arguments joined by spaces."""
    lines = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                lines.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # not a process, or one that ended meanwhile
            continue
    return lines


def _catches_sigterm(pid: int) -> bool:
    """Whether process pid has its own SIGTERM handler in place (Linux's SigCgt mask)."""
    with open(f"/proc/{pid}/status") as f:
        caught = next(line for line in f if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.slow  # the fast tier's budget on 2 AVX2 cores (docs/testing.md)
def test_a_stopped_bench_stops_both_sides_and_saves_their_time(tmp_path):
    script = f"SLEEPER = {SLEEPER!r}\nSLOW_TO_STOP = {SLOW_TO_STOP!r}\n" + BENCH.format(
        bench=os.path.join(ROOT, "bench"), work=str(tmp_path)
    )
    bench = subprocess.Popen(
        [sys.executable, "-c", script], stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    started = time.time()
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    while not (
        all(p.exists() and "up" in p.read_text() for p in logs) and _catches_sigterm(bench.pid)
    ):
        assert bench.poll() is None, f"the bench ended before both sides were up: {bench.stderr}"
        waited = time.time() - started
        assert waited < START_S, f"both sides were not up and the bench's handler set in {waited} s"
        time.sleep(0.1)
    # Both clocks started before the handler went in; a second more gives each
    # side a ledger entry of at least 1.0 s, whatever the machine's speed.
    time.sleep(1.0)
    bench.send_signal(signal.SIGTERM)
    _, stderr = bench.communicate(timeout=30)
    assert bench.returncode == 1
    assert stderr.strip().splitlines()[-1] == "stopped by signal 15; rerun to continue"
    seconds = json.loads((tmp_path / resumable.WALL_FILE).read_text())["seconds"]
    elapsed = time.time() - started
    assert set(seconds) == {"a", "b"} and all(1.0 <= s <= elapsed for s in seconds.values())
    # Each side's clock stopped at its own end: a's did not wait for b's 3 s.
    assert seconds["b"] - seconds["a"] >= 2.0
    # Neither side outlived the bench: each child's sleep would keep it alive
    # for an hour; both were stopped, so a rerun finds no process of theirs.
    # (Named by this test's work dir: another test may sleep meanwhile.)
    assert not [p for p in _command_lines() if str(tmp_path) in p and "time.sleep(3600)" in p]
