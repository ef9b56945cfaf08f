"""The command-line programs (t2t-datagen, t2t-train, ...): absl flags -> one library call.

Installed as console scripts (setup.py), so an editable install runs the
code as it is now; bin/ holds launchers that run the same modules from a
checkout. Importing this package sets TensorFlow's C++ log level before any
program imports TensorFlow (a TF_CPP_MIN_LOG_LEVEL of the user's own is
kept): warnings are hidden, and on a machine without an NVIDIA driver so are
C++ errors, because TensorFlow's CUDA probe there logs "failed call to
cuInit" as an ERROR although a CPU run lost nothing (every real failure
still reaches the program as an exception and its one-line report).
"""

import os

if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
    _NVIDIA_DRIVER = os.path.exists("/proc/driver/nvidia/version")
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2" if _NVIDIA_DRIVER else "3"
