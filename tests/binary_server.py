"""Runs the bin/ programs for the tests in forked children of one pre-imported server.

Starting a program in a new Python costs an import of TensorFlow (5 s or
more on 2 cores) before the first line of its own work. The server imports
TensorFlow, the package and the tests' problems once, runs no TensorFlow op
itself, and forks a child per request: the child is a separate process with
its own exit status, file descriptors 1 and 2 written to files, and the
program run as __main__ (runpy), as its shebang would. What a test asserts
of a program (one error line, status 1, no traceback, files on disk) is
therefore the program's own behaviour. Run as a script, this module is the
server: one JSON request per line on stdin, one JSON answer per line on stdout.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")


def _child(request: dict) -> None:
    """In the forked child: the program with its output in files; never returns."""
    import runpy
    import traceback

    code = 1
    try:
        os.chdir(request["cwd"])
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        sys.stdout = sys.__stdout__  # the server's own prints went to stderr
        sys.stdin = open(os.devnull)  # noqa: SIM115 (the child ends with os._exit)
        sys.argv = [request["name"], *request["args"]]
        try:
            runpy.run_path(os.path.join(ROOT, "bin", request["name"]), run_name="__main__")
            code = 0
        except SystemExit as done:
            if done.code is None or isinstance(done.code, int):
                code = done.code or 0
            else:
                print(done.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001  (printed as Python prints an uncaught one)
            traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve() -> None:
    import conftest  # noqa: F401  (the tests' problems)
    import tensorflow  # noqa: F401  (imported once, before any fork; no op is run here)

    import t2t_lite.decoding.runner
    import t2t_lite.export.exporter
    import t2t_lite.reproduction.comparison
    import t2t_lite.training.trainer
    import t2t_lite.visualization.runner  # noqa: F401

    answers = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the answer stream
    print(json.dumps({"ready": True}), file=answers, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        deadline = time.monotonic() + request["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.02)
        code = os.waitstatus_to_exitcode(status)
        print(json.dumps({"returncode": code}), file=answers, flush=True)


class Client:
    """One server per test process, started on first use; `run` is thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._server: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        env["PYTHONPATH"] = os.pathsep.join([ROOT, TESTS])
        server = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        if json.loads(server.stdout.readline() or "{}").get("ready") is not True:
            raise RuntimeError("the binary server did not start")
        return server

    def run(self, name: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """bin/<name> with args -> its exit status, stdout and stderr (text)."""
        with self._lock, tempfile.TemporaryDirectory(prefix="t2t-bin-") as folder:
            if self._server is None or self._server.poll() is not None:
                self._server = self._start()
            out, err = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
            request = {
                "name": name, "args": list(args), "cwd": os.getcwd(),
                "stdout": out, "stderr": err, "timeout": timeout,
            }  # fmt: skip
            self._server.stdin.write(json.dumps(request) + "\n")
            self._server.stdin.flush()
            answer = json.loads(self._server.stdout.readline())
            with open(out, encoding="utf-8", errors="replace") as f:
                stdout = f.read()
            with open(err, encoding="utf-8", errors="replace") as f:
                stderr = f.read()
        return subprocess.CompletedProcess(
            [name, *args], answer["returncode"], stdout=stdout, stderr=stderr
        )

    def close(self) -> None:
        if self._server is not None and self._server.poll() is None:
            self._server.stdin.close()
            self._server.wait(timeout=30)


if __name__ == "__main__":
    sys.path[:0] = [ROOT, TESTS]
    _serve()
