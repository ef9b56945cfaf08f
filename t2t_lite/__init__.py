"""t2t_lite: the Transformer and the Universal Transformer for TF2 / Keras 3."""

import importlib.abc
import importlib.machinery
import os
import sys

__version__ = "0.1.0"

# The problems/ folder beside this package is installed as t2t_lite.problems
# (setup.py's package_dir). A source checkout on PYTHONPATH, or an editable
# install, finds it through this finder: it maps the one name
# t2t_lite.problems to <root>/problems (its submodules then follow the
# package's own path), and nothing else of the repository root (bench,
# tests, setup) becomes part of the package.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROBLEMS = "t2t_lite.problems"


class _ProblemsFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != _PROBLEMS:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [_ROOT])


if not os.path.isdir(os.path.join(__path__[0], "problems")) and os.path.isfile(
    os.path.join(_ROOT, "problems", "__init__.py")
):
    sys.meta_path.append(_ProblemsFinder())
