"""bin/t2t-train in a process of its own that knows the tests' problems (for
tests that signal a real training process)."""

import os
import runpy
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)

import conftest  # noqa: F401  (the tests' problems)

sys.argv[0] = "t2t-train"
runpy.run_path(os.path.join(os.path.dirname(TESTS), "bin", "t2t-train"), run_name="__main__")
