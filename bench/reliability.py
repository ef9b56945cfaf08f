"""Kill-9 reliability probe: training killed at varied moments, every artefact checked.

Each trial starts `t2t-train` on one run directory, kills it with SIGKILL
after a chosen delay (so kills land during start-up, steps, evaluations and
checkpoint writes), then checks that every artefact in the directory reads
back (experiment.json, metrics.json as strict JSON, every checkpoint restores
into the model) and that no temporary file would be mistaken for a complete
one. At the end training is resumed to the last step and must finish.
Prints one JSON line:

  python bench/reliability.py --kills=12 [--train_steps=60] [--seed=1]
"""

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.dirname(os.path.abspath(__file__))
HPARAMS = "batch_size=64,max_length=8,learning_rate_warmup_steps=10"
PROBLEM = "reliability_identity_small"


def register_problem() -> None:
    """Registers PROBLEM: copy over 4 symbols, lengths 1..6, 400 training examples."""
    from t2t_lite import registry
    from t2t_lite.problems import algorithmic

    if PROBLEM not in registry.PROBLEMS:

        class ReliabilityIdentity(algorithmic.AlgorithmicProblem):
            base = 4
            train_length = 6
            test_length = 12
            splits = {"train": (400, 2), "dev": (40, 1), "test": (20, 1)}

        registry.PROBLEMS.register(PROBLEM)(ReliabilityIdentity)


def train_command(data_dir: str, run_dir: str, steps: int, problem: str) -> list[str]:
    # t2t-train in a fresh process that has registered this probe's problem.
    code = (
        "import sys, runpy; sys.path[:0] = [sys.argv.pop(1), sys.argv.pop(1)]; "
        "import reliability; reliability.register_problem(); sys.argv[0] = 't2t-train'; "
        f"runpy.run_path({os.path.join(ROOT, 'bin', 't2t-train')!r}, run_name='__main__')"
    )
    return [
        sys.executable, "-c", code, ROOT, BENCH,
        f"--problem={problem}", "--model=transformer", "--hparams_set=transformer_test",
        f"--hparams={HPARAMS}", f"--data_dir={data_dir}", f"--output_dir={run_dir}",
        f"--train_steps={steps}", "--local_eval_frequency=5", "--eval_steps=2",
        "--keep_checkpoint_max=3", "--log_step_count_steps=5",
    ]  # fmt: skip


def check_artefacts(run_dir: str) -> list[str]:
    """What in run_dir does not read back (empty if all is well)."""
    import tensorflow as tf

    from t2t_lite import checkpoints
    from t2t_lite import experiment as experiment_lib
    from t2t_lite.training import trainer

    problems = []
    if not os.path.exists(os.path.join(run_dir, experiment_lib.EXPERIMENT_FILE)):
        return problems  # killed before anything was written
    try:
        exp = experiment_lib.Experiment.load(run_dir)
    except ValueError as err:
        return [f"experiment.json: {err}"]
    metrics = os.path.join(run_dir, trainer.METRICS_FILE)
    if os.path.exists(metrics):
        try:
            with open(metrics, encoding="utf-8") as f:
                json.loads(f.read(), parse_constant=lambda c: 1 / 0)
        except (ValueError, ZeroDivisionError) as err:
            problems.append(f"metrics.json: {err}")
    problem = exp.build_problem()
    for path in checkpoints.by_step(run_dir):
        model = exp.build_model(problem.vocab_size)
        try:
            checkpoints.restore_model(model, path)
            if not checkpoints.all_finite(model.weights):
                problems.append(f"{path}: non-finite weights")
        except (tf.errors.OpError, ValueError, AssertionError) as err:
            problems.append(f"{path}: {str(err).splitlines()[0]}")
    return problems


def trial(data_dir: str, run_dir: str, steps: int, delay: float, problem: str) -> dict:
    """Starts training, SIGKILLs it after `delay` seconds (if still running), checks."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen(
        train_command(data_dir, run_dir, steps, problem),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        _, stderr = process.communicate(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        _, stderr = process.communicate()
        killed = True
    failed = not killed and process.returncode != 0
    return {
        "killed": killed,
        "failed_run": stderr.decode(errors="replace")[-2000:] if failed else "",
        "unreadable": check_artefacts(run_dir),
    }


def probe(kills: int, steps: int, seed: int, problem: str = PROBLEM) -> dict:
    """kills trials at seeded delays on one run dir, then a resume to the end -> figures."""
    register_problem()  # check_artefacts rebuilds the problem here too
    rng = random.Random(seed)
    root = tempfile.mkdtemp(prefix="t2t-reliability-")
    data_dir, run_dir = os.path.join(root, "data"), os.path.join(root, "run")
    delays = [rng.uniform(3.0, 14.0) for _ in range(kills)]
    results = [trial(data_dir, run_dir, steps, delay, problem) for delay in delays]
    final = trial(data_dir, run_dir, steps, 600.0, problem)  # runs to the end
    with open(os.path.join(run_dir, "metrics.json"), encoding="utf-8") as f:
        finished = json.load(f)["step"] == steps
    return {
        "kills_tried": sum(r["killed"] for r in results),
        "trials": len(results),
        "corrupt_artefacts": sum(len(r["unreadable"]) for r in results + [final]),
        "failed_resumes": sum(bool(r["failed_run"]) for r in results + [final])
        + (0 if finished else 1),
        "details": [r["unreadable"] or r["failed_run"] for r in results + [final] if
                    r["unreadable"] or r["failed_run"]],
    }  # fmt: skip


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--train_steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sys.path[:0] = [ROOT]

    start = time.time()
    figures = probe(args.kills, args.train_steps, args.seed)
    figures.update(
        benchmark="kill9_training",
        seconds=round(time.time() - start, 1),
        machine=f"{os.cpu_count()} cores, {os.uname().machine}",
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
