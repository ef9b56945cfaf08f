"""t2t_lite: the Transformer and the Universal Transformer for TF2 / Keras 3."""

import os

__version__ = "0.1.0"

# The problems/ folder beside this package is installed as t2t_lite.problems
# (setup.py's package_dir). A source checkout on PYTHONPATH, or an editable
# install, finds it here: the repository root joins this package's path, so
# t2t_lite.problems is <root>/problems.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(os.path.join(__path__[0], "problems")) and os.path.isfile(
    os.path.join(_ROOT, "problems", "__init__.py")
):
    __path__.append(_ROOT)
